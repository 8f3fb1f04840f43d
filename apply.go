package evpack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/commit"
	"github.com/evpack/evpack/internal/denseleg"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/retrieve"
)

// An index changes one way: a log entry (a sealed batch: its generation,
// commit time, link to the generation before, and its chunks, facts or
// purges) is prepared, then applied. Ingest and Purge prepare entries from
// what a caller hands them; applyEntry takes one a writer already sealed
// (a replica's path, and the test that rebuilds an index from another's
// entries). Applying the same entries in order gives the same MANIFEST,
// batch files and checkpoint, byte for byte.

// entry is one generation on its way to being applied: its contents, its
// commit time, and (on disk) the sealed batch and where each chunk's line
// lies in it.
type entry struct {
	gen   int64
	at    time.Time
	cont  storage.Contents
	body  []byte // nil for an index in memory
	lines []storage.Span
	// lead says this engine prepared the entry: when it leads a log, the
	// entry is appended there before it is applied (a replica's entries
	// came from the log). clamped says its commit time was raised to the
	// last commit's (this machine's clock was behind).
	lead, clamped bool
	// file and chain, for a batch a later purge rewrote, are its file name
	// and its checksum as committed ("": a batch as committed).
	file, chain string
	// prev is the checksum the batch's header links to (prepare's).
	prev string
}

// prepare seals cont as the generation after st's, committed now: UTC whole
// seconds, never before st's last commit (a clock set back is clamped).
func (e *Engine) prepare(st *state.State, cont storage.Contents) (entry, error) {
	var last evlog.Head
	if n := len(st.Commits); n > 0 {
		last.CommittedAt = st.Commits[n-1]
	}
	at, clamped := evlog.CommitTime(last, e.now())
	en := entry{gen: st.Gen + 1, at: at, cont: cont, lead: true, clamped: clamped}
	if e.store == nil {
		return en, nil
	}
	hdr := storage.BatchHeader{Generation: en.gen, CommittedAt: at.Format(time.RFC3339), Prev: e.store.Manifest().ChainHead()}
	en.prev = hdr.Prev
	var err error
	en.body, en.lines, err = storage.EncodeBatchLines(hdr, cont)
	return en, err
}

// applyEntry applies body, a batch another index of the same options
// sealed, as the next generation: the entry is checked against this
// index's head (generation and chain) before anything is written. sum is
// the entry's checksum as committed: the body's own, or, for a body a
// later purge rewrote (the log hands out the rewritten one), the original
// body's, which the next generation links to.
func (e *Engine) applyEntry(ctx context.Context, body []byte, sum string) error {
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	if e.readOnly != nil {
		return e.readOnly
	}
	if e.store == nil {
		return fmt.Errorf("%w: an index in memory keeps no log to apply entries to", ErrBadOptions)
	}
	cur, err := e.snapshot()
	if err != nil {
		return err
	}
	name := "entry " + storage.BatchName(cur.Gen+1)
	hdr, cont, err := storage.DecodeBatch(name, body)
	if err != nil {
		return err
	}
	st := cur // a commit of chunks and facts extends the state as it is (state.State.Extend)
	if len(cont.Purges) > 0 {
		st, err = e.writable() // a purge needs every chunk in memory
	}
	if err != nil {
		return err
	}
	chain := e.store.Manifest().ChainHead()
	at, terr := time.Parse(time.RFC3339, hdr.CommittedAt)
	switch {
	case hdr.Generation != st.Gen+1:
		return fmt.Errorf("%w: %s is generation %d, the index is at %d", evlog.ErrGap, name, hdr.Generation, st.Gen)
	case hdr.Prev != chain:
		return fmt.Errorf("%w: %w: %s names prev %q, the index's head is %q", ErrCorrupt, evlog.ErrChain, name, hdr.Prev, chain)
	case terr != nil:
		return fmt.Errorf("%w: %s: commit time: %w", ErrCorrupt, name, terr)
	}
	en := entry{gen: hdr.Generation, at: at.UTC(), cont: cont, body: body, lines: cont.Lines}
	if len(cont.Redacted) == 0 && sum != evidence.Sum(body) { // whatever the log says of a redaction
		return fmt.Errorf("%w: %s does not hash to its sum %s as committed", ErrCorrupt, name, sum)
	}
	if len(cont.Redacted) > 0 {
		// Rewritten by a purge this index has yet to apply: stored as the
		// purge left it on the writer (its name, the original checksum as
		// its link, no analysis file), its chunks' counts those the purge
		// recorded; the purge then finds it already rewritten.
		var by int64
		for _, r := range cont.Redacted {
			by = max(by, r.Generation)
		}
		if by <= hdr.Generation || sum == evidence.Sum(body) {
			return fmt.Errorf("%w: %s: redacted by generation %d, with checksum %s as committed", ErrCorrupt, name, by, sum)
		}
		en.file, en.chain = storage.RedactedName(hdr.Generation, by), sum
	}
	if len(cont.Purges) == 0 {
		return e.apply(ctx, st, en)
	}
	ids := make([]string, len(cont.Purges))
	for i, p := range cont.Purges {
		c, ok := st.Chunks[p.ChunkID]
		switch {
		case !ok || c.ContentHash != p.ContentHash:
			return fmt.Errorf("%w: %s purges chunk %q, which this index does not hold as %s", ErrCorrupt, name, p.ChunkID, p.ContentHash)
		case st.Purged[p.ChunkID].Gen > 0:
			return fmt.Errorf("%w: %s purges chunk %q again", ErrCorrupt, name, p.ChunkID)
		case p.Reason != cont.Purges[0].Reason || i > 0 && ids[i-1] >= p.ChunkID:
			return fmt.Errorf("%w: %s: a purge is of sorted, distinct chunks, for one reason", ErrCorrupt, name)
		}
		ids[i] = p.ChunkID
	}
	_, err = e.applyPurge(ctx, st, en, ids, cont.Purges[0].Reason)
	return err
}

