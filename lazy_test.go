package evpack

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// lazyVictim makes lazyHistory's index in a new directory, closed, and
// returns the directory, the requests and the first of its partitions'
// directories: the one a test damages or locks.
func lazyVictim(t *testing.T) (dir string, reqs []Request, victim string) {
	t.Helper()
	dir = t.TempDir()
	reqs = lazyHistory(t, dir)
	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	return dir, reqs, parts[0]
}

// lazyHistory commits, to the index in dir, the golden corpus, two
// tenants' chunks, an ALFRED series fetched twice (its second fetch ends a
// vintage: a fact) and a purge, and returns the requests to ask of it:
// the golden ones, each tenant's, and pinned to every generation.
func lazyHistory(t *testing.T, dir string) []Request {
	ctx := context.Background()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	first, second := gdpFetches(t)
	acme := vocabularyRecords(t, "acme", "a", 6, 1)
	acme[0].Chunk.Text += " zyxquillon" // a word of this chunk's alone, which the purge takes away
	for _, recs := range [][]connectors.Record{acme, first, vocabularyRecords(t, "globex", "g", 6, 2), second} {
		_, err = e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
	}
	_, err = e.Purge(ctx, []string{"a-0000"}, "erasure request 2026-7")
	require.NoError(t, err)
	gen := e.st.Gen
	require.NoError(t, e.Close())
	reqs, err := loadRequests()
	require.NoError(t, err)
	var out []Request
	for _, r := range reqs {
		out = append(out, r.request())
	}
	for _, tenant := range []string{"", "acme", "globex"} {
		for g := range gen + 1 {
			out = append(out,
				Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: tenant, Generation: g},
				Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-06-01"), Tenant: tenant, Generation: g, K: 3})
		}
		for _, w := range []string{"zyxquillon", "a-0001 a-0002 a-0003", "g-0004 g-0005"} {
			out = append(out, Request{Question: w, AsOf: asof.MustDate("2026-06-01"), Tenant: tenant})
		}
	}
	return out
}

// lazyPacks makes lazyHistory's index in a new directory and returns it,
// the requests, and the packs it gives them once opened again.
func lazyPacks(t *testing.T) (dir string, reqs []Request, packs [][]byte) {
	dir = t.TempDir()
	reqs = lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	packs = packsOf(t, e, reqs)
	require.NoError(t, e.Close())
	return dir, reqs, packs
}

// packsOf returns e's pack bytes for each of reqs.
func packsOf(t *testing.T, e *Engine, reqs []Request) [][]byte {
	t.Helper()
	out := make([][]byte, len(reqs))
	for i, r := range reqs {
		p, err := e.Query(context.Background(), r)
		require.NoError(t, err, "request %d: %+v", i, r)
		out[i] = p.Bytes()
	}
	return out
}

// TestCheckpointAnswersAsTheLog: Open reads the checkpoint (nothing per
// chunk in memory), and the index answers every request, pinned ones
// included, byte for byte as it does once the state is built from every
// batch file (the first write's), and every pack verifies either way.
func TestCheckpointAnswersAsTheLog(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	require.Empty(t, e.st.Chunks, "and holds no chunk")
	lazy := packsOf(t, e, reqs)
	for i, raw := range lazy {
		rep, err := e.Verify(context.Background(), raw)
		require.NoError(t, err)
		require.True(t, rep.OK(), "request %d: %v", i, rep.Problems)
	}
	require.NoError(t, e.Check())
	require.NotNil(t, e.st.Rows, "Check leaves the engine's state as it was")

	full := fullState(t, e)
	require.Nil(t, full.Rows)
	require.Same(t, full, e.st, "the first write's state replaces the checkpoint's")
	require.Equal(t, lazy, packsOf(t, e, reqs))
}

// TestCheckpointMatchesTheLog: the checkpoint a commit writes is the one
// the state rebuilt from the batch files writes, byte for byte, after
// chunks, facts and a purge (Check compares them); and a later commit on
// an index opened from its checkpoint writes the next one so too.
func TestCheckpointMatchesTheLog(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "later", 4, 7)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	m := storagetest.ReadManifest(t, dir)
	require.Equal(t, storage.CheckpointName(m.Generation-1), m.Checkpoint, "the commit of chunks kept the checkpoint (state.PlanCheckpoint)")
	old, err := filepath.Glob(filepath.Join(dir, "state-*.bin"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, m.Checkpoint)}, old, "a commit removes the checkpoint before it")
	raw, err := os.ReadFile(filepath.Join(dir, m.Checkpoint))
	require.NoError(t, err)
	require.NotContains(t, string(raw), "zyxquill", "no term of the purged text is written")
}

