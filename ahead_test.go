package evpack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// aheadWindow is a writer and a replica applying its entries, one commit
// of one chunk at a time, from a checkpoint at generation 1 to the commit
// past the lag of generations of chunks (state.CheckpointLag), which
// starts a checkpoint written ahead (state.Plan): generation started.
type aheadWindow struct {
	w, r        *Engine
	wdir, rdir  string
	recs        []connectors.Record
	next        int // the record the next commit adds
	started     int64
	checkpoint  func(dir string) string
	commitChunk func(also ...*Engine)
}

func newAheadWindow(t *testing.T) *aheadWindow {
	t.Helper()
	ctx := context.Background()
	a := &aheadWindow{wdir: t.TempDir(), rdir: t.TempDir()}
	a.w = checked(t, mustOpen(t, a.wdir))
	a.r = checked(t, mustOpen(t, a.rdir))
	a.recs = vocabularyRecords(t, "acme", "a", 2*state.CheckpointLag, 7)
	a.checkpoint = func(dir string) string { return storagetest.ReadManifest(t, dir).Checkpoint }
	a.commitChunk = func(also ...*Engine) {
		t.Helper()
		_, err := a.w.Ingest(ctx, connectors.Records(a.recs[a.next:a.next+1]), IngestOptions{})
		require.NoError(t, err)
		a.next++
		for _, e := range append([]*Engine{a.r}, also...) {
			require.NoError(t, applyBody(ctx, e, committedEntry(t, a.wdir, committedState(a.w).Gen)), "generation %d", committedState(a.w).Gen)
		}
	}
	for range state.CheckpointLag + 1 {
		a.commitChunk()
	}
	require.Equal(t, storage.CheckpointName(1), a.checkpoint(a.wdir), "the first commit wrote one, the next %d kept it", state.CheckpointLag)
	_, err := os.Stat(filepath.Join(a.wdir, storage.CheckpointName(int64(state.CheckpointLag+1))))
	require.ErrorIs(t, err, os.ErrNotExist)
	a.commitChunk()
	a.started = committedState(a.w).Gen
	require.Equal(t, int64(state.CheckpointLag+2), a.started)
	require.Equal(t, storage.CheckpointName(1), a.checkpoint(a.wdir), "the commit past the lag keeps it, and starts one")
	return a
}

// failNamingCommit commits up to the commit that names the checkpoint
// written ahead, whose rename adopting that file then fails (a full disk):
// the commit fails.
func (a *aheadWindow) failNamingCommit(t *testing.T) {
	t.Helper()
	for range state.CheckpointLag / 2 {
		a.commitChunk()
	}
	a.w.ahead.Wait()
	ahead := temps(t, a.wdir)
	require.Len(t, ahead, 1)
	a.w.store.Hooks.BeforeRename = func(tmp string) error {
		if tmp == ahead[0] {
			return fmt.Errorf("no space left on device (test, %s)", filepath.Base(tmp))
		}
		return nil
	}
	_, err := a.w.Ingest(context.Background(), connectors.Records(a.recs[a.next:a.next+1]), IngestOptions{})
	require.ErrorContains(t, err, "no space left on device")
	a.w.store.Hooks.BeforeRename = nil
}

// holdNextWriter calls commit (a commit on a.w) until the next checkpoint
// writer a.w starts has written its file, and holds that writer there
// (state.Then.Written) until release is called.
func (a *aheadWindow) holdNextWriter(commit func(also ...*Engine)) (release func()) {
	written, goOn := make(chan struct{}), make(chan struct{})
	a.w.ahead.Then.Written = func() {
		close(written)
		<-goOn
	}
	for held := false; !held; {
		commit()
		select {
		case <-written:
			held = true
		default:
		}
	}
	a.w.ahead.Then.Written = nil
	return sync.OnceFunc(func() { close(goOn) })
}

// temps lists the temp files in dir (a checkpoint's written ahead).
func temps(t *testing.T, dir string) []string {
	t.Helper()
	all, err := aheadTemps(dir)
	require.NoError(t, err)
	return all
}

