package evpack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/evpack/evpack/evidence"
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
	case strings.TrimSpace(reason) == "" || len(reason) > MaxPurgeReason || !utf8.ValidString(reason) ||
		strings.ContainsFunc(reason, unicode.IsControl):
		return PurgeReport{}, fmt.Errorf("%w: purge reason %q: want 1 to %d bytes of UTF-8 text without control characters", state.ErrBadRequest, reason, MaxPurgeReason)
	case len(ids) == 0:
		return PurgeReport{}, fmt.Errorf("%w: purge names no chunk", state.ErrBadRequest)
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
			return PurgeReport{}, fmt.Errorf("%w: purge: chunk %q is not committed", state.ErrBadRequest, id)
		}
		if p, ok := st.Purged[id]; ok {
			return PurgeReport{}, fmt.Errorf("%w: purge: chunk %q was purged at generation %d", state.ErrBadRequest, id, p.Gen)
		}
	}
	gen := st.Gen + 1
	at := time.Now().UTC().Truncate(time.Second)
	next := st.Purge(gen, at, ids, reason, e.lex)
	var dense *retrieve.Dense
	var graph *retrieve.Graph
	if st.Dense != nil { // a corpus-free embedder's vectors: the purged rows lose theirs
		dense = withoutVectors(st.Dense, ids)
		if graph, err = state.BuildGraph(ctx, dense, e.graph); err != nil {
			return PurgeReport{}, err
		}
		next.SetDense(dense, graph)
	}
	rep := PurgeReport{Purged: ids, Generation: gen}
	var c *storage.Commit
	var m *storage.Manifest
	if e.store != nil {
		if c, m, rep.Rewritten, err = e.writePurge(next, ids, dense, graph); err != nil {
			return PurgeReport{}, err
		}
	}
	if err := e.publishPurge(ctx, st, next, ids, c, m); err != nil {
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

// publishPurge deletes the lexical documents of ids, publishes manifest m
// of commit c (nil for a memory index) and makes next the state; on any
// error it puts back what it changed.
func (e *Engine) publishPurge(ctx context.Context, st, next *state.State, ids []string, c *storage.Commit, m *storage.Manifest) error {
	gen := next.Gen
	e.mu.Lock()
	defer e.mu.Unlock()
	fail := func(cause error) error {
		// Put the documents back as st has them; if bleve cannot take them,
		// the commit's record stays for the next Open to finish the job.
		docs := make([]retrieve.Doc, len(ids))
		for i, id := range ids {
			docs[i], _ = st.LexDoc(id)
		}
		if err := e.lex.Index(context.WithoutCancel(ctx), docs); err != nil {
			e.broken = fmt.Errorf("%w: purge of generation %d failed (%v) and could not be rolled back: %v", ErrBroken, gen, cause, err)
			return errors.Join(cause, e.broken)
		}
		if c != nil {
			cause = errors.Join(cause, c.Abort())
		}
		return cause
	}
	switch {
	case e.closed:
		return errors.Join(ErrClosed, abort(c))
	case e.broken != nil:
		return errors.Join(e.broken, abort(c))
	}
	gone := make([]*evidence.Chunk, len(ids))
	for i, id := range ids {
		gone[i] = st.Chunks[id]
	}
	if err := e.lex.Delete(ctx, gone); err != nil {
		return fail(err)
	}
	if c != nil {
		if err := c.Publish(m); err != nil {
			return fail(fmt.Errorf("evpack: purge: %w", err))
		}
	}
	e.st = next
	e.views.clear() // views of earlier generations held the purged rows
	return nil
}

func abort(c *storage.Commit) error {
	if c == nil {
		return nil
	}
	return c.Abort()
}

// withoutVectors returns d with the rows of ids holding no vector.
func withoutVectors(d *retrieve.Dense, ids []string) *retrieve.Dense {
	all := d.IDs()
	vecs := make([][]int8, len(all))
	for i, id := range all {
		if _, gone := slices.BinarySearch(ids, id); !gone {
			vecs[i], _ = d.Vector(id)
		}
	}
	return retrieve.NewDense(all, vecs)
}

// writePurge starts the commit of next's generation, a purge of ids: the
// batch that records it, each batch file that held a purged chunk
// rewritten without its text, and a corpus-free embedder's vectors and
// graph. It returns the commit, the manifest that will publish it and the
// files rewritten.
func (e *Engine) writePurge(next *state.State, ids []string, dense *retrieve.Dense, graph *retrieve.Graph) (*storage.Commit, *storage.Manifest, []string, error) {
	gen := next.Gen
	prev := e.store.Manifest()
	m := prev.Clone()
	m.Generation, m.Purged = gen, prev.Purged+int64(len(ids))
	at := next.Commits[gen-1].Format(time.RFC3339)
	b := storage.Batch{Generation: gen, File: storage.BatchName(gen), Purges: len(ids), CommittedAt: at}
	var purges []storage.Purge
	byBatch := map[int64][]string{}
	for _, id := range ids {
		purges = append(purges, storage.Purge{ChunkID: id, ContentHash: next.Chunks[id].ContentHash, Reason: next.Purged[id].Reason})
		g := next.Committed[id]
		byBatch[g] = append(byBatch[g], id)
	}
	hdr := storage.BatchHeader{Generation: gen, CommittedAt: at, Prev: prev.Batches[len(prev.Batches)-1].ChainSum()}
	raw, err := storage.EncodeBatch(hdr, storage.Contents{Purges: purges})
	if err != nil {
		return nil, nil, nil, err
	}
	type rewrite struct {
		i   int
		raw []byte
	}
	var rewrites []rewrite
	writes := []string{storage.ChunksDir + "/" + b.File}
	var obsolete, rewritten []string
	for _, g := range slices.Sorted(maps.Keys(byBatch)) {
		old := prev.Batches[g-1]
		cont, err := e.store.ReadBatch(old)
		if err != nil {
			return nil, nil, nil, err
		}
		if cont.Redacted == nil {
			cont.Redacted = map[string]storage.Redaction{}
		}
		for i, ch := range cont.Chunks {
			if _, purged := slices.BinarySearch(byBatch[g], ch.ID); purged {
				cont.Chunks[i] = next.Chunks[ch.ID] // the text-less copy
				cont.Redacted[ch.ID] = next.Purged[ch.ID].Redaction
			}
		}
		h := storage.BatchHeader{Generation: g, CommittedAt: old.CommittedAt}
		if g > 1 {
			h.Prev = prev.Batches[g-2].ChainSum()
		}
		raw, lines, err := storage.EncodeBatchLines(h, cont)
		if err != nil {
			return nil, nil, nil, err
		}
		next.SetLines(cont.Chunks, lines) // the rewrite moved every line after the first purged one
		nb := old
		nb.File, nb.Chain = storage.RedactedName(g, gen), old.ChainSum()
		// The analysis file holds the purged texts' terms: it goes with
		// them, and Open analyzes the rewritten batch instead.
		nb.Analysis, nb.AnalysisSum = "", ""
		m.Batches[g-1] = nb
		rewrites = append(rewrites, rewrite{i: int(g - 1), raw: raw})
		writes = append(writes, storage.ChunksDir+"/"+nb.File)
		obsolete = append(obsolete, storage.ChunksDir+"/"+old.File)
		if old.Analysis != "" {
			obsolete = append(obsolete, storage.ChunksDir+"/"+old.Analysis)
		}
		rewritten = append(rewritten, storage.ChunksDir+"/"+nb.File)
	}
	if dense != nil && prev.Dense != nil {
		m.Dense = &storage.Dense{File: fmt.Sprintf("dense-%08d.bin", gen), Embedder: prev.Dense.Embedder}
		writes = append(writes, m.Dense.File)
		obsolete = append(obsolete, prev.Dense.File)
		if graph != nil {
			m.Dense.Graph, m.Dense.GraphBuild = fmt.Sprintf("graph-%08d.bin", gen), state.GraphBuild(*e.graph)
			writes = append(writes, m.Dense.Graph)
		}
		if prev.Dense.Graph != "" {
			obsolete = append(obsolete, prev.Dense.Graph)
		}
	}
	ckpt, err := e.checkpointOf(next)
	if err != nil {
		return nil, nil, nil, err
	}
	m.Checkpoint = storage.CheckpointName(gen)
	writes = append(writes, m.Checkpoint)
	if prev.Checkpoint != "" {
		obsolete = append(obsolete, prev.Checkpoint)
	}
	c, err := e.store.Begin(gen, writes, obsolete)
	if err != nil {
		return nil, nil, nil, err
	}
	failed := func(err error) (*storage.Commit, *storage.Manifest, []string, error) {
		return nil, nil, nil, errors.Join(fmt.Errorf("evpack: purge: %w", err), c.Abort())
	}
	if b.Sum, err = c.Write(writes[0], raw); err != nil {
		return failed(err)
	}
	if err = c.WriteSealed(m.Checkpoint, ckpt...); err != nil {
		return failed(err)
	}
	if m.CheckpointSum, err = state.CheckpointSum(ckpt.Head()); err != nil { // its head's: Open reads no more
		return failed(err)
	}
	for k, r := range rewrites {
		if m.Batches[r.i].Sum, err = c.Write(writes[1+k], r.raw); err != nil {
			return failed(err)
		}
	}
	if m.Dense != nil && dense != nil && prev.Dense != nil {
		if m.Dense.Sum, err = c.Write(m.Dense.File, dense.Encode()); err != nil {
			return failed(err)
		}
		if m.Dense.Graph != "" {
			if m.Dense.GraphSum, err = c.Write(m.Dense.Graph, graph.Encode()); err != nil {
				return failed(err)
			}
		}
	}
	m.Batches = append(m.Batches, b)
	return c, m, rewritten, nil
}

// clear drops every view: a purge changed what earlier generations embed.
func (c *viewCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.views, c.order = map[string]*viewEntry{}, nil
}

// restoreMissing indexes again every chunk of st that is neither purged nor
// in lex: what an unfinished purge had deleted.
func restoreMissing(ctx context.Context, lex *retrieve.Lexical, st *state.State) error {
	n, err := lex.DocCount()
	if err != nil || n == uint64(len(st.Chunks)-len(st.Purged)) {
		return err
	}
	have := map[string]bool{}
	if err := lex.Docs(ctx, func(d retrieve.StoredDoc) error { have[d.ID] = true; return nil }); err != nil {
		return err
	}
	var docs []retrieve.Doc
	for _, id := range evidence.SortedKeys(st.Chunks) {
		if _, purged := st.Purged[id]; !purged && !have[id] {
			d, err := st.LexDoc(id)
			if err != nil {
				return err
			}
			docs = append(docs, d)
		}
	}
	return lex.Index(ctx, docs)
}
