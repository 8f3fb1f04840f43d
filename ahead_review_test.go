package evpack

// Adversarial tests (a helper's review of stop 53) of the checkpoint read-back catch-up
// (state.Read.catchUp, state.AheadSlot.CatchUp, state.readBackAhead) and
// its resumable State.addLater. Each test says what it tries to break.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// rvCommit ingests recs on a.w in one commit and applies the entry to the
// replica a.r and to also.
func rvCommit(t *testing.T, a *aheadWindow, recs []connectors.Record, also ...*Engine) {
	t.Helper()
	ctx := context.Background()
	_, err := a.w.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err, "generation %d", committedState(a.w).Gen+1)
	for _, e := range append([]*Engine{a.r}, also...) {
		require.NoError(t, applyBody(ctx, e, committedEntry(t, a.wdir, committedState(a.w).Gen)), "generation %d", committedState(a.w).Gen)
	}
}

// rvEncode is the checkpoint e's state encodes to (state.CheckpointAhead).
func rvEncode(t *testing.T, e *Engine) []byte {
	t.Helper()
	f, err := state.CheckpointAhead(committedState(e), e.lex, nil, nil)
	require.NoError(t, err)
	return slices.Concat(f...)
}

// rvMaps lists the lines of /proc/self/maps that name a file under one of
// dirs (mappings this process still holds of those indexes).
func rvMaps(t *testing.T, dirs ...string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /proc/self/maps")
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, d := range dirs {
			if strings.Contains(sc.Text(), d) {
				out = append(out, sc.Text())
			}
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// rvHold makes the next writer a.w starts stop once its file is written
// (Then.Written) and returns a channel closed when it gets there and what
// lets it go on (safe to call twice).
func rvHold(a *aheadWindow) (written <-chan struct{}, release func()) {
	w, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.w.ahead.Then.Written = func() {
		close(w)
		<-r
	}
	return w, func() { once.Do(func() { close(r) }) }
}

// rvAsReopened requires the replica, reopened (Open's path), to encode to
// the checkpoint bytes of the writer's state and to answer reqs with the
// writer's packs.
func rvAsReopened(t *testing.T, a *aheadWindow, reqs []Request) {
	t.Helper()
	writerBytes := rvEncode(t, a.w)
	want := packsOf(t, a.w, reqs)
	require.NoError(t, a.r.Close())
	a.r = checked(t, mustOpen(t, a.rdir))
	require.Equal(t, string(rvEncode(t, a.r)), string(writerBytes), "the writer's state encodes as a fresh Open's")
	require.Equal(t, want, packsOf(t, a.r, reqs), "packs: the writer against a fresh Open")
}

// rvReqs asks for a text of each of recs at several generations.
func rvReqs(a *aheadWindow, tenant string, recs []connectors.Record) []Request {
	var reqs []Request
	for g := int64(1); g <= committedState(a.w).Gen; g += 5 {
		r := recs[int(g)%len(recs)]
		reqs = append(reqs, Request{Question: r.Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: tenant, K: 5, Generation: g})
	}
	return reqs
}

// TestCatchUpMixedWindow tries to make the state the writer read
// back and caught up (Read.catchUp on the writer's goroutine, then
// AheadSlot.CatchUp commit by commit, then readBackAhead in the naming
// commit) differ from what a fresh Open builds: the window's commits mix
// chunks of two tenants, several chunks a commit, retractions of chunks
// before the checkpoint written ahead, of chunks added in the window, and a
// chunk retracted in its own commit (facts set State.Catalog to nil; the
// adopt catalog must go on across calls, not be reset). Commits happen
// while the writer is held after its write (so its own catch-up has
// several batches to add), and after. Queries and the first History run
// beside the commits (-race). The state after the naming commit must
// encode to the bytes a reopened replica's does, answer the same packs at
// every generation, and the next window's checkpoint (whose catalog comes
// from the caught-up state's) must be byte for byte the replica's, which
// reopened (Open's path) after the naming commit.
func TestCatchUpMixedWindow(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
	ctx := context.Background()
	g := vocabularyRecords(t, "globex", "g", 80, 5)
	b := vocabularyRecords(t, "acme", "b", 6*state.CheckpointLag, 13)
	gi, bi := 0, 0
	nextB := func(n int) []connectors.Record { bi += n; return b[bi-n : bi] }
	nextG := func(n int) []connectors.Record { gi += n; return g[gi-n : gi] }

	// Queries and History beside the window's commits.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		req := Request{Question: a.recs[2].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5}
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := a.w.Query(ctx, req); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("query beside the window: %v", err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	// The window a.started opened: its writer is done already; go on.
	a.w.ahead.Wait()
	rvCommit(t, a, []connectors.Record{retraction("a-0003")})
	rvCommit(t, a, nextG(3))
	wg.Go(func() {
		if _, err := a.w.History(); err != nil {
			t.Errorf("History beside the window: %v", err)
		}
	})
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		rvCommit(t, a, nextB(1))
	}
	require.Equal(t, storage.CheckpointName(a.started), a.checkpoint(a.wdir))

	// The next window, with the writer held after its write.
	release := a.holdNextWriter(func(...*Engine) { rvCommit(t, a, nextB(1)) })
	defer release()
	started := committedState(a.w).Gen - 1 // the commit before the one that saw it written, or earlier
	for _, tmp := range temps(t, a.wdir) {
		for s := a.started + 1; s <= committedState(a.w).Gen; s++ {
			if strings.HasPrefix(filepath.Base(tmp), "."+storage.CheckpointName(s)) {
				started = s
			}
		}
	}
	rvCommit(t, a, nextB(3))
	rvCommit(t, a, []connectors.Record{retraction("a-0005")})                 // before the checkpoint
	rvCommit(t, a, append(nextG(2), retraction(fmt.Sprintf("b-%04d", bi-1)))) // a chunk of the window, beside new chunks
	fresh := nextB(1)
	rvCommit(t, a, append(slices.Clone(fresh), retraction(fresh[0].Chunk.ID))) // a chunk retracted in its own commit
	release()
	a.w.ahead.Wait()
	rvCommit(t, a, nextB(2))
	rvCommit(t, a, []connectors.Record{retraction("g-0001")})
	for a.checkpoint(a.wdir) == storage.CheckpointName(a.started) {
		rvCommit(t, a, nextB(1))
	}
	require.Equal(t, storage.CheckpointName(started), a.checkpoint(a.wdir))
	require.Equal(t, started, committedState(a.w).Base, "the naming commit read its state back")
	requireSameFiles(t, a.wdir, a.rdir, "after the second window")

	rvAsReopened(t, a, append(rvReqs(a, "acme", b[:bi]), rvReqs(a, "globex", g[:gi])...))
	require.Equal(t, started, committedState(a.r).Base)

	// The third window: its checkpoint is written from the caught-up state
	// (its catalog) on the writer and from Open's on the replica.
	for a.checkpoint(a.wdir) == storage.CheckpointName(started) {
		rvCommit(t, a, nextB(1))
	}
	requireSameFiles(t, a.wdir, a.rdir, "after the third window")
	rep, err := a.w.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
}

// TestCatchUpUnreadableBatch: a commit of the window whose own
// batch file AheadSlot.CatchUp cannot read (moved away right after its
// manifest, put back after the commit) must make the read-back go (not a
// state missing that generation), so that the naming commit reads its
// state from disk, and that state is right: Base is the checkpoint's, the
// packs are the replica's and a fresh Open's, and no mapping of the temp
// file or a batch file is left once the engines close.
func TestCatchUpUnreadableBatch(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
	a.w.ahead.Wait()
	a.commitChunk() // caught up by CatchUp
	var moved string
	aside := filepath.Join(t.TempDir(), "aside")
	a.w.store.Hooks.AfterManifest = func() {
		m := a.w.store.Manifest()
		moved = filepath.Join(a.wdir, storage.ChunksDir, m.Batches[m.Generation-1].File)
		require.NoError(t, os.Rename(moved, aside))
	}
	_, err := a.w.Ingest(context.Background(), connectors.Records(a.recs[a.next:a.next+1]), IngestOptions{})
	a.w.store.Hooks.AfterManifest = nil
	require.NoError(t, err)
	a.next++
	require.NoError(t, os.Rename(aside, moved))
	require.NoError(t, applyBody(context.Background(), a.r, committedEntry(t, a.wdir, committedState(a.w).Gen)))
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	require.Equal(t, a.started, committedState(a.w).Base, "read back from disk")
	requireSameFiles(t, a.wdir, a.rdir, "after the window")
	reqs := rvReqs(a, "acme", a.recs[:a.next])
	want := packsOf(t, a.w, reqs)
	require.Equal(t, want, packsOf(t, a.r, reqs))
	writerBytes := rvEncode(t, a.w)
	require.NoError(t, a.w.Close())
	a.w = checked(t, mustOpen(t, a.wdir))
	require.Equal(t, string(writerBytes), string(rvEncode(t, a.w)))
	require.Equal(t, want, packsOf(t, a.w, reqs))
	require.NoError(t, a.w.Close())
	require.NoError(t, a.r.Close())
	require.Empty(t, rvMaps(t, a.wdir, a.rdir), "mappings left once both engines closed")
}

// TestCatchUpFailedCommits: commits of the window that fail
// (before the manifest: rolled back, their generation's batch file
// removed, the generation then taken by the next commit with other
// contents) while the writer is held after its write, and after it caught
// up, must not leave the read-back state holding the failed batch: the
// naming commit must read back a state equal to a fresh Open's.
func TestCatchUpFailedCommits(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
	ctx := context.Background()
	b := vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 17)
	fail := func(i int) {
		t.Helper()
		a.w.store.Hooks.BeforeManifest = func() error { return fmt.Errorf("test: no manifest for the %dth", i) }
		_, err := a.w.Ingest(ctx, connectors.Records(b[i:i+1]), IngestOptions{})
		a.w.store.Hooks.BeforeManifest = nil
		require.ErrorContains(t, err, "test: no manifest")
		require.NotErrorIs(t, err, ErrBroken)
	}
	a.w.ahead.Wait()
	// Into the next window, its writer held.
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	release := a.holdNextWriter(a.commitChunk)
	defer release()
	fail(0)
	a.commitChunk()
	fail(1)
	release()
	a.w.ahead.Wait()
	a.commitChunk()
	fail(2)
	a.commitChunk()
	named := a.checkpoint(a.wdir)
	for a.checkpoint(a.wdir) == named {
		a.commitChunk()
	}
	require.Equal(t, storagetest.ReadManifest(t, a.wdir).CheckpointGeneration(), committedState(a.w).Base, "read back")
	requireSameFiles(t, a.wdir, a.rdir, "after the window")
	rvAsReopened(t, a, rvReqs(a, "acme", a.recs[:a.next]))
}

// TestCatchUpEndsWithoutLeaks: a read-back state that no commit
// will name must be closed (no mapping of the temp file, of the state
// file or of a batch file left) when the window ends otherwise: a purge
// after the writer caught up; Close while the writer is held after its
// write (Close must not hang); Close after it caught up; and several
// windows in a row, then Close.
func TestCatchUpEndsWithoutLeaks(t *testing.T) {
	ctx := context.Background()
	t.Run("purge", func(t *testing.T) {
		a := newAheadWindow(t)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.w.ahead.Wait()
		a.commitChunk()
		a.commitChunk()
		_, err := a.w.Purge(ctx, []string{a.recs[3].Chunk.ID}, "erasure request")
		require.NoError(t, err)
		require.NoError(t, applyBody(ctx, a.r, committedEntry(t, a.wdir, committedState(a.w).Gen)))
		for _, l := range rvMaps(t, a.wdir) {
			require.NotContains(t, l, ".state-", "a mapping of the dropped temp file")
			require.NotContains(t, l, ".delta-", "a mapping of the dropped temp file")
		}
		for range state.CheckpointLag + 2 {
			a.commitChunk()
		}
		requireSameFiles(t, a.wdir, a.rdir, "after the purge and the window after")
		require.NoError(t, a.w.Close())
		require.NoError(t, a.r.Close())
		require.Empty(t, rvMaps(t, a.wdir, a.rdir))
	})
	t.Run("close while held", func(t *testing.T) {
		a := newAheadWindow(t)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.w.ahead.Wait()
		for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
			a.commitChunk()
		}
		release := a.holdNextWriter(a.commitChunk)
		defer release()
		a.commitChunk()
		closed := make(chan error, 1)
		go func() { closed <- a.w.Close() }()
		release()
		require.NoError(t, <-closed)
		require.Empty(t, temps(t, a.wdir))
		require.NoError(t, a.r.Close())
		require.Empty(t, rvMaps(t, a.wdir, a.rdir))
	})
	t.Run("close caught up, and several windows", func(t *testing.T) {
		a := newAheadWindow(t)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
		a.w.ahead.Wait()
		a.commitChunk()
		a.commitChunk()
		require.NoError(t, a.w.Close())
		require.Empty(t, temps(t, a.wdir))
		require.Empty(t, rvMaps(t, a.wdir))
		a.w = checked(t, mustOpen(t, a.wdir))
		for w := 0; w < 3; w++ {
			before := a.checkpoint(a.wdir)
			for a.checkpoint(a.wdir) == before {
				a.commitChunk()
			}
			require.Equal(t, storagetest.ReadManifest(t, a.wdir).CheckpointGeneration(), committedState(a.w).Base, "window %d", w)
			var stale []string
			for _, l := range rvMaps(t, a.wdir) {
				if strings.Contains(l, ".state-") || strings.Contains(l, ".delta-") || strings.Contains(l, "(deleted)") {
					stale = append(stale, l)
				}
			}
			require.Empty(t, stale, "window %d: mappings of temp or removed files", w)
		}
		requireSameFiles(t, a.wdir, a.rdir, "after three windows")
		require.NoError(t, a.w.Close())
		require.NoError(t, a.r.Close())
		require.Empty(t, rvMaps(t, a.wdir, a.rdir))
	})
}