// TestEditedCheckpointIsRefused: a byte of its head edited is ErrCorrupt
// at Open, naming the file (a byte of the rest: the next test); a
// checkpoint forged (a chunk's generation moved on) and sealed anew with
// the manifest gets past Open, and Check names it.
func TestEditedCheckpointIsRefused(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	m := storagetest.ReadManifest(t, dir)
	name := filepath.Join(dir, m.Checkpoint)
	orig, err := os.ReadFile(name)
	require.NoError(t, err)

	edited := bytes.Clone(orig)
	edited[len(state.CheckpointFormat)+8+3] ^= 1 // in the head, which Open reads
	require.NoError(t, os.WriteFile(name, edited, 0o644))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), m.Checkpoint+": head checksum mismatch")

	// Forged: one chunk's committing generation moved on (a pinned
	// request would leave it out), written as a commit would write it, the
	// manifest sealed anew with its checksum.
	require.NoError(t, os.WriteFile(name, orig, 0o644))
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	st, _ := generationMoved(t, fullState(t, e))
	require.NoError(t, e.Close())
	forgeCheckpoint(t, dir, e, st, m)
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	err = e.Check()
	require.ErrorIs(t, err, ErrCheck)
	require.Contains(t, err.Error(), m.Checkpoint+" differs from the checkpoint the batch files give")
}

// generationMoved returns a copy of st (sharing all but its document
// places) with one chunk's committing generation moved on, which a
// pinned request would leave out, and the chunk's ID.
func generationMoved(t *testing.T, st *state.State) (*state.State, string) {
	t.Helper()
	cp := *st
	cp.DocPlace = maps.Clone(st.DocPlace)
	id := slices.Min(slices.Collect(maps.Keys(cp.DocPlace)))
	p := cp.DocPlace[id]
	require.Less(t, p.Gen, st.Gen)
	p.Gen++
	cp.DocPlace[id] = p
	return &cp, id
}

// forgeCheckpoint writes st's checkpoint as the one of the index in dir,
// whose manifest is m, as a commit would write it, and seals it anew in
// the manifest. e, closed, encodes it (its lexical index is closed:
// state.Checkpoint reads none of it).
func forgeCheckpoint(t *testing.T, dir string, e *Engine, st *state.State, m *storage.Manifest) {
	t.Helper()
	forged, err := state.Checkpoint(st, e.lex, nil)
	require.NoError(t, err)
	m.Checkpoint = storage.CheckpointName(st.Gen) // of the state's generation: a commit's
	require.NoError(t, os.WriteFile(filepath.Join(dir, m.Checkpoint), forged.Bytes(), 0o644))
	m.CheckpointSum, err = state.CheckpointSum(forged.Head())
	require.NoError(t, err)
	storagetest.WriteManifest(t, dir, m)
}

// TestEditedCheckpointBlockFailsTheQuery: Open checks a checkpoint's head;
// a block of the rest edited after is found when a query first reads it,
// and the query fails (ErrCorrupt) rather than answer from it.
func TestEditedCheckpointBlockFailsTheQuery(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	m := storagetest.ReadManifest(t, dir)
	name := filepath.Join(dir, m.Checkpoint)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	raw[len(raw)-5] ^= 1 // in the last block of the number arena
	require.NoError(t, os.WriteFile(name, raw, 0o644))
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	failed := 0
	for _, r := range reqs {
		if _, err := e.Query(context.Background(), r); err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), m.Checkpoint)
			failed++
		}
	}
	require.Positive(t, failed, "some request reads the edited block")
	_, err = e.Query(context.Background(), reqs[0])
	require.ErrorIs(t, err, ErrCorrupt, "and every request after it fails")
}

