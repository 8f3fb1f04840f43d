package checkpoint

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScratchEncodesTheSameBytes: made in a Scratch, the body's sections
// give the pinned bytes, each of the six sections a part of the File that
// the Scratch made; Free releases them all, and again does nothing.
func TestScratchEncodesTheSameBytes(t *testing.T) {
	raw := pinned(t)
	h, tbl, ok, err := decodeBytes(t, raw, pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	defer tbl.Close()
	in := inputOf(t, h, tbl)
	var sc Scratch
	in.Scratch = &sc
	f, err := Encode(in)
	require.NoError(t, err)
	require.Equal(t, raw, f.Bytes())
	require.Len(t, sc.made, sections, "every section made in the scratch")
	for i, b := range sc.made {
		found := false
		for _, part := range f[1:] {
			if len(part) > 0 && len(b) > 0 && &part[0] == &b[0] {
				found = true
			}
		}
		require.True(t, found || len(b) == 0, "section %d of the scratch is no part of the file", i)
	}
	require.NoError(t, sc.Free())
	require.Empty(t, sc.made)
	require.NoError(t, sc.Free())

	// An encoding stopped once its sections are made (the ninth question:
	// two tenants, the documents, five sections) leaves them to Free.
	in = inputOf(t, h, tbl)
	var stopped Scratch
	in.Scratch = &stopped
	var asked atomic.Int64 // asked on every core
	in.Stop = func() bool { return asked.Add(1) > 8 }
	_, err = Encode(in)
	require.ErrorIs(t, err, ErrStopped)
	require.NotEmpty(t, stopped.made, "stopped after its sections were made")
	require.NoError(t, stopped.Free())
	require.Empty(t, stopped.made)
}
