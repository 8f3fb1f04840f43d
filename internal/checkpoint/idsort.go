package checkpoint

import (
	"slices"
	"strings"
)

// sortIDOrder puts rows (row numbers) in the ID order's: by keys[row],
// then by ids[row]. It sorts the keys a byte at a time, least significant
// first (each pass stable), then each run of equal keys by ID: there is
// one such order, so the bytes do not depend on how it is found. stop is
// asked before every sortBetweenStops entries of each pass; once it says
// true the order is left unfinished, and the caller, which asks stop
// again, gives up.
//
// Why not slices.SortFunc: it cannot stop between its steps, and a
// checkpoint written ahead gives way at its stops to the commits in flight
// (state's Ahead.pause): at a million chunks the comparison sort took
// 0.2 s on one core, during which a commit shared the cores with it.
func sortIDOrder(rows []uint32, keys []uint64, ids []string, stop func() bool) {
	type entry struct {
		key uint64
		row uint32
	}
	// runs calls f on each run of sortBetweenStops entries of es, asking
	// stop before each; false once it said true.
	runs := func(es []entry, f func(run []entry)) bool {
		for lo := 0; lo < len(es); lo += sortBetweenStops {
			if stop() {
				return false
			}
			f(es[lo:min(lo+sortBetweenStops, len(es))])
		}
		return true
	}
	a, b := make([]entry, len(rows)), make([]entry, len(rows))
	for i, r := range rows {
		a[i] = entry{keys[r], r}
	}
	for shift := 0; shift < 64; shift += 8 {
		var at [256]int
		if !runs(a, func(run []entry) {
			for _, e := range run {
				at[byte(e.key>>shift)]++
			}
		}) {
			return
		}
		sum := 0
		for d, n := range at {
			at[d], sum = sum, sum+n
		}
		if !runs(a, func(run []entry) {
			for _, e := range run {
				d := byte(e.key >> shift)
				b[at[d]] = e
				at[d]++
			}
		}) {
			return
		}
		a, b = b, a
	}
	for i, e := range a {
		rows[i] = e.row
	}
	for lo := 0; lo < len(a); {
		hi := lo + 1
		for hi < len(a) && a[hi].key == a[lo].key {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(rows[lo:hi], func(x, y uint32) int { return strings.Compare(ids[x], ids[y]) })
		}
		lo = hi
	}
}

// sortBetweenStops is how many entries a pass of sortIDOrder moves between
// questions to stop: a millisecond's worth or so (a pass over a million
// entries, scattered in memory, took 10 to 20 ms).
const sortBetweenStops = 1 << 16