// apply commits en's chunks and facts as the generation after st, the
// latest state: analysis, a corpus-free embedder's vectors and graph, the
// next state, then the commit protocol. The caller holds ingestMu.
func (e *Engine) apply(ctx context.Context, st *state.State, en entry) error {
	add, facts := en.cont.Chunks, en.cont.Facts
	defer e.ahead.Committing()() // the checkpoint's writer gives way to it
	if err := st.HoldsFactsOf(en.gen, add, facts); err != nil {
		return err
	}
	// The partitions it writes, opened beside what follows (Lexical.Ready),
	// waited for on every path: Close must not find them opening.
	ready := e.lex.Ready(st.WrittenChunks(add, facts))
	defer ready()
	an := make([]state.Analyzed, len(add))
	var total int64
	var sp terms.Splitter
	for i, ch := range add {
		an[i] = state.Analyze(e.lex, e.emb, &sp, ch.Text)
		if r, ok := en.cont.Redacted[ch.ID]; ok { // its text is gone: the counts it gave
			an[i].Tokens, an[i].Redacted = r.Tokens, &r
		}
		total += int64(an[i].Tokens)
	}
	// Embed before taking the write lock: a model may be slow, and only
	// ingest (serialized by ingestMu) ever changes st, so reading it here
	// races with nothing. Only a corpus-free embedder's vectors are kept
	// with the state (see internal/denseleg); facts alone leave them as
	// they are.
	var dense *retrieve.Dense
	var graph *retrieve.Graph
	if e.emb != nil && len(add) > 0 {
		addFeats := make([][]int32, len(add))
		for i := range add {
			addFeats[i] = an[i].Feats
		}
		if state.CorpusFree(e.emb) {
			var err error
			if dense, err = st.BuildDense(ctx, e.emb, add, addFeats); err != nil {
				return err
			}
			if graph, err = state.BuildGraph(ctx, dense, e.graph); err != nil {
				return err
			}
		} else if err := denseleg.CheckEmbeds(ctx, e.emb, add, addFeats); err != nil {
			return err
		}
	}
	next, err := st.Extend(en.gen, en.at, add, an, facts)
	if err != nil {
		return err
	}
	if dense != nil {
		next.SetDense(dense, graph)
	}
	if en.lead {
		if err := e.appendEntry(ctx, st, en, nil); err != nil {
			return err
		}
	}
	err = e.commit(ctx, st, next, batchWrite{add: add, an: an, facts: facts, total: total, dense: dense, graph: graph,
		body: en.body, lines: en.lines, file: en.file, chain: en.chain, ready: ready})
	return e.appliedOrBroken(en, err)
}

// appliedOrBroken passes err on; when en was appended to the log e leads
// and could not be applied, the log is ahead of e, which then refuses work
// (ErrBroken) until it is reopened and follows the log.
func (e *Engine) appliedOrBroken(en entry, err error) error {
	if err == nil || !en.lead || e.writer == nil {
		return err
	}
	return e.stop(err, fmt.Errorf("%w: generation %d is in the log but was not applied here (%v); reopen the index and follow the log", ErrBroken, en.gen, err))
}

// stop makes e refuse further work (the first reason, why, wins) and
// returns err with it.
func (e *Engine) stop(err, why error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.broken = cmp.Or(e.broken, why)
	e.advance() // a waiter for a generation has none to wait for
	return errors.Join(err, e.broken)
}

// advance wakes the requests waiting for a generation (awaitGeneration) to
// look again: e moved on, or stopped. The caller holds mu.
func (e *Engine) advance() { close(e.advanced); e.advanced = make(chan struct{}) }