// aheadTemps lists the temp files of checkpoints and delta levels in dir.
func aheadTemps(dir string) ([]string, error) {
	whole, err := filepath.Glob(filepath.Join(dir, ".state-*"))
	if err != nil {
		return nil, err
	}
	deltas, err := filepath.Glob(filepath.Join(dir, ".delta-*"))
	return append(whole, deltas...), err
}

// TestCheckpointWrittenAhead (issue 30): the commit past the checkpoint's
// lag writes no checkpoint; its state's is written ahead, and the commit
// past half the lag after it names it. A writer and a replica name the same
// file at the same generation, byte for byte, and so do two replicas that
// closed and opened again between the two commits, which never wrote it
// ahead from the generation that started it: one that commits after it
// opened again writes it ahead from that commit on (state.Window), and one
// whose first commit after it opened is the one that names it writes it in
// that commit. Check is clean in the window (the file being written is no
// stray) and after; packs at every generation are the same on the four.
func TestCheckpointWrittenAhead(t *testing.T) {
	ctx := context.Background()
	a := newAheadWindow(t)
	qdir, q2dir := t.TempDir(), t.TempDir()
	q, q2 := checked(t, mustOpen(t, qdir)), checked(t, mustOpen(t, q2dir))
	for g := int64(1); g <= committedState(a.w).Gen; g++ {
		require.NoError(t, applyBody(ctx, q, committedEntry(t, a.wdir, g)))
		require.NoError(t, applyBody(ctx, q2, committedEntry(t, a.wdir, g)))
	}
	rep, err := a.w.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "in the window: %v", rep.Problems)

	for i := range state.CheckpointLag / 2 {
		a.commitChunk(q, q2)
		require.Equal(t, storage.CheckpointName(1), a.checkpoint(a.wdir), "commit %d after the one that started it", i+1)
		require.Equal(t, storage.CheckpointName(1), a.checkpoint(qdir))
		if i == state.CheckpointLag/4 {
			require.NoError(t, q.Close())
			q = checked(t, mustOpen(t, qdir))
			require.Equal(t, a.started, state.Window(q.store), "the log says which generation's checkpoint is due")
		}
	}
	require.NoError(t, q2.Close())
	q2 = checked(t, mustOpen(t, q2dir))
	require.Empty(t, temps(t, q2dir), "a replica that opened again and committed nothing since wrote none ahead")
	q.ahead.Wait()
	qAhead := temps(t, qdir)
	require.Len(t, qAhead, 1, "the replica that opened again writes it ahead from its next commit")
	a.w.ahead.Wait()
	ahead := temps(t, a.wdir)
	require.Len(t, ahead, 1, "the writer wrote it ahead")
	// renames records the temp files e's commit renames into place.
	renames := func(e *Engine) *[]string {
		var renamed []string
		e.store.Hooks.BeforeRename = func(tmp string) error {
			renamed = append(renamed, tmp)
			return nil
		}
		return &renamed
	}
	renamed, qRenamed, q2Renamed := renames(a.w), renames(q), renames(q2)
	a.commitChunk(q, q2)
	for _, e := range []*Engine{a.w, q, q2} {
		e.store.Hooks.BeforeRename = nil
	}
	for _, tc := range []struct {
		who     string
		renamed []string
		ahead   string
	}{{"the writer", *renamed, ahead[0]}, {"the replica that opened again in the window", *qRenamed, qAhead[0]}} {
		require.Contains(t, tc.renamed, tc.ahead, "%s: its commit renamed the file written ahead, and wrote no other", tc.who)
		for _, tmp := range tc.renamed {
			require.False(t, tmp != tc.ahead && strings.HasPrefix(filepath.Base(tmp), ".state-"), "%s: a checkpoint written in the commit: %s", tc.who, tmp)
		}
	}
	require.True(t, slices.ContainsFunc(*q2Renamed, func(tmp string) bool { return strings.HasPrefix(filepath.Base(tmp), ".state-") }),
		"the replica whose naming commit was its first writes it in that commit: %q", *q2Renamed)
	named := storage.CheckpointName(a.started)
	for _, dir := range []string{a.wdir, a.rdir, qdir, q2dir} {
		require.Equal(t, named, a.checkpoint(dir), "%s: the commit past half the lag after it names it", dir)
		require.Empty(t, temps(t, dir))
		require.NoFileExists(t, filepath.Join(dir, storage.CheckpointName(1)), "and the old one is gone")
	}
	require.Equal(t, a.started, committedState(a.w).Base, "the writer reads it back (Engine.rebase)")
	require.Equal(t, a.started, q.st.Base, "and so does the replica that wrote it ahead after opening again")
	require.Equal(t, a.started, q2.st.Base, "and the one that wrote it in its naming commit")
	inMemory := len(committedState(a.w).Chunks)
	requireSameFiles(t, a.wdir, a.rdir, "the replica")
	requireSameFiles(t, a.wdir, qdir, "the replica that reopened in the window")
	requireSameFiles(t, a.wdir, q2dir, "the replica that reopened before the naming commit")

	var reqs []Request
	for g := int64(1); g <= committedState(a.w).Gen; g += 7 {
		reqs = append(reqs, Request{Question: a.recs[g].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5, Generation: g})
	}
	want := packsOf(t, a.w, reqs)
	require.Equal(t, want, packsOf(t, a.r, reqs))
	require.Equal(t, want, packsOf(t, q, reqs))
	require.Equal(t, want, packsOf(t, q2, reqs))
	require.NoError(t, a.w.Close())
	a.w = checked(t, mustOpen(t, a.wdir))
	require.Equal(t, want, packsOf(t, a.w, reqs), "reopened from the named checkpoint")
	require.Equal(t, a.started, committedState(a.w).Base)
	require.Len(t, committedState(a.w).Chunks, inMemory, "the writer held in memory what Open holds")
}