// TestCatchUpReopenedInWindow: a process that reopens in the
// window writes the checkpoint ahead from its first commit there
// (WriteAheadAt, a state of its own), reads it back and catches up; held
// after its write while commits go on, then released: the naming commit
// reads back a state equal to a fresh Open's.
func TestCatchUpReopenedInWindow(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
	a.commitChunk()
	require.NoError(t, a.w.Close())
	a.w = checked(t, mustOpen(t, a.wdir))
	written, release := rvHold(a)
	defer release()
	a.commitChunk() // StartAt
	<-written
	a.w.ahead.Then.Written = nil
	for range 4 {
		a.commitChunk()
	}
	release()
	a.w.ahead.Wait()
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	require.Equal(t, a.started, committedState(a.w).Base)
	requireSameFiles(t, a.wdir, a.rdir, "after the window")
	rvAsReopened(t, a, rvReqs(a, "acme", a.recs[:a.next]))
}

// TestCatchUpInterruptedByTake: the writer is held after its
// write through the whole window, and released only right before the
// naming commit, which then takes the file (Ahead.taken) while the
// writer's own catch-up has about half the lag's batches to add: it stops
// between two batches (checkpoint.ErrStopped, the state kept), and
// readBackAhead must add exactly the rest (resumable addLater: the adopt
// catalog not reset). The state must encode as a fresh Open's, and the
// next window's checkpoint must be the replica's, which reopened.
func TestCatchUpInterruptedByTake(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			a := newAheadWindow(t)
			a.recs = append(a.recs, vocabularyRecords(t, "acme", "c", 6*state.CheckpointLag, 11)...)
			for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
				a.commitChunk()
			}
			release := a.holdNextWriter(a.commitChunk)
			defer release()
			var started int64
			for _, tmp := range temps(t, a.wdir) {
				for s := a.started + 1; s <= committedState(a.w).Gen; s++ {
					if strings.HasPrefix(filepath.Base(tmp), "."+storage.CheckpointName(s)) {
						started = s
					}
				}
			}
			require.NotZero(t, started)
			for chunks := committedState(a.w).Gen - started; chunks < int64(state.CheckpointLag/2); chunks++ {
				if chunks%5 == 2 { // facts alone: no generation of chunks
					rvCommit(t, a, []connectors.Record{retraction(a.recs[a.next-2].Chunk.ID)})
				}
				a.commitChunk()
			}
			release()
			a.commitChunk() // names it, at once
			require.Equal(t, storage.CheckpointName(started), a.checkpoint(a.wdir))
			require.Equal(t, started, committedState(a.w).Base)
			requireSameFiles(t, a.wdir, a.rdir, "after the window")
			rvAsReopened(t, a, rvReqs(a, "acme", a.recs[:a.next]))
			for a.checkpoint(a.wdir) == storage.CheckpointName(started) {
				a.commitChunk()
			}
			requireSameFiles(t, a.wdir, a.rdir, "after the next window")
		})
	}
}
