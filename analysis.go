package evpack

import (
	"fmt"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/retrieve"
)

// Each commit stores what the analyzers made of its chunks beside its batch
// (storage.Analysis), and Open reads that instead of analyzing every stored
// text again. The file is derived data: it is used only when it names the
// batch it was made from and the analyzers this engine runs (their
// identity), and Check compares it with a fresh analysis. A batch without
// one (a purge's rewrite, or an index made before analysis files) is
// analyzed as before.

// analysisIdentity names the analyzers whose output an analysis file holds:
// the lexical index's analyzer and the reranker's term splitter.
func analysisIdentity(lex *retrieve.Lexical) string {
	return "lexical=" + lex.Analyzer() + " rerank=" + terms.Version
}

// analysisOf returns the analysis file of a batch with checksum sum holding
// the chunks add, analyzed as an.
func (e *Engine) analysisOf(sum string, add []*evidence.Chunk, an []analyzed) storage.Analysis {
	a := storage.Analysis{Identity: analysisIdentity(e.lex), Batch: sum, Chunks: make([]storage.Analyzed, len(add))}
	for i, c := range add {
		a.Chunks[i] = storage.Analyzed{ID: c.ID, Tokens: an[i].tokens, Lex: an[i].lex, Rerank: an[i].rr}
	}
	return a
}

// analyzeBatch returns the analysis of the chunks of batch b: from its
// analysis file when it has one made by these analyzers, else by analyzing
// each text. The dense features are computed either way (an embedder is
// not one of the file's analyzers).
func analyzeBatch(d *storage.Dir, b storage.Batch, chunks []*evidence.Chunk, lex *retrieve.Lexical, emb retrieve.Embedder) ([]analyzed, error) {
	out := make([]analyzed, len(chunks))
	a, ok, err := d.ReadAnalysisTable(b)
	if err != nil {
		return nil, err
	}
	if !ok || a.Identity != analysisIdentity(lex) {
		var sp terms.Splitter
		for i, c := range chunks {
			out[i] = analyze(lex, emb, &sp, c.Text)
		}
		return out, nil
	}
	tab := newTermTable(a.Terms)
	for i, c := range chunks {
		ac := a.Chunks[i]
		if ac.ID != c.ID {
			return nil, fmt.Errorf("%w: %s: entry %d is chunk %q, the batch's is %q", ErrCorrupt, b.Analysis, i, ac.ID, c.ID)
		}
		out[i] = analyzed{tokens: ac.Tokens, tab: tab, lexIdx: ac.Lex, rrIdx: ac.Rerank}
		if emb != nil {
			out[i].feats = analyzeChunk(emb, c.Text)
		}
	}
	return out, nil
}
