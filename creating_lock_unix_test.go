//go:build unix

package evpack

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/storage"
)

// TestOpenExistingWhileAnotherCreates: a process that creates an index
// holds DIR/LOCK from before its chunks/ directory and manifest exist
// (storage.Open: lock, then chunks/, then the manifest). A second process
// that opens the index meanwhile (OpenExisting: the CLI's query, verify,
// check) looked before taking the lock, saw a directory empty but for
// LOCK, and failed with ErrNotIndex ("is empty", exit 2: bad usage) where
// it is refused by the holder: ErrLocked (exit 3), like every other Open
// beside a holder. Once the holder is gone and nothing was created, the
// directory is empty: ErrNotIndex.
func TestOpenExistingWhileAnotherCreates(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, storage.LockName), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	for _, stage := range []string{"locked", "chunks/ made"} {
		if stage == "chunks/ made" {
			require.NoError(t, os.Mkdir(filepath.Join(dir, storage.ChunksDir), 0o755))
		}
		_, err = OpenExisting(dir, Options{LockWait: -1})
		require.ErrorIs(t, err, ErrLocked, "%s: %v", stage, err)
		_, err = Open(dir, Options{LockWait: -1})
		require.ErrorIs(t, err, ErrLocked, "%s: %v", stage, err)
	}
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	_, err = OpenExisting(dir, Options{LockWait: -1})
	require.ErrorIs(t, err, ErrNotIndex)
	require.NotErrorIs(t, err, ErrLocked)
}