// TestEditedLineIsDropped: with Open reading the checkpoint, a batch file's
// chunk line edited after ingest (the text changed: its content hash, kept
// in the checkpoint, no longer matches) is found when a query reads it,
// and the gate drops the chunk, saying why; Check names the file. A batch
// file gone is an error of the query, not a silent drop.
func TestEditedLineIsDropped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, req, p := retentionPack(t, dir)
	require.NoError(t, e.Close())

	batch := filepath.Join(dir, storage.ChunksDir, storage.BatchName(1))
	orig, err := os.ReadFile(batch)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(batch, bytes.Replace(orig, []byte("for ten years from the date"), []byte("for two years from the date"), 1), 0o644))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	p2, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p2), "records-act/art-2@2025")
	require.Contains(t, p2.Trace.Dropped, evidence.Drop{ChunkID: "records-act/art-2@2025", Reason: "content hash mismatch"})
	rep, err := e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.False(t, rep.OK())
	err = e.Check()
	require.ErrorIs(t, err, ErrCheck)
	require.Contains(t, err.Error(), batch+" hashes to")
	require.NoError(t, e.Close())

	require.NoError(t, os.Remove(batch))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Query(ctx, req)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), storage.BatchName(1))
}

// TestCheckpointOfOtherAnalyzersIsNotUsed: a checkpoint names the
// analyzers whose terms it holds; one of others is passed over, and Open
// builds the state from the batch files as before.
func TestCheckpointOfOtherAnalyzersIsNotUsed(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	raw, err := state.EncodeCheckpoint(fullOf(t, dir), "lexical=other rerank=terms/0", func() ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	m := storagetest.ReadManifest(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, m.Checkpoint), raw.Bytes(), 0o644))
	m.CheckpointSum, err = state.CheckpointSum(raw.Head())
	require.NoError(t, err)
	storagetest.WriteManifest(t, dir, m)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.Nil(t, e.st.Rows)
	require.Equal(t, want, packsOf(t, e, reqs))
}

// fullOf returns the state the batch files of the index in dir give.
func fullOf(t *testing.T, dir string) *state.State {
	t.Helper()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	return fullState(t, e)
}

// TestPartitionsOpenWhenRead: Open opens no lexical partition of an index
// with a checkpoint (its catalog says what each holds); a request opens
// the ones it reads, one tenant's request not another's; the packs are
// those of the state the batch files give.
func TestPartitionsOpenWhenRead(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	open, all := e.lex.Opened()
	require.Zero(t, open, "Open opens no partition")
	require.Greater(t, all, 3)
	_, err = e.Query(context.Background(), Request{Question: "a-0001 a-0002", AsOf: asof.MustDate("2026-06-01"), Tenant: "acme"})
	require.NoError(t, err)
	one, _ := e.lex.Opened()
	require.Positive(t, one)
	require.Less(t, one, all, "one tenant's request opens none of the other tenants' partitions")
	lazy := packsOf(t, e, reqs)
	full := fullState(t, e) // the first write's state; the partitions stay as they are
	require.Nil(t, full.Rows)
	require.Equal(t, lazy, packsOf(t, e, reqs))

	// Requests racing to open the same partitions, read the same
	// documents' rows and check the same chunks first (run with -race).
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	got := make([][][]byte, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			got[i] = make([][]byte, len(reqs))
			for j, r := range reqs {
				if p, err := e.Query(context.Background(), r); err == nil {
					got[i][j] = p.Bytes()
				}
			}
		})
	}
	wg.Wait()
	for i := range got {
		require.Equal(t, lazy, got[i], "goroutine %d", i)
	}
}

// filesOf returns every file under dir but the lock with its size and
// modification time, sorted.
func filesOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == filepath.Join(dir, storage.LockName) {
			return err // Open writes its pid and host into the lock file
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %d", path, fi.Size(), fi.ModTime().UnixNano()))
		return nil
	}))
	slices.Sort(out)
	return out
}

// TestQueriesWriteNothing: a partition a request opens is opened
// read-only (bleve opens an index for writing by persisting it again, an
// fdatasync on the query's path): requests leave every file as it was. A
// commit reopens the partitions it writes, while requests run on the
// others and on them (run with -race).
func TestQueriesWriteNothing(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	before := filesOf(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	want := packsOf(t, e, reqs)
	open, _ := e.lex.Opened()
	require.Positive(t, open)
	require.Equal(t, before, filesOf(t, dir), "no file written, none touched")

	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var failures []error
	var mu sync.Mutex
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := reqs[i%len(reqs)]
			r.Generation = max(r.Generation, 1) // pinned: the commit does not move its answer
			if r.Generation == 0 {
				continue
			}
			if _, err := e.Query(ctx, r); err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
		}
	})
	_, err = e.Ingest(ctx, connectors.Records(append(vocabularyRecords(t, "acme", "later", 3, 5), vocabularyRecords(t, "", "shared", 3, 6)...)), IngestOptions{})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.Empty(t, failures)
	for i, r := range reqs {
		if r.Generation == 0 {
			continue
		}
		p, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, want[i], p.Bytes(), "request %d, pinned to generation %d", i, r.Generation)
	}
}

