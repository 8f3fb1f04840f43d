//go:build unix

package evpack

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
)

// TestPartitionLockedByAnotherHolder: a lexical partition whose root.bolt
// another holder keeps locked (a tool that opened the partition directly)
// fails the requests that read it with ErrLocked naming it, after
// Options.LockWait, instead of waiting for ever; other requests are
// answered; Check says ErrLocked, not ErrCorrupt; once the holder lets go,
// the next requests are answered too.
func TestPartitionLockedByAnotherHolder(t *testing.T) {
	ctx := context.Background()
	dir, reqs, victim := lazyVictim(t)
	f, err := os.Open(filepath.Join(victim, "store", "root.bolt"))
	require.NoError(t, err)
	defer f.Close()
	// flock locks belong to an open file: this one contends with bleve's.
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	e, err := Open(dir, Options{LockWait: 20 * time.Millisecond})
	require.NoError(t, err, "Open reads no partition")
	defer e.Close()
	var failed []Request
	for _, r := range reqs {
		if _, err := e.Query(ctx, r); err != nil {
			require.ErrorIs(t, err, ErrLocked)
			require.Contains(t, err.Error(), victim)
			failed = append(failed, r)
		}
	}
	require.NotEmpty(t, failed, "some request reads the locked partition")
	require.Less(t, len(failed), len(reqs), "and some do not")
	err = e.Check()
	require.ErrorIs(t, err, ErrLocked, "Check: a lock is not damage")
	require.NotErrorIs(t, err, ErrCorrupt)

	require.NoError(t, f.Close(), "the holder lets go")
	for _, r := range failed {
		_, err := e.Query(ctx, r)
		require.NoError(t, err, "the lock's error is not kept")
	}
	require.NoError(t, e.Check())
}

// lockEveryPartition takes how's flock (syscall.LOCK_SH or LOCK_EX) on the
// root.bolt of every lexical partition of the index in dir, as another
// holder would, and returns the release (also run at the test's end).
func lockEveryPartition(t *testing.T, dir string, how int) (release func()) {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
	}
	t.Cleanup(release)
	for _, p := range parts {
		f, err := os.Open(filepath.Join(p, "store", "root.bolt"))
		require.NoError(t, err)
		held = append(held, f)
		require.NoError(t, syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB))
	}
	return release
}

// TestWriteMeetsALockedPartition: a commit whose chunks fall in partitions
// another holder keeps locked fails with ErrLocked after Options.LockWait,
// before anything is written, whether the holder reads them (a shared
// lock, which a write cannot share: the write's reopen for writing waits)
// or writes them (an exclusive one: the write's first, read-only, open
// waits). The commit is undone in the partitions this process opened for
// writing, not in the locked ones, so the engine keeps serving: the
// generation stays, the index checks clean, and once the holder lets go
// the same commit is made.
func TestWriteMeetsALockedPartition(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	e := mustOpen(t, base)
	_, err := e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 40, 3)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	same := vocabularyRecords(t, "acme", "b", 40, 3) // the same seed: the same anchor days, so the same partitions
	for _, tc := range []struct {
		name      string
		how       int
		readFirst bool // a request opens the partitions before the holder locks them
	}{
		{"a reader holds them, opened by a request first", syscall.LOCK_SH, true},
		{"a reader holds them", syscall.LOCK_SH, false},
		{"a writer holds them", syscall.LOCK_EX, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
			e, err := Open(dir, Options{LockWait: 20 * time.Millisecond})
			require.NoError(t, err)
			defer e.Close()
			req := Request{Question: same[0].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5}
			if tc.readFirst {
				_, err := e.Query(ctx, req)
				require.NoError(t, err)
			}
			release := lockEveryPartition(t, dir, tc.how)

			gen := e.st.Gen
			_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
			require.ErrorIs(t, err, ErrLocked)
			require.NotErrorIs(t, err, ErrBroken, "undone: the locked partitions were never written")
			require.Equal(t, gen, e.st.Gen, "nothing committed")
			if tc.how == syscall.LOCK_SH {
				_, err = e.Query(ctx, req)
				require.NoError(t, err, "the index still answers: the holder shares its lock with reads")
			}

			release()
			_, err = e.Query(ctx, req)
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
			require.NoError(t, err)
			require.Equal(t, gen+1, e.st.Gen)
			require.NoError(t, e.Check())
		})
	}
}

// TestPurgeMeetsALockedPartition: a purge whose chunks lie in a partition
// another holder keeps locked fails with ErrLocked, and its undo puts back
// only what it deleted, in the partitions it opened for writing: the
// engine keeps serving, and once the holder lets go the purge is made.
func TestPurgeMeetsALockedPartition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpen(t, dir)
	recs := vocabularyRecords(t, "acme", "a", 40, 3)
	_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	release := lockEveryPartition(t, dir, syscall.LOCK_EX)

	e, err = Open(dir, Options{LockWait: 20 * time.Millisecond})
	require.NoError(t, err)
	defer e.Close()
	gen := e.st.Gen
	ids := []string{recs[0].Chunk.ID, recs[1].Chunk.ID}
	_, err = e.Purge(ctx, ids, "erasure request")
	require.ErrorIs(t, err, ErrLocked)
	require.NotErrorIs(t, err, ErrBroken, "undone: the locked partitions were never written")
	require.Equal(t, gen, e.st.Gen, "nothing committed")

	release()
	_, err = e.Purge(ctx, ids, "erasure request")
	require.NoError(t, err)
	require.Equal(t, gen+1, e.st.Gen)
	require.NoError(t, e.Check())
}