// TestCheckpointAheadDropped (issue 30): a checkpoint written ahead that no
// commit will name leaves nothing behind: a purge in the window writes its
// own checkpoint, as a replica applying it does; Close in the window
// removes the file, and so does the Close of a process that opened in the
// window and started writing it at its first commit; a commit whose write fails before it adopts the file
// at the rename that adopts it removes it too, and the retry writes it.
func TestCheckpointAheadDropped(t *testing.T) {
	ctx := context.Background()
	t.Run("purge", func(t *testing.T) {
		a := newAheadWindow(t)
		_, err := a.w.Purge(ctx, []string{a.recs[3].Chunk.ID}, "erasure request")
		require.NoError(t, err)
		require.NoError(t, applyBody(ctx, a.r, committedEntry(t, a.wdir, committedState(a.w).Gen)))
		require.Equal(t, storage.CheckpointName(committedState(a.w).Gen), a.checkpoint(a.wdir), "the purge writes its own")
		require.Empty(t, temps(t, a.wdir), "and the one written ahead is gone")
		requireSameFiles(t, a.wdir, a.rdir, "after the purge")
		for range state.CheckpointLag / 2 {
			a.commitChunk()
		}
		require.Equal(t, storage.CheckpointName(a.started+1), a.checkpoint(a.wdir), "no commit names the one dropped")
		requireSameFiles(t, a.wdir, a.rdir, "after the purge's window")
	})
	t.Run("close", func(t *testing.T) {
		a := newAheadWindow(t)
		require.NoError(t, a.w.Close())
		require.Empty(t, temps(t, a.wdir), "Close removes it")
		a.w = checked(t, mustOpen(t, a.wdir))
		a.commitChunk() // opened in the window, its first commit starts writing it ahead (state.Window)
		require.NoError(t, a.w.Close())
		require.Empty(t, temps(t, a.wdir), "Close removes what a process that opened in the window started")
		a.w = checked(t, mustOpen(t, a.wdir))
		for range state.CheckpointLag / 2 {
			a.commitChunk()
		}
		require.Equal(t, storage.CheckpointName(a.started), a.checkpoint(a.wdir), "named after the reopenings")
		requireSameFiles(t, a.wdir, a.rdir, "after the reopening")
	})
	t.Run("failed commit", func(t *testing.T) {
		a := newAheadWindow(t)
		a.failNamingCommit(t)
		require.Empty(t, temps(t, a.wdir), "the failed commit removed the file written ahead")
		require.NoFileExists(t, filepath.Join(a.wdir, storage.CheckpointName(a.started)))
		require.NoFileExists(t, filepath.Join(a.wdir, storage.PendingName))
		require.Equal(t, storage.CheckpointName(1), a.checkpoint(a.wdir))
		a.commitChunk()
		require.Equal(t, storage.CheckpointName(a.started), a.checkpoint(a.wdir), "the retry writes it")
		requireSameFiles(t, a.wdir, a.rdir, "after the retry")
	})
}