// TestPartitionDisagreeingWithItsCatalog: a partition edited behind the
// index's back (a document deleted by another writer) no longer holds what
// the checkpoint's catalog says: the requests that read it fail with
// ErrCorrupt naming it, those that do not are answered, and Check names
// it. A partition the catalog names that is gone is refused at Open.
func TestPartitionDisagreeingWithItsCatalog(t *testing.T) {
	ctx := context.Background()
	dir, reqs, victim := lazyVictim(t)
	idx, err := bleve.Open(victim)
	require.NoError(t, err)
	res, err := idx.Search(bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1, 0, false))
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	b := idx.NewBatch()
	b.Delete(res.Hits[0].ID)
	require.NoError(t, idx.Batch(b))
	require.NoError(t, idx.Close())

	e, err := Open(dir, Options{})
	require.NoError(t, err, "Open reads no partition")
	failed, answered := 0, 0
	for _, r := range reqs {
		_, err := e.Query(ctx, r)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), victim+": holds")
			failed++
			continue
		}
		answered++
	}
	require.Positive(t, failed, "some request reads the edited partition")
	require.Positive(t, answered, "and some do not")
	err = e.Check()
	require.Error(t, err)
	require.Contains(t, err.Error(), victim)
	require.NoError(t, e.Close())

	require.NoError(t, os.RemoveAll(victim))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), filepath.Base(victim)+" (tenant")
}

// TestOlderCheckpointIsReadFromTheBatches: a checkpoint of the format
// before this one (no catalog of the partitions) is passed over, not
// refused: Open reads the batch files and opens every partition, Check
// passes, and the next commit writes a checkpoint Open reads again.
func TestOlderCheckpointIsReadFromTheBatches(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	name := filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	copy(raw, state.OlderCheckpoints[0])
	require.NoError(t, os.WriteFile(name, raw, 0o644))

	e, err := Open(dir, Options{})
	require.NoError(t, err)
	require.Nil(t, e.st.Rows, "the state comes from the batch files")
	open, all := e.lex.Opened()
	require.Equal(t, all, open, "and every partition is opened")
	require.Equal(t, want, packsOf(t, e, reqs))
	require.NoError(t, e.Check())
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "later", 2, 9)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.NotNil(t, e.st.Rows, "the commit wrote a checkpoint of this format")
}

// TestCheckedChunksAreKept: a chunk a request read and checked is answered
// from the row table's cache of checked chunks, the committed text, even
// after its batch file is edited in place; Verify and Check, which read
// the files, find the edit, and the next process drops the chunk.
func TestCheckedChunksAreKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, req, p := retentionPack(t, dir)
	require.NoError(t, e.Close())
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	p1, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, p.Bytes(), p1.Bytes())

	batch := filepath.Join(dir, storage.ChunksDir, storage.BatchName(1))
	orig, err := os.ReadFile(batch)
	require.NoError(t, err)
	edited := bytes.Replace(orig, []byte("for ten years from the date"), []byte("for two years from the date"), 1)
	require.NotEqual(t, orig, edited)
	require.NoError(t, os.WriteFile(batch, edited, 0o644)) // the same file, which the engine holds open

	p2, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, p.Bytes(), p2.Bytes(), "the checked chunk, not the edited line")
	rep, err := e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.False(t, rep.OK(), "Verify reads the file")
	require.ErrorIs(t, e.Check(), ErrCheck)
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	p3, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p3), "records-act/art-2@2025")
	require.Contains(t, p3.Trace.Dropped, evidence.Drop{ChunkID: "records-act/art-2@2025", Reason: "content hash mismatch"})
}

