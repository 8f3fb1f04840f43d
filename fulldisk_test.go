package evpack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// page is tmpfs's unit of allocation.
const page = 4096

func pages(n int64) int64 { return (n + page - 1) / page * page }

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it; it is unmounted when the test ends.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs needs root or CAP_SYS_ADMIN: %v", err)
		}
		require.NoError(t, err)
	}
	// Detached: an engine that hung on the full disk may still hold files.
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// freeBytes is what dir's file system has left.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// fill allocates a file in dir that leaves exactly free bytes on its file
// system, and returns its path. tmpfs charges a large file a few pages
// beyond its size (the kernel's bookkeeping), so the file is grown to the
// target in steps and, if it overshoots, truncated back.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	require.NoError(t, err)
	defer f.Close()
	var size int64
	grow := func(d int64) {
		for _, try := range []int64{d, d - 16*page, d - 4*page, d - page} {
			if try <= 0 {
				continue
			}
			err := syscall.Fallocate(int(f.Fd()), 0, size, try)
			if err == nil {
				size += try
				return
			}
			require.ErrorIs(t, err, syscall.ENOSPC)
		}
	}
	for range 8 {
		got := freeBytes(t, dir)
		switch {
		case got > free:
			grow(got - free)
		case got < free:
			size -= free - got
			require.NoError(t, f.Truncate(size))
		default:
			return name
		}
	}
	require.Equal(t, free, freeBytes(t, dir), "cannot leave exactly %d bytes free", free)
	return name
}

// within runs f and fails the test, with every goroutine's stack, if it
// has not returned after d: a full disk must give an error, not a hang.
func within(t *testing.T, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not return within %v:\n%s", what, d, buf)
	}
}

// bigBatch is a batch of 32 chunks of about 25 KB of varied words each
// (with -short, 8 of about 10 KB: the race detector makes bleve slow).
func bigBatch() []connectors.Record {
	rng := rand.New(rand.NewPCG(48, 40))
	day := asof.MustDate("2025-06-01").Start()
	n, size := 32, 3500
	if quick() { // CI sets EVPACK_LONG_TESTS=1
		n, size = 8, 1500
	}
	recs := make([]connectors.Record, n)
	for c := range recs {
		words := make([]string, size)
		for i := range words {
			words[i] = crashWords[rng.IntN(len(crashWords))] + crashWords[rng.IntN(len(crashWords))][:2]
		}
		recs[c] = connectors.Record{Chunk: evidence.Chunk{ID: fmt.Sprintf("big-%02d", c), DocID: "big",
			Text: strings.Join(words, " "), SourceURL: "https://example.test/big", Connector: "big",
			RetrievedAt: day, Anchor: asof.Anchor{At: day, Field: "retrieved_at"}}}
	}
	return recs
}

// failedIn names the step of a commit that err comes from.
func failedIn(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, retrieve.ErrLexical):
		return "lexical index (bleve)"
	case strings.Contains(s, storage.PendingName):
		return "commit record"
	case strings.Contains(s, ".analysis"):
		return "analysis file"
	case strings.Contains(s, "state-"):
		return "checkpoint"
	case strings.Contains(s, storage.ChunksDir+"/"):
		return "batch file"
	case strings.Contains(s, "dense-"):
		return "dense file"
	case strings.Contains(s, "graph-"):
		return "graph file"
	case strings.Contains(s, storage.ManifestName):
		return "manifest"
	}
	return "elsewhere"
}

// fullDiskIndex makes an index of the test corpus in dir, in one batch and
// so one segment, and reopens it. Of several segments bleve would merge some
// at Close and remove their files after the next Open, in a goroutine of
// its own: the free space would change under the test.
func fullDiskIndex(t *testing.T, dir string, opts Options) (*Engine, map[string][]byte) {
	t.Helper()
	e, err := Open(dir, opts)
	require.NoError(t, err)
	_, err = e.Ingest(context.Background(), connectors.Records(corpusRecords(t)), IngestOptions{})
	require.NoError(t, err)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	e, err = Open(dir, opts)
	require.NoError(t, err)
	return e, want
}

// diskUse is what committing bigBatch takes, measured on a roomy tmpfs.
type diskUse struct {
	record, batch, analysis, checkpoint, dense, graph, total int64 // in whole pages
}