// aheadCrashEnv names the index directory and the kill point of the
// child process TestKillInTheCheckpointWindow kills.
const aheadCrashEnv = "EVPACK_AHEADCRASH_CHILD"

// retractions returns the retractions of chunks a-<from> to a-<to-1>.
func retractions(from, to int) []connectors.Record {
	var out []connectors.Record
	for i := from; i < to; i++ {
		out = append(out, retraction(fmt.Sprintf("a-%04d", i)))
	}
	return out
}

// aheadCrashChild opens the index in dir (arg is "dir|point"), which
// TestKillInTheCheckpointWindow left at state.LagFacts facts after its
// checkpoint, commits one retraction more, which starts a checkpoint
// written ahead, and stops at point for the parent to kill it: "written"
// (the checkpoint written ahead, a temp file), "adopting" (in the commit
// past half the lag after it, which names it, at the rename of that temp
// file) or "committed" (that commit's manifest written, its record not yet
// removed). It returns only on an error.
func aheadCrashChild(arg string) error {
	dir, point, _ := strings.Cut(arg, "|")
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	stop := func(at string) {
		fmt.Printf("at %s\n", at)
		select {} // the parent kills the process here
	}
	half := state.LagFacts / 2
	if _, err := e.Ingest(ctx, connectors.Records(retractions(state.LagFacts, state.LagFacts+1)), IngestOptions{}); err != nil {
		return err
	}
	e.ahead.Wait()
	if point == "written" {
		stop(point)
	}
	if _, err := e.Ingest(ctx, connectors.Records(retractions(state.LagFacts+1, state.LagFacts+1+half/2)), IngestOptions{}); err != nil {
		return err
	}
	ahead, err := aheadTemps(dir)
	if err != nil || len(ahead) != 1 {
		return fmt.Errorf("not one checkpoint written ahead: %q (%v)", ahead, err)
	}
	switch point {
	case "adopting":
		e.store.Hooks.BeforeRename = func(tmp string) error {
			if strings.HasPrefix(filepath.Base(tmp), ".state-") || strings.HasPrefix(filepath.Base(tmp), ".delta-") {
				if tmp != ahead[0] {
					stop("a checkpoint written in the commit, not the one written ahead")
				}
				stop(point)
			}
			return nil
		}
	case "committed":
		e.store.Hooks.AfterManifest = func() { stop(point) }
	default:
		return fmt.Errorf("no kill point %q", point)
	}
	_, err = e.Ingest(ctx, connectors.Records(retractions(state.LagFacts+1+half/2, state.LagFacts+half+2)), IngestOptions{})
	return fmt.Errorf("the ingest returned (%v) instead of stopping at %s", err, point)
}