// batchWrite is what one commit adds: its chunks (analyzed as an, total
// tokens over them), its facts, and the dense index and graph over all
// chunks when the index keeps a corpus-free embedder's.
type batchWrite struct {
	add   []*evidence.Chunk
	an    []state.Analyzed
	facts []*evidence.Fact
	total int64
	dense *retrieve.Dense
	graph *retrieve.Graph
	// body is the sealed batch (the log entry), lines where each chunk's
	// line lies in it; nil for a memory index.
	body  []byte
	lines []storage.Span
	// file and chain name a batch a later purge rewrote (entry.file).
	file, chain string
	// ready waits for retrieve.Lexical.Ready on add's partitions.
	ready func() error
}

// commit makes next, which is st plus w, the committed state, through the
// commit protocol (internal/commit): files first, then the lexical batch
// and the manifest (next pending) and, under the write lock, the swap. On
// any error the batch is rolled back and st stays the state.
func (e *Engine) commit(ctx context.Context, st, next *state.State, w batchWrite) error {
	var c *commit.Commit
	var named, start bool // the commit names a checkpoint; it starts one ahead (state.Plan)
	if e.store != nil {
		var err error
		f, plan, err := e.filesOf(st, next, w)
		if err != nil {
			e.ahead.TakeRead().Close()
			return fmt.Errorf("evpack: ingest: %w", errors.Join(err, f.Ahead.Discard()))
		}
		if c, err = commit.Write(e.store, f); err != nil {
			e.ahead.TakeRead().Close()
			return fmt.Errorf("evpack: ingest: %w", errors.Join(err, f.Ahead.Discard()))
		}
		named, start = f.Checkpoint != nil || f.Ahead != nil, plan.Start
	}
	docs, restated := st.LexDocsOf(next, w.add, w.an, w.facts)
	mask := &pendingCommit{next: next, pinned: restated > 0 || len(w.add) > maxMaskedByID}
	if !mask.pinned {
		mask.added = slices.SortedFunc(slices.Values(w.add), func(a, b *evidence.Chunk) int { return strings.Compare(a.ID, b.ID) })
	}
	err := e.publish(ctx, c, next, mask, func() error {
		if err := w.ready(); err != nil {
			return audit.LexicalErr(err)
		}
		return audit.LexicalErr(e.lex.Index(ctx, docs))
	}, func() error {
		_, err := e.lex.Undo(context.WithoutCancel(ctx), st.Gen, st.LexDoc)
		return err
	})
	if err == nil && named {
		e.rebase(next)
	} else {
		e.ahead.TakeRead().Close() // a failed commit's, or none
	}
	if err == nil && start {
		// Under ingestMu, which every commit and Close take: no commit
		// closes the rows it reads before it ends (rebase and Close drop
		// it first).
		e.ahead.Start(e.store, e.lex, func() *state.State {
			e.mu.RLock()
			defer e.mu.RUnlock()
			return e.st
		})
	}
	if err == nil && e.store != nil && !named && !start {
		e.ahead.CatchUp(e.store, e.lex) // the commit that names it then adds only its own batch
		// This process opened the index after the generation that started
		// the window, so it wrote nothing ahead: it starts now, at its first
		// commit (a process that only reads never pays for it), and the
		// commit that names it finds it written, or waits for the rest,
		// instead of building that state and writing it whole (2.3 to 2.9 s
		// at a million chunks).
		if g := state.Window(e.store); g != 0 {
			e.ahead.StartAt(e.store, e.lex, g)
		}
	}
	return err
}

// rebase replaces next, the committed state, with the state read back
// from the checkpoint its commit named (state.ReadBack): the same answers,
// nothing per chunk in memory, so that the next commit copies only what it
// adds. A checkpoint still being written ahead is of no use past a commit
// that named another, and it reads the rows rebase closes: it is dropped
// first.
func (e *Engine) rebase(next *state.State) {
	read := e.ahead.TakeRead()
	e.ahead.Drop()
	fresh, ok := state.ReadBack(e.store, e.lex, e.emb, next.Gen, read)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st != next || e.closed {
		fresh.Rows.Close()
		return
	}
	e.st = fresh
	// A query still reading next starts again on fresh (Engine.readFailed).
	// Unmapping a checkpoint of a million chunks took 76 ms: not in the
	// commit (Close waits for it).
	e.retired.Add(1)
	go func() {
		defer e.retired.Done()
		next.Rows.Close()
	}()
}

// pendingCommit is a commit whose documents are going into bleve while st
// is still the state queries answer from. whileCommitted keeps them out by
// ID (of added, sorted, those a query admits), or, when it re-indexes
// stored chunks (facts) or adds many, by next's clauses pinned (pinned).
type pendingCommit struct {
	next   *state.State
	added  []*evidence.Chunk
	pinned bool
}

