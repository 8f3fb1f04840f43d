package checkpoint

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortIDOrder: the radix sort gives the order of the comparison sort
// it replaced (key, then ID), with keys that tie often (drawn from a few
// values, in every byte) and keys spread over 64 bits; stop is asked
// before each run of each pass, and once it says true the sort leaves it to
// the caller.
func TestSortIDOrder(t *testing.T) {
	seed := uint64(20261204)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, c := range []struct {
		name string
		n    int
		key  func() uint64
	}{
		{"no row", 0, r.Uint64},
		{"one row", 1, r.Uint64},
		{"keys over 64 bits", 5000, r.Uint64},
		{"more entries than a pass moves between stops", 2*sortBetweenStops + 17, r.Uint64},
		{"keys that tie, differing in high bytes", 5000, func() uint64 { return uint64(r.IntN(7)) << 56 }},
		{"keys that tie, differing in every byte", 5000, func() uint64 { return uint64(r.IntN(4)) * 0x0101010101010101 }},
		{"one key for all", 300, func() uint64 { return 42 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys, ids := make([]uint64, c.n), make([]string, c.n)
			for i := range c.n {
				keys[i], ids[i] = c.key(), fmt.Sprintf("doc-%d#%d", r.IntN(1000), i)
			}
			r.Shuffle(c.n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			want := make([]uint32, c.n)
			for i := range want {
				want[i] = uint32(i)
			}
			got := slices.Clone(want)
			slices.SortFunc(want, func(a, b uint32) int {
				return cmp.Or(cmp.Compare(keys[a], keys[b]), strings.Compare(ids[a], ids[b]))
			})
			asked := 0
			sortIDOrder(got, keys, ids, func() bool { asked++; return false })
			if !slices.Equal(got, want) {
				t.Fatalf("radix order differs from (key, ID) order")
			}
			runs := (c.n + sortBetweenStops - 1) / sortBetweenStops
			if want := 8 * 2 * runs; asked != want {
				t.Fatalf("stop asked %d times, want %d: before each run of the count and of the moves of 8 passes", asked, want)
			}
		})
	}
	t.Run("stopped", func(t *testing.T) {
		rows := []uint32{0, 1, 2}
		asked := 0
		sortIDOrder(rows, []uint64{3, 2, 1}, []string{"a", "b", "c"}, func() bool { asked++; return true })
		if asked != 1 {
			t.Fatalf("stop asked %d times after saying true, want 1", asked)
		}
	})
}