// TestKillInTheCheckpointWindow kills (SIGKILL) a process that started a
// checkpoint written ahead (generation 4, the commit past state.LagFacts),
// at three points: the file written ahead (a temp file), the commit that
// names it at the rename of that file, and that commit's manifest written.
// Open removes the temp file and rolls the commit back (the first two) or
// finishes it (the third); Check finds nothing amiss and no stray; and the
// commit that names the checkpoint is made again by a process that opened
// after the commit that started it: from the file its first commit in the
// window started writing ahead (the first point), or, where that is the
// naming commit itself, written then.
func TestKillInTheCheckpointWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 6,146 chunks and retracts each; run without -short")
	}
	ctx := context.Background()
	base := t.TempDir()
	e := mustOpen(t, base)
	half := state.LagFacts / 2
	_, err := e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", state.LagFacts+half+2, 1)), IngestOptions{})
	require.NoError(t, err)
	for _, k := range []int{0, half} { // at most half the bound a commit, or it writes its own
		_, err = e.Ingest(ctx, connectors.Records(retractions(k, k+half)), IngestOptions{})
		require.NoError(t, err)
	}
	require.Equal(t, storage.CheckpointName(1), storagetest.ReadManifest(t, base).Checkpoint)
	require.NoError(t, e.Close())

	for _, tc := range []struct {
		point, reason string
		gen           int64 // after Open
	}{
		{"written", "the commit that started it stays; the temp file goes", 4},
		{"adopting", "before the commit point: rolled back, the file written ahead removed", 5},
		{"committed", "after the commit point: kept, the checkpoint named", 6},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
			require.Equal(t, "at "+tc.point, killAtLine(t, aheadCrashEnv+"="+dir+"|"+tc.point, "at "))
			if tc.point != "committed" { // adopted by then: renamed
				require.NotEmpty(t, temps(t, dir), "killed with the file written ahead a temp file")
			}

			e := checked(t, mustOpen(t, dir))
			require.Equal(t, tc.gen, committedState(e).Gen, tc.reason)
			require.Empty(t, temps(t, dir), "Open removes the temp file")
			require.NoFileExists(t, filepath.Join(dir, storage.PendingName), tc.reason)
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%q", rep.Problems)
			require.Empty(t, rep.Strays)
			if tc.gen < 6 {
				require.Equal(t, storage.CheckpointName(1), storagetest.ReadManifest(t, dir).Checkpoint)
				require.NoFileExists(t, filepath.Join(dir, storage.CheckpointName(4)), tc.reason)
				if tc.gen == 4 {
					_, err = e.Ingest(ctx, connectors.Records(retractions(state.LagFacts+1, state.LagFacts+1+half/2)), IngestOptions{})
					require.NoError(t, err)
					e.ahead.Wait()
					require.Len(t, temps(t, dir), 1, "opened in the window, its first commit there writes it ahead")
				}
				_, err = e.Ingest(ctx, connectors.Records(retractions(state.LagFacts+1+half/2, state.LagFacts+half+2)), IngestOptions{})
				require.NoError(t, err)
			}
			m := storagetest.ReadManifest(t, dir)
			require.Equal(t, storage.DeltaName(4), m.Delta, "named by the commit past half the lag: a delta level, as the window holds facts alone")
			require.Equal(t, storage.CheckpointName(1), m.Checkpoint)
			rep, err = e.CheckIndex(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%q", rep.Problems)
		})
	}
}

// TestCheckpointNamedPastADamagedOne (issue 30): an engine with a dense
// leg reads no checkpoint at Open, so a damaged one is first read when a
// process that reopened in the window builds the checkpoint its commit
// names from it (state.OpenStateAt). The plan names that file whatever
// this process can read, so the commit builds it from the batch files
// alone instead of failing at every try; Check then finds it right.
func TestCheckpointNamedPastADamagedOne(t *testing.T) {
	ctx := context.Background()
	vecs := testVectors(t)
	dir := t.TempDir()
	e := mustOpenWith(t, dir, Options{Embedder: testEmbedder(t, vecs)})
	recs := vocabularyRecords(t, "acme", "a", 2*state.CheckpointLag, 7)
	next := 0
	commit := func() {
		t.Helper()
		_, err := e.Ingest(ctx, connectors.Records(recs[next:next+1]), IngestOptions{})
		require.NoError(t, err, "generation %d", committedState(e).Gen+1)
		next++
	}
	for range state.CheckpointLag + 2 { // the last starts one
		commit()
	}
	started := committedState(e).Gen
	require.Equal(t, storage.CheckpointName(1), storagetest.ReadManifest(t, dir).Checkpoint)
	require.NoError(t, e.Close())
	path := filepath.Join(dir, storage.CheckpointName(1))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw[100] ^= 0xff // in the head: its format and analyzers still read right
	require.NoError(t, os.WriteFile(path, raw, 0o644))

	e = checked(t, mustOpenWith(t, dir, Options{Embedder: testEmbedder(t, vecs)}))
	for range state.CheckpointLag/2 + 1 {
		commit()
	}
	require.Equal(t, storage.CheckpointName(started), storagetest.ReadManifest(t, dir).Checkpoint, "named, built from the batch files")
	require.NoFileExists(t, path, "the damaged one went with the commit")
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
}

