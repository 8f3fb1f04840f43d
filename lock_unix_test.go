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
// answered; once the holder lets go, the next requests are answered too.
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

	require.NoError(t, f.Close(), "the holder lets go")
	for _, r := range failed {
		_, err := e.Query(ctx, r)
		require.NoError(t, err, "the lock's error is not kept")
	}
	require.NoError(t, e.Check())
}

// TestWriteMeetsALockedPartition: a commit whose chunks fall in partitions
// another holder is reading (a shared lock, which a write cannot share)
// fails with ErrLocked after Options.LockWait, before anything is written:
// the generation stays, the index answers and checks clean, and once the
// holder lets go the same commit is made.
func TestWriteMeetsALockedPartition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpen(t, dir)
	_, err := e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 40, 3)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	var held []*os.File
	for _, p := range parts {
		f, err := os.Open(filepath.Join(p, "store", "root.bolt"))
		require.NoError(t, err)
		held = append(held, f)
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB))
	}
	release := func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
	}
	defer release()

	e, err = Open(dir, Options{LockWait: 20 * time.Millisecond})
	require.NoError(t, err)
	defer e.Close()
	gen := e.st.Gen
	same := vocabularyRecords(t, "acme", "b", 40, 3) // the same seed: the same anchor days, so the same partitions
	_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
	require.ErrorIs(t, err, ErrLocked)
	require.Equal(t, gen, e.st.Gen, "nothing committed")
	req := Request{Question: same[0].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5}
	_, err = e.Query(ctx, req)
	require.NoError(t, err, "the index still answers: the holder shares its lock with reads")
	require.NoError(t, e.Check())

	release()
	_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, gen+1, e.st.Gen)
	require.NoError(t, e.Check())
}
