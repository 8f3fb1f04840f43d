package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMergeStopsWhenCancelled: Merge with a done context merged every
// partition all the same and returned nil (an adversarial review, stop
// 80); it now returns the context's error, and no pack moves either way.
func TestMergeStopsWhenCancelled(t *testing.T) {
	dir, want := corpusIndexOnDisk(t)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Merge(ctx), context.Canceled)
	require.Equal(t, want, packsFor(t, e))
	require.NoError(t, e.Merge(context.Background()))
	require.Equal(t, want, packsFor(t, e), "a merge moves no pack")
}