func measureBigBatch(t *testing.T, opts Options) diskUse {
	t.Helper()
	mnt := mountTmpfs(t, 256<<20)
	dir := filepath.Join(mnt, "index")
	e, _ := fullDiskIndex(t, dir, opts)
	before := freeBytes(t, mnt)
	var rec []byte
	e.store.Hooks.BeforeManifest = func() error {
		var err error
		rec, err = os.ReadFile(filepath.Join(dir, storage.PendingName))
		return err
	}
	_, err := e.Ingest(context.Background(), connectors.Records(bigBatch()), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	size := func(name string) int64 {
		fi, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		require.NoError(t, err)
		return pages(fi.Size())
	}
	gen := e.st.Gen
	return diskUse{record: pages(int64(len(rec))), batch: size(storage.ChunksDir + "/" + storage.BatchName(gen)),
		analysis:   size(storage.ChunksDir + "/" + storage.AnalysisName(gen)),
		checkpoint: size(storage.CheckpointName(gen)),
		dense:      size(fmt.Sprintf("dense-%08d.bin", gen)), graph: size(fmt.Sprintf("graph-%08d.bin", gen)),
		total: before - freeBytes(t, mnt)}
}

// TestFullDisk commits a large batch to an index on a file system with
// little room left, placed so that the commit runs out of space at
// different steps. Ingest must return an error (not panic, not hang), the
// engine must serve the index as it was or refuse with ErrBroken, and once
// there is room again the index must open as it was and take the batch.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	mountTmpfs(t, page) // skips unless this process may mount
	dense := func(t *testing.T) Options {
		return Options{Embedder: &countingFree{Embedder: testEmbedder(t, testVectors(t))}, DenseIndex: "hnsw"}
	}
	plain := func(*testing.T) Options { return Options{} }
	use := map[bool]diskUse{false: measureBigBatch(t, plain(t)), true: measureBigBatch(t, dense(t))}
	t.Logf("committing the big batch takes %+v bytes without dense vectors, %+v with", use[false], use[true])

	cases := []struct {
		name, reason string
		dense        bool
		free         func(u diskUse) int64
		want         []string // the steps that may fail; none: any, or none at all
		short        bool     // run with -short too
	}{
		{"no room at all", "the commit record's write fails, and its error is the one returned (the batch file, written beside it, fails too)",
			false, func(diskUse) int64 { return 0 }, []string{"commit record"}, true},
		{"room for the record", "the batch file is written beside the record (commit.Write): whichever takes the page first, the other runs out",
			false, func(u diskUse) int64 { return u.record }, []string{"batch file", "commit record"}, false},
		{"room for the record and the batch file", "the batch's analysis file is written next",
			false, func(u diskUse) int64 { return u.record + u.batch }, []string{"analysis file"}, true},
		{"room for the record, the batch and its analysis", "a commit within the checkpoint's lag writes none (state.PlanCheckpoint): bleve persists the batch's segment next",
			false, func(u diskUse) int64 { return u.record + u.batch + u.analysis }, []string{"lexical index (bleve)"}, true},
		{"dense: room for the record, the batch, its analysis and the checkpoint", "the stored vectors come after the batch's files",
			true, func(u diskUse) int64 { return u.record + u.batch + u.analysis + u.checkpoint }, []string{"dense file"}, true},
		{"dense: room for the files", "with every file written, bleve's segment runs out",
			true, func(u diskUse) int64 { return u.record + u.batch + u.analysis + u.checkpoint + u.dense + u.graph }, []string{"lexical index (bleve)"}, false},
		{"half of bleve's share", "somewhere in bleve's segment or its root file",
			false, func(u diskUse) int64 {
				files := u.record + u.batch + u.analysis + u.checkpoint
				return files + pages((u.total-files)/2)
			}, nil, false},
		{"all but the last page", "the last write of the commit (bleve's or the manifest) runs out",
			false, func(u diskUse) int64 { return u.total - page }, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if quick() && !tc.short {
				t.Skip("-short, or EVPACK_LONG_TESTS=1 unset (CI sets it)")
			}
			opts := plain(t)
			if tc.dense {
				opts = dense(t)
			}
			mnt := mountTmpfs(t, 64<<20)
			dir := filepath.Join(mnt, "index")
			e, want := fullDiskIndex(t, dir, opts)
			gen := e.st.Gen
			free := tc.free(use[tc.dense])
			filler := fill(t, mnt, free)

			var err error
			within(t, "Ingest on a full disk", time.Minute, func() { _, err = e.Ingest(ctx, connectors.Records(bigBatch()), IngestOptions{}) })
			if err == nil {
				require.Empty(t, tc.want, "%s: the commit succeeded with %d bytes free", tc.reason, free)
				t.Logf("%d KiB free: the commit fitted", free/1024)
				require.NoError(t, e.Check())
				require.NoError(t, e.Close())
				require.NoError(t, os.Remove(filler))
				e, err = Open(dir, opts)
				require.NoError(t, err)
				checked(t, e)
				require.Equal(t, gen+1, e.st.Gen)
				return
			}
			where := failedIn(err)
			require.True(t, errors.Is(err, syscall.ENOSPC) || errors.Is(err, retrieve.ErrLexical), "neither ENOSPC nor ErrLexical: %v", err)
			if tc.want != nil {
				require.Contains(t, tc.want, where, "%s: %v", tc.reason, err)
			}
			state := "serves the index as it was"
			if errors.Is(err, ErrBroken) {
				state = "refuses work (ErrBroken)"
				_, qerr := e.Query(ctx, Request{Question: "records", AsOf: asof.MustDate("2026-01-01")})
				require.ErrorIs(t, qerr, ErrBroken)
			} else {
				require.Equal(t, gen, e.st.Gen)
				require.NoError(t, e.Check())
				require.Equal(t, want, packsFor(t, e))
			}
			t.Logf("%d KiB free: failed in the %s; the engine %s: %v", free/1024, where, state, err)

			// Room again: the index is as it was, and takes the batch.
			require.NoError(t, os.Remove(filler))
			within(t, "Close after a full disk", time.Minute, func() { err = e.Close() })
			require.NoError(t, err)
			e, err = Open(dir, opts)
			require.NoError(t, err)
			checked(t, e)
			require.Equal(t, gen, e.st.Gen)
			require.NoFileExists(t, filepath.Join(dir, storage.PendingName))
			require.NoError(t, e.Check())
			require.Equal(t, want, packsFor(t, e))
			rep, err := e.Ingest(ctx, connectors.Records(bigBatch()), IngestOptions{})
			require.NoError(t, err)
			require.Equal(t, len(bigBatch()), rep.Added)
			require.NoError(t, e.Check())
		})
	}
}