const maxMaskedByID = 256 // the most chunks a commit kept out of queries by ID adds

// publish finishes commit c (nil for a memory index): apply changes the
// lexical index, the manifest is published and next becomes the state.
// When the lexical change cannot be undone, or the manifest's rename is
// not durable, the engine stops (ErrBroken) for Open to settle the commit.
// With a mask, apply (adds, re-indexes) and the manifest's fsyncs run
// outside the write lock, the commit pending, so a replica applying entries
// keeps answering; a purge's deletions hold it throughout. The caller holds
// ingestMu (Close, Merge and CheckIndex wait for it).
func (e *Engine) publish(ctx context.Context, c *commit.Commit, next *state.State, mask *pendingCommit, apply, undo func() error) error {
	e.lockAside()
	defer func() { // also when a test stops the commit dead (runtime.Goexit)
		e.pending = nil
		e.mu.Unlock()
	}()
	if e.closed || e.broken != nil { // nothing reached bleve: only the files go
		err := ErrClosed
		if !e.closed {
			err = e.broken
		}
		return errors.Join(err, commit.Abort(c))
	}
	publish := func() error { return commit.Publish(c, apply, undo) }
	if mask != nil {
		e.pending = mask
		e.mu.Unlock()
		publish = func() error { defer e.lockAside(); return commit.Publish(c, apply, undo) }
	}
	err := publish()
	var ue *commit.UndoError
	if errors.As(err, &ue) {
		e.broken = fmt.Errorf("%w: commit of generation %d failed (%v) and could not be rolled back: %v", ErrBroken, next.Gen, ue.Cause, ue.Err)
		e.advance()
		return errors.Join(ue.Cause, e.broken)
	}
	if err != nil {
		return err
	}
	e.st = next
	e.advance()
	return nil
}

// lockAside takes the write lock without parking queries (a waiting Lock
// parks every later reader, which on a busy machine then waits for a core):
// TryLock, in a moment no query reads, and Lock after 1,000 tries.
func (e *Engine) lockAside() {
	for range 1000 {
		if e.mu.TryLock() {
			return
		}
		runtime.Gosched()
	}
	e.mu.Lock()
}

// filesOf returns what next's generation writes: the batch, its analysis
// file, the checkpoint it names (next's, after the batch, so that next
// knows where its new chunks lie, or one written ahead: state.Plan) and a
// corpus-free embedder's vectors and graph; and what it does with the
// checkpoint.
func (e *Engine) filesOf(st, next *state.State, w batchWrite) (commit.Files, state.Plan, error) {
	gen, at := next.Gen, next.Commits[next.Gen-1]
	b := storage.Batch{Generation: gen, File: cmp.Or(w.file, storage.BatchName(gen)), Chain: w.chain, Chunks: len(w.add), Facts: len(w.facts),
		CommittedAt: at.Format(time.RFC3339)}
	f := commit.Files{Batch: b, Body: w.body, AddDocs: int64(len(w.add)), AddTokens: w.total}
	next.SetLines(w.add, w.lines)
	if len(w.add) > 0 && w.file == "" { // a rewritten batch's analysis went with the purged text
		f.Batch.Analysis = storage.AnalysisName(gen)
		f.Analysis = func(sum string) []byte { return storage.EncodeAnalysis(state.AnalysisOf(e.lex, sum, w.add, w.an)) }
	}
	switch {
	case state.CorpusFree(e.emb) && len(w.add) == 0: // a commit of facts alone: the stored vectors stay
		f.DenseMode = commit.DenseKeep
	case w.dense != nil && state.CorpusFree(e.emb):
		// A model's vectors are costly: store them with the generation so
		// that Open loads them instead of embedding the corpus again (and
		// so is the graph over them).
		f.DenseMode, f.Dense, f.Graph, f.Embedder = commit.DenseReplace, w.dense, w.graph, e.emb.Identity()
		if w.graph != nil {
			f.GraphBuild = state.GraphBuild(*e.graph)
		}
	default:
		f.DenseMode = commit.DenseDrop
	}
	ckpt, plan, err := state.NextCheckpoint(e.store, e.lex, st, next, w.add, len(w.facts), w.file != "")
	if err != nil {
		return f, plan, err
	}
	f.Checkpoint = ckpt
	if plan.Name != 0 {
		f.CheckpointGen, f.Delta = plan.Name, plan.Delta
		if f.Ahead, f.AheadSum = e.ahead.Take(plan); f.Ahead == nil {
			// No one wrote it ahead (this process opened the index after
			// that generation, or the write failed): written now, from the
			// state as of that generation.
			f.Checkpoint, err = state.CheckpointAt(e.store, e.lex, plan.Name)
		}
	}
	return f, plan, err
}