// TestCheckpointReadBackAhead (issue 30): the writer of a checkpoint ahead
// reads it back once written (state.Read), so the commit that names it
// makes the engine's state from that and the batch files after it, not
// from the file again. The test garbles the named file once the manifest
// names it (a file of its own put in its place; what was read back maps
// the file written): read from disk, the state stays the one in memory
// (Base unchanged), as it does where the naming commit wrote the file
// itself, after a commit that failed at the rename that adopts the file
// let go of what was read back. The state read back encodes to the same
// checkpoint as the one Open reads from the file, and packs agree with
// the replica's and after reopening.
func TestCheckpointReadBackAhead(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 11)...)
	// garbleNamed garbles the checkpoint a commit of a.w names, once its
	// manifest names it, and returns what puts it back.
	garbleNamed := func() (restore func()) {
		saved := filepath.Join(t.TempDir(), "named")
		var named string
		before := a.checkpoint(a.wdir)
		a.w.store.Hooks.AfterManifest = func() {
			if a.checkpoint(a.wdir) == before {
				return // not the naming commit
			}
			named = filepath.Join(a.wdir, a.checkpoint(a.wdir))
			require.NoError(t, os.Link(named, saved))
			garbled := named + ".garbled"
			require.NoError(t, os.WriteFile(garbled, []byte("evpack-state/garbled\n"), 0o644))
			require.NoError(t, os.Rename(garbled, named))
		}
		return func() {
			a.w.store.Hooks.AfterManifest = nil
			require.NotEmpty(t, named, "no commit named a checkpoint")
			require.NoError(t, os.Rename(saved, named))
		}
	}

	a.failNamingCommit(t)
	require.Empty(t, temps(t, a.wdir))
	require.Zero(t, a.w.ahead.TakeRead(), "the failed commit let go of what was read back")
	restore := garbleNamed()
	a.commitChunk() // the retry names it, written in that commit and read back from disk
	restore()
	require.Equal(t, storage.CheckpointName(a.started), a.checkpoint(a.wdir))
	require.Equal(t, int64(1), committedState(a.w).Base, "read back from the garbled file, the state stays the one in memory")
	requireSameFiles(t, a.wdir, a.rdir, "after the retry")

	// The next window: the commit past the lag after that checkpoint
	// writes the next one ahead and reads it back.
	// The window is read from the manifest (state.Window), not from the
	// writer's temp file, which appears when its goroutine gets to it: on
	// a busy machine, after the next commit.
	for state.Window(a.w.store) == 0 {
		a.commitChunk()
	}
	started := state.Window(a.w.store)
	a.w.ahead.Wait()
	restore = garbleNamed()
	for a.checkpoint(a.wdir) == storage.CheckpointName(a.started) {
		a.commitChunk()
	}
	restore()
	require.Equal(t, storage.CheckpointName(started), a.checkpoint(a.wdir))
	require.Equal(t, started, committedState(a.w).Base, "made from what the writer read back, not from the garbled file")
	requireSameFiles(t, a.wdir, a.rdir, "after the second window")

	encode := func(e *Engine) []byte {
		t.Helper()
		f, err := state.CheckpointAhead(committedState(e), e.lex, nil, nil)
		require.NoError(t, err)
		return slices.Concat(f...)
	}
	inMemory := encode(a.w)
	var reqs []Request
	for g := int64(1); g <= committedState(a.w).Gen; g += 11 {
		reqs = append(reqs, Request{Question: a.recs[g].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5, Generation: g})
	}
	want := packsOf(t, a.w, reqs)
	require.Equal(t, want, packsOf(t, a.r, reqs), "the replica")
	require.NoError(t, a.w.Close())
	a.w = checked(t, mustOpen(t, a.wdir))
	require.Equal(t, started, committedState(a.w).Base)
	require.Equal(t, inMemory, encode(a.w), "the state read back ahead is the one Open reads from the file")
	require.Equal(t, want, packsOf(t, a.w, reqs), "reopened")
}

