package evpack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/commit"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// A purge is the legal deletion of chunks' text: the one change that is
// not a fact, because the text itself must go. It is explicit (Purge, with a
// reason), recorded as a generation of its own, and leaves everything else
// of the history standing:
//
//   - the text leaves the lexical index (the chunks' documents are
//     deleted), the dense index (their vectors) and the batch files that
//     held it: each is rewritten without it, under a new name, and the
//     manifest keeps the checksum the file had when committed, which the
//     next generation's header names and the purge record repeats (so the
//     hash chain still shows which generation was redacted, and by whom);
//   - the chunks' IDs, content hashes and every other field stay, with the
//     counts the statistics took from the text (tokens, reranker terms), so
//     BM25's document count and lengths are those of every generation as
//     before; only the purged chunks' own terms no longer count;
//   - a purged chunk is never eligible again, at any generation; verifying
//     a pack that cites it says "purged", never "differs".

// MaxPurgeReason bounds a purge's reason (bytes).
const MaxPurgeReason = 1024

// PurgeReport says what a Purge did.
type PurgeReport struct {
	Purged     []string // the chunks whose text was deleted, sorted
	Rewritten  []string // batch files rewritten without it (relative to the index directory)
	Generation int64    // the generation that records the purge
}

// Purge deletes the text of the chunks ids for good, for reason (a legal
// deletion: a court order, an erasure request). It commits one generation
// that records the purge; see the comment at the top of purge.go for what
// is kept. An ID that is not committed, or already purged, and a reason that
// is empty, not UTF-8, holds a control character or is longer than
// MaxPurgeReason is ErrBadRequest, and nothing is purged.
func (e *Engine) Purge(ctx context.Context, ids []string, reason string) (PurgeReport, error) {
	switch {
	case strings.TrimSpace(reason) == "" || len(reason) > MaxPurgeReason || !evidence.Plain(reason):
		return PurgeReport{}, fmt.Errorf("%w: purge reason %q: want 1 to %d bytes of UTF-8 text without control characters", ErrBadRequest, reason, MaxPurgeReason)
	case len(ids) == 0:
		return PurgeReport{}, fmt.Errorf("%w: purge names no chunk", ErrBadRequest)
	}
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	if e.readOnly != nil {
		return PurgeReport{}, e.readOnly
	}
	st, err := e.writable()
	if err != nil {
		return PurgeReport{}, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for _, id := range ids {
		if _, ok := st.Chunks[id]; !ok {
			return PurgeReport{}, fmt.Errorf("%w: purge: chunk %q is not committed", ErrBadRequest, id)
		}
		if p, ok := st.Purged[id]; ok {
			return PurgeReport{}, fmt.Errorf("%w: purge: chunk %q was purged at generation %d", ErrBadRequest, id, p.Gen)
		}
	}
	purges := make([]storage.Purge, len(ids))
	for i, id := range ids {
		purges[i] = storage.Purge{ChunkID: id, ContentHash: st.Chunks[id].ContentHash, Reason: reason}
	}
	en, err := e.prepare(st, storage.Contents{Purges: purges})
	if err != nil {
		return PurgeReport{}, err
	}
	gen := en.gen
	rep := PurgeReport{Purged: ids, Generation: gen}
	if rep.Rewritten, err = e.applyPurge(ctx, st, en, ids, reason); err != nil {
		return PurgeReport{}, err
	}
	// Deleted documents stay in bleve's segments (their terms in its
	// dictionaries) until the segments are merged: merge now, so the text
	// leaves the lexical index's files too.
	if e.store == nil {
		return rep, nil // a memory index has no files (see Merge)
	}
	if err := e.lex.Merge(ctx); err != nil {
		return rep, fmt.Errorf("evpack: purge committed at generation %d, but merging the lexical index failed (run Merge again): %w", gen, err)
	}
	return rep, nil
}

// applyPurge commits en, a purge of ids (sorted, committed, not purged)
// for reason, as the generation after st, the latest state, and returns
// the batch files it rewrote. The caller holds ingestMu.
func (e *Engine) applyPurge(ctx context.Context, st *state.State, en entry, ids []string, reason string) ([]string, error) {
	known, err := st.RedactedAlready(e.store, en.gen, ids)
	if err != nil {
		return nil, err
	}
	next := st.Purge(en.gen, en.at, ids, reason, e.lex, known)
	var dense *retrieve.Dense
	var graph *retrieve.Graph
	if st.Dense != nil { // a corpus-free embedder's vectors: the purged rows lose theirs
		dense = st.Dense.Without(ids)
		if graph, err = state.BuildGraph(ctx, dense, e.graph); err != nil {
			return nil, err
		}
		next.SetDense(dense, graph)
	}
	var c *commit.Commit
	var rewritten []string
	if e.store != nil {
		f, err := e.purgeFiles(next, en, ids, dense, graph)
		if err != nil {
			return nil, fmt.Errorf("evpack: purge: %w", err)
		}
		if en.lead {
			redactions := make([]evlog.Redaction, len(f.Rewrites))
			for i, r := range f.Rewrites {
				redactions[i] = evlog.Redaction{Generation: r.Batch.Generation, Body: r.Body}
			}
			if err := e.appendEntry(ctx, st, en, redactions); err != nil {
				return nil, err
			}
		}
		if c, err = commit.Write(e.store, f); err != nil {
			return nil, e.appliedOrBroken(en, fmt.Errorf("evpack: purge: %w", err))
		}
		for _, r := range f.Rewrites {
			rewritten = append(rewritten, storage.ChunksDir+"/"+r.Batch.File)
		}
	}
	gone := make([]*evidence.Chunk, len(ids))
	for i, id := range ids {
		gone[i] = st.Chunks[id]
	}
	err = e.publish(ctx, c, next, nil, func() error { return audit.LexicalErr(e.lex.Delete(ctx, gone)) }, func() error {
		// Put the documents back as st has them.
		docs := make([]retrieve.Doc, len(ids))
		for i, id := range ids {
			docs[i], _ = st.LexDoc(id)
		}
		return e.lex.Restore(context.WithoutCancel(ctx), docs)
	})
	if err != nil {
		return nil, e.appliedOrBroken(en, err)
	}
	e.views.Clear() // views of earlier generations held the purged rows
	e.rebase(next)
	return rewritten, nil
}

// purgeFiles returns what next's generation, a purge of ids, writes: the
// batch that records it, each batch file that held a purged chunk
// rewritten without its text, next's checkpoint, and a corpus-free
// embedder's vectors and graph.
func (e *Engine) purgeFiles(next *state.State, en entry, ids []string, dense *retrieve.Dense, graph *retrieve.Graph) (commit.Files, error) {
	gen := next.Gen
	prev := e.store.Manifest()
	at := next.Commits[gen-1]
	f := commit.Files{Batch: storage.Batch{Generation: gen, File: storage.BatchName(gen), Purges: len(ids), CommittedAt: at.Format(time.RFC3339)},
		AddPurged: int64(len(ids))}
	f.Body = en.body
	redacts, rewrites, err := next.Rewrites(e.store, ids)
	if err != nil {
		return f, err
	}
	f.Redacts = redacts
	for _, r := range rewrites {
		f.Rewrites = append(f.Rewrites, commit.Rewrite{Batch: r.Batch, Body: r.Body})
	}
	if dense != nil && prev.Dense != nil {
		f.DenseMode, f.Dense, f.Graph, f.Embedder = commit.DenseReplace, dense, graph, prev.Dense.Embedder
		if graph != nil {
			f.GraphBuild = state.GraphBuild(*e.graph)
		}
	}
	f.Checkpoint, err = state.Checkpoint(next, e.lex, nil)
	return f, err
}
