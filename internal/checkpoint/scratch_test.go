package checkpoint

import (
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
	n, held := sc.Made()
	require.Equal(t, sections, n)
	body := len(f.Bytes()) - len(f.Head())
	require.True(t, held <= body && held > body-7*sections, "the body (%d bytes) is the scratch's sections (%d) and their padding", body, held)
	require.NoError(t, sc.Free())
	n, held = sc.Made()
	require.Equal(t, [2]int{sections, 0}, [2]int{n, held}, "freed")
	require.NoError(t, sc.Free())

	// An encoding told to stop once it has made the five sections it makes
	// before the rows are filled leaves them to Free. (Made is read by the
	// workers only once the sections are made: they start after.)
	in = inputOf(t, h, tbl)
	var stopped Scratch
	in.Scratch = &stopped
	in.Stop = func() bool { n, _ := stopped.Made(); return n >= 5 }
	_, err = Encode(in)
	require.ErrorIs(t, err, ErrStopped)
	n, held = stopped.Made()
	require.Equal(t, 5, n, "stopped once five sections were made")
	require.Positive(t, held)
	require.NoError(t, stopped.Free())
	n, held = stopped.Made()
	require.Equal(t, [2]int{5, 0}, [2]int{n, held}, "freed")
}
