// Package fuse combines ranked lists by Reciprocal Rank Fusion (Cormack,
// Clarke and Büttcher, SIGIR 2009): an item at 1-based rank r in a list of
// weight w earns w/(K+r), and an item's fused score is the sum over lists.
//
// RRF needs ranks only, so legs with incomparable scores (BM25, cosine, a
// list of chunks that mention the asked-about year) fuse without calibration.
//
// Entry point: [RRF].
//
// Invariant: the output is totally ordered: by score descending, then by ID
// ascending. Scores are summed in list order with every term rounded to
// float64 before the add, so no platform can fuse the arithmetic differently.
package fuse

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultK is the RRF constant from the original paper.
const DefaultK = 60

// MaxK is the largest constant RRF and Boost take. Below it k plus a rank,
// and 100*(k+1), are exact in an int and in a float64; far above it they
// overflowed, and every score came out the same negative number.
const MaxK = 1 << 20

// ErrBadList is returned for a list with a bad weight or a repeated ID.
var ErrBadList = errors.New("fuse: bad list")

// List is one ranked list: IDs best first, each at most once.
type List struct {
	Name   string   // the leg's name, for errors and explanations
	Weight float64  // >= 0; 0 turns the leg off without removing it
	IDs    []string // best first
}

// Item is one fused result.
type Item struct {
	ID    string
	Score float64
	Ranks []int // 1-based rank in each input list, 0 where absent
}

// RRF fuses lists with constant k (DefaultK when k <= 0; ErrBadList above
// MaxK). An ID absent from a list contributes nothing for it.
func RRF(k int, lists ...List) ([]Item, error) {
	if k <= 0 {
		k = DefaultK
	}
	if k > MaxK {
		return nil, fmt.Errorf("%w: constant k %d > %d", ErrBadList, k, MaxK)
	}
	// Sized once for every ID of every list, and each item's ranks cut from
	// one array: a request fuses a few hundred IDs, and growing these was a
	// good part of what it left for the collector.
	n, longest := 0, 0
	for _, l := range lists {
		n, longest = n+len(l.IDs), max(longest, len(l.IDs))
	}
	pos := make(map[string]int, n)
	out := make([]Item, 0, n)
	ranks := make([]int, n*len(lists))
	seen := make(map[string]bool, longest)
	for li, l := range lists {
		if !ValidWeight(l.Weight) {
			return nil, fmt.Errorf("%w: list %q: weight %v", ErrBadList, l.Name, l.Weight)
		}
		clear(seen)
		for r, id := range l.IDs {
			if seen[id] {
				return nil, fmt.Errorf("%w: list %q: id %q at rank %d appears twice", ErrBadList, l.Name, id, r+1)
			}
			seen[id] = true
			i, ok := pos[id]
			if !ok {
				i = len(out)
				pos[id] = i
				at := len(out) * len(lists)
				out = append(out, Item{ID: id, Ranks: ranks[at : at+len(lists) : at+len(lists)]})
			}
			term := float64(l.Weight / float64(k+r+1))
			out[i].Score = float64(out[i].Score + term)
			out[i].Ranks[li] = r + 1
		}
	}
	slices.SortFunc(out, compareItems)
	return out, nil
}

// ValidWeight reports whether w is a weight RRF takes: finite and >= 0
// (w < 0 alone lets NaN through).
func ValidWeight(w float64) bool { return w >= 0 && !math.IsInf(w, 0) }

// compareItems is the fused order: score descending, then ID ascending.
func compareItems(a, b Item) int {
	if a.Score != b.Score {
		if a.Score > b.Score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}