// TestCheckedChunksShareSlots: with one slot, every read evicts the one
// before it, and every request still gets its own chunks: a slot answers
// only for the row it holds.
func TestCheckedChunksShareSlots(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.NotNil(t, e.st.Rows)
	e.st.Rows.Checked = e.st.Rows.Checked[:1]
	require.Equal(t, want, packsOf(t, e, reqs))
	require.Equal(t, want, packsOf(t, e, reqs), "again, the slot full")
}

// TestFirstWriteReadsTheBatchesInOrder: the first write after Open builds
// the state from the batch files, reading the next one while it adds the
// one before (loadState). An edited batch file fails it with ErrCorrupt
// naming that file, and of two edited files the earlier one: an error is
// reported in batch order, whatever the reader ahead has found.
func TestFirstWriteReadsTheBatchesInOrder(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	m := storagetest.ReadManifest(t, dir)
	require.GreaterOrEqual(t, len(m.Batches), 5)
	path := func(b storage.Batch) string { return filepath.Join(dir, storage.ChunksDir, b.File) }
	firstWrite := func() error {
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer func() { require.NoError(t, e.Close()) }()
		require.NotNil(t, e.st.Rows, "Open read the checkpoint")
		_, err = e.writable()
		return err
	}
	for k, b := range m.Batches {
		for _, also := range []int{-1, k + 1} {
			if also >= len(m.Batches) {
				continue
			}
			edited := []storage.Batch{b}
			if also >= 0 {
				edited = append(edited, m.Batches[also])
			}
			var origs [][]byte
			for _, e := range edited {
				orig, err := os.ReadFile(path(e))
				require.NoError(t, err)
				origs = append(origs, orig)
				require.NoError(t, os.WriteFile(path(e), append(slices.Clone(orig), ' '), 0o644))
			}
			err := firstWrite()
			require.ErrorIs(t, err, ErrCorrupt, "batch %d edited (and %d)", k, also)
			require.Contains(t, err.Error(), path(b)+" hashes to", "batch %d edited (and %d)", k, also)
			for i, e := range edited {
				require.NoError(t, os.WriteFile(path(e), origs[i], 0o644))
			}
		}
	}
	require.NoError(t, firstWrite(), "every file as it was")
}

// TestCheckpointBytesArePinned: the checkpoint of a fixed history (chunks,
// facts and a purge over several commits; its commit times fixed) has
// pinned bytes, at GOMAXPROCS 1 and 4. The encoder fills its sections on
// every core: the bytes must depend on neither, nor move from those earlier
// builds wrote, which Check compares with the ones this build writes.
func TestCheckpointBytesArePinned(t *testing.T) {
	const pinned = "blake3:cbcc74755787d637d5a2c3ebf5a091311ade712affbacd941c805b0429caf4cf" // format /5: the document table, and days in each row
	dir := t.TempDir()
	lazyHistory(t, dir)
	st := fullOf(t, dir)
	for i := range st.Commits {
		st.Commits[i] = time.Date(2026, 1, 1+i, 9, 0, 0, 0, time.UTC)
	}
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		f, err := state.EncodeCheckpoint(st, "lexical=pinned", func() ([]byte, error) { return []byte(`{"catalog":"pinned"}`), nil })
		runtime.GOMAXPROCS(prev)
		require.NoError(t, err)
		require.Equal(t, pinned, evidence.Sum(f.Bytes()), "GOMAXPROCS %d", procs)
	}
}

// TestWarmTenants: with Options.WarmTenants, a tenant's first request on
// an early day also opens the partitions of the tenants it read that it
// did not read itself, and no other tenant's; without it, only what the
// request read. The packs are the same either way.
func TestWarmTenants(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	var opened []int
	var packs [][][]byte
	for _, warm := range []bool{false, true} {
		e, err := Open(dir, Options{WarmTenants: warm})
		require.NoError(t, err)
		checked(t, e)
		_, err = e.Query(context.Background(), Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-06-01"), Tenant: "acme"})
		require.NoError(t, err)
		e.lex.WaitWarm()
		open, all := e.lex.Opened()
		require.Less(t, open, all, "warm %v: globex's partitions stay closed", warm)
		opened = append(opened, open)
		packs = append(packs, packsOf(t, e, reqs))
		require.NoError(t, e.Close())
	}
	require.Greater(t, opened[1], opened[0], "warming opens the partitions of the tenants read that the request did not read")
	require.Equal(t, packs[0], packs[1])
}