// TestFullDiskDuringMerge runs out of space while bleve merges segments:
// Merge must return an error, the engine keep serving the index as it was
// (a merge changes no content), and after room is made the index reopen as
// it was.
//
// Known to fail (so it runs only with EVPACK_FULLDISK_MERGE=1): Merge never
// returns while the disk is full. bleve's scorch.ForceMerge hands the merge
// to its merger goroutine and waits for it to close a done channel; the
// merger, on an error, keeps a ForceMerge request to retry it
// (mergerLoop, merge.go "the error has been reported, so the request is not
// retried" applies only with a mergeDone channel in the context), so it
// retries the failing merge in a loop, writing and removing a partial
// segment, until space appears or the index is closed; cancelling the
// context makes ForceMerge return nil, as if the merge had run.
func TestFullDiskDuringMerge(t *testing.T) {
	if os.Getenv("EVPACK_FULLDISK_MERGE") == "" {
		t.Skip("known bug: Merge hangs on a full disk (bleve's ForceMerge retries forever); set EVPACK_FULLDISK_MERGE=1 to run")
	}
	ctx := context.Background()
	mnt := mountTmpfs(t, 64<<20)
	dir := filepath.Join(mnt, "index")
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	big := bigBatch()
	for _, part := range [][]connectors.Record{corpusRecords(t), big[:16], big[16:]} { // three segments
		_, err := e.Ingest(ctx, connectors.Records(part), IngestOptions{})
		require.NoError(t, err)
	}
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)

	// No room at all (bleve may free a few pages of its own meanwhile; the
	// merged segment needs far more).
	filler := fill(t, mnt, 0)

	within(t, "Merge on a full disk", 20*time.Second, func() { err = e.Merge(ctx) })
	require.ErrorIs(t, err, retrieve.ErrLexical)
	t.Logf("merge on a full disk: %v", err)
	require.NoError(t, e.Check())
	require.Equal(t, want, packsFor(t, e))

	require.NoError(t, os.Remove(filler))
	within(t, "Close after a full disk", time.Minute, func() { err = e.Close() })
	require.NoError(t, err)
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, want, packsFor(t, e))
	require.NoError(t, e.Merge(ctx))
	require.Equal(t, want, packsFor(t, e))
}
