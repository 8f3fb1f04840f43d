package fuse

import (
	"fmt"
	"slices"
)

// MaxBoost bounds Boost's percent: at most one first place in one list.
const MaxBoost = 100

// BoostTerm is the score Boost adds at percent with constant k:
// percent/100 of a first place in a list of weight 1, 1/(k+1). It is one
// division of two exact integers, so every platform rounds it alike. As in
// RRF, k <= 0 means DefaultK; a k above MaxK is taken as MaxK, where
// 100*(k+1) is still exact (Boost refuses such a k).
func BoostTerm(k, percent int) float64 {
	if k <= 0 {
		k = DefaultK
	}
	return float64(percent) / float64(100*(min(k, MaxK)+1))
}

// Boost adds BoostTerm(k, percent) to the score of every item that boosted
// reports, and orders the items again as RRF does (score descending, then
// ID). The boost is bounded and integer-valued: percent is a whole number in
// [0, MaxBoost], so a boosted item gains at most what a first place in one
// more list would give it. It returns how many items it boosted; items is
// reordered in place.
func Boost(items []Item, k, percent int, boosted func(id string) bool) (int, error) {
	if percent < 0 || percent > MaxBoost {
		return 0, fmt.Errorf("%w: boost %d%% not in [0, %d]", ErrBadList, percent, MaxBoost)
	}
	if k > MaxK {
		return 0, fmt.Errorf("%w: constant k %d > %d", ErrBadList, k, MaxK)
	}
	if percent == 0 {
		return 0, nil
	}
	term := BoostTerm(k, percent)
	n := 0
	for i := range items {
		if boosted(items[i].ID) {
			items[i].Score = float64(items[i].Score + term)
			n++
		}
	}
	slices.SortFunc(items, compareItems)
	return n, nil
}
