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
