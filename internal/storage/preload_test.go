package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file gone, or no longer a regular file, since it was listed is
// skipped (a merge drops segment files): the others are read whole.
func TestPreloadSkipsWhatWentAway(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, make([]byte, 3<<20+5), 0o644)) // more than one buffer
	require.NoError(t, os.WriteFile(b, make([]byte, 7), 0o644))
	n, err := ReadPaths(context.Background(), []string{a, filepath.Join(dir, "gone"), dir, b})
	require.NoError(t, err)
	require.Equal(t, int64(3<<20+5+7), n)
}
