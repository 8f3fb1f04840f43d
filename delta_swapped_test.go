package evpack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/storagetest"
)

// TestDeltaLevelSwapped (an adversarial review, stop 80): the checkpoint and the
// delta level over it swapped, one of them replaced by the other, the
// delta gone, or the delta of another index of the same shape (the same
// records, committed at other times) copied in: Open refuses the index
// with ErrCorrupt, or (a byte-identical file) answers as before; never a
// wrong pack. Put back, the index answers as before and Check is clean.
func TestDeltaLevelSwapped(t *testing.T) {
	ctx := context.Background()
	x := newDeltaIndex(t)
	require.NoError(t, x.w.Close())
	y := newDeltaIndex(t)
	require.NoError(t, y.w.Close())
	m := storagetest.ReadManifest(t, x.wdir)
	my := storagetest.ReadManifest(t, y.wdir)
	require.NotEmpty(t, m.Delta)
	want := packsOf(t, x.mem, x.requests())
	ckpt, delta := filepath.Join(x.wdir, m.Checkpoint), filepath.Join(x.wdir, m.Delta)
	read := func(p string) []byte {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		return raw
	}
	goodC, goodD := read(ckpt), read(delta)
	var otherD, otherC []byte
	if my.Delta == m.Delta {
		otherD = read(filepath.Join(y.wdir, my.Delta))
	}
	if my.Checkpoint == m.Checkpoint {
		otherC = read(filepath.Join(y.wdir, my.Checkpoint))
	}
	cases := []struct {
		name string
		c, d []byte // nil: gone
	}{
		{"swapped", goodD, goodC},
		{"delta as the checkpoint", goodD, goodD},
		{"checkpoint as the delta", goodC, goodC},
		{"delta gone", goodC, nil},
		{"checkpoint gone", nil, goodD},
		{"another index's delta", goodC, otherD},
		{"another index's checkpoint", otherC, goodD},
		{"another index's both", otherC, otherD},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			put := func(p string, raw []byte) {
				if err := os.Remove(p); !errors.Is(err, os.ErrNotExist) {
					require.NoError(t, err)
				}
				if raw != nil {
					require.NoError(t, os.WriteFile(p, raw, 0o644))
				}
			}
			if (tc.name == "another index's delta" && otherD == nil) || (tc.name != "another index's delta" && tc.name[:7] == "another" && otherC == nil) {
				t.Skip("the other index names other files")
			}
			put(ckpt, tc.c)
			put(delta, tc.d)
			defer func() { put(ckpt, goodC); put(delta, goodD) }()
			e, err := Open(x.wdir, Options{})
			if err != nil {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			defer e.Close()
			got := make([][]byte, len(x.requests()))
			for i, r := range x.requests() {
				p, err := e.Query(ctx, r)
				if err != nil {
					require.ErrorIs(t, err, ErrCorrupt, "request %d", i)
					continue
				}
				got[i] = p.Bytes()
				require.Equal(t, string(want[i]), string(got[i]), "request %d: a wrong pack", i)
			}
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			t.Logf("opened; Check ok %v: %q", rep.OK(), rep.Problems)
		})
	}
	e := checked(t, mustOpen(t, x.wdir))
	require.Equal(t, want, packsOf(t, e, x.requests()), "put back")
}
