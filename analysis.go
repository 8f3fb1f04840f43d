package evpack

import (
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// Each commit stores what the analyzers made of its chunks beside its batch
// (storage.Analysis), and Open reads that instead of analyzing every stored
// text again. The file is derived data: it is used only when it names the
// batch it was made from and the analyzers this engine runs (their
// identity), and Check compares it with a fresh analysis. A batch without
// one (a purge's rewrite, or an index made before analysis files) is
// Analyzed as before.

// analysisOf returns the analysis file of a batch with checksum sum holding
// the chunks add, analyzed as an.
func (e *Engine) analysisOf(sum string, add []*evidence.Chunk, an []state.Analyzed) storage.Analysis {
	a := storage.Analysis{Identity: state.AnalysisIdentity(e.lex), Batch: sum, Chunks: make([]storage.Analyzed, len(add))}
	for i, c := range add {
		a.Chunks[i] = storage.Analyzed{ID: c.ID, Tokens: an[i].Tokens, Lex: an[i].Lex, Rerank: an[i].Rerank}
	}
	return a
}
