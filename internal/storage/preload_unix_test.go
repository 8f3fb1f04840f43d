//go:build unix

package storage

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A FIFO put where a listed file was is skipped like anything else that is
// not a regular file, without opening it: the open waited for a writer
// that never came, and Preload hung whatever its context said.
func TestPreloadSkipsAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo, b := filepath.Join(dir, "00000001.jsonl"), filepath.Join(dir, "b")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.WriteFile(b, make([]byte, 7), 0o644))
	n, err := ReadPaths(context.Background(), []string{fifo, b})
	require.NoError(t, err)
	require.Equal(t, int64(7), n)
}