// TestCheckpointReadBackCatchesUp: once the writer has read its file back,
// it adds the batches committed while it wrote (state.Read.catchUp), and
// each commit after adds its own (AheadSlot.CatchUp), so the commit that
// names the file adds only its own batch to that state. The writer is held
// once its file is written while five commits go on; from then on, before
// each commit, the batch files committed after the checkpoint's
// generation are moved away: a naming commit that read any of them would
// fail to read its state back and keep the one in memory.
func TestCheckpointReadBackCatchesUp(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 11)...)
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	named := committedState(a.w).Gen

	release := a.holdNextWriter(a.commitChunk)
	ahead := temps(t, a.wdir)
	require.Len(t, ahead, 1)
	var started int64
	for g := named + 1; g <= committedState(a.w).Gen; g++ {
		if strings.HasPrefix(filepath.Base(ahead[0]), "."+storage.CheckpointName(g)) {
			started = g
		}
	}
	require.NotZero(t, started, "the file written ahead, %s, is of none of generations %d..%d", ahead[0], named+1, committedState(a.w).Gen)
	for range 5 {
		a.commitChunk()
	}
	release()
	a.w.ahead.Wait()

	aside := t.TempDir()
	var moved []string
	for a.checkpoint(a.wdir) != storage.CheckpointName(started) {
		m := storagetest.ReadManifest(t, a.wdir)
		for _, b := range m.Batches[started+int64(len(moved)):] {
			moved = append(moved, b.File)
			require.NoError(t, os.Rename(filepath.Join(a.wdir, storage.ChunksDir, b.File), filepath.Join(aside, b.File)))
		}
		a.commitChunk()
	}
	for _, f := range moved {
		require.NoError(t, os.Rename(filepath.Join(aside, f), filepath.Join(a.wdir, storage.ChunksDir, f)))
	}
	require.Greater(t, committedState(a.w).Gen, started+6, "commits after the writer was done")
	require.Equal(t, started, committedState(a.w).Base, "the naming commit read back batch files the writer had added (%d of them)", len(moved))
	requireSameFiles(t, a.wdir, a.rdir, "after the window")

	var reqs []Request
	for g := int64(1); g <= committedState(a.w).Gen; g += 13 {
		reqs = append(reqs, Request{Question: a.recs[g].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5, Generation: g})
	}
	want := packsOf(t, a.w, reqs)
	require.Equal(t, want, packsOf(t, a.r, reqs), "the replica")
	require.NoError(t, a.w.Close())
	a.w = checked(t, mustOpen(t, a.wdir))
	require.Equal(t, started, committedState(a.w).Base)
	require.Equal(t, want, packsOf(t, a.w, reqs), "reopened")
}

// TestHistoryBesideAWriterReadingBack: the first History after a rebase
// unfolds the state and closes the rows a checkpoint's writer may read
// (AheadSlot.WaitRows); once the writer's file is written it reads only
// its own file, so History does not wait for its read-back and catch-up.
// The writer is held after its write until History has returned.
func TestHistoryBesideAWriterReadingBack(t *testing.T) {
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 11)...)
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	require.NotNil(t, committedState(a.w).Rows, "rebased onto the checkpoint it named")
	release := a.holdNextWriter(a.commitChunk)
	defer release()
	done := make(chan error, 1)
	go func() { _, err := a.w.History(); done <- err }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a watchdog, not a wait: History returns at once
		t.Fatal("History waited for a writer whose file was written")
	}
	require.Nil(t, committedState(a.w).Rows, "History unfolded the state")
}
