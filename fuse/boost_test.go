package fuse

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Hand-computed: k = 60, a 50% boost adds 50/6100 to "z" and "y".
func TestBoostHandComputed(t *testing.T) {
	items, err := RRF(60,
		List{Name: "lexical", Weight: 1, IDs: []string{"x", "y", "z"}},
		List{Name: "period", Weight: 1, IDs: []string{"z"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Boost(items, 60, 50, func(id string) bool { return id != "x" })
	if err != nil || n != 2 {
		t.Fatalf("boosted %d, %v", n, err)
	}
	if BoostTerm(60, 50) != 50.0/6100 || BoostTerm(0, 100) != 1.0/61 {
		t.Fatalf("term %v", BoostTerm(60, 50))
	}
	// Each term rounded to float64 before the add, as RRF and Boost do.
	r1, r2, r3, b := 1.0/61, 1.0/62, 1.0/63, 50.0/6100
	want := []Item{
		{ID: "z", Score: r3 + r1 + b, Ranks: []int{3, 1}},
		{ID: "y", Score: r2 + b, Ranks: []int{2, 0}}, // 0.024326 > x's 0.016393
		{ID: "x", Score: r1, Ranks: []int{1, 0}},
	}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Fatal(diff)
	}
	// The score bits are pinned: the same on every platform.
	if got := math.Float64bits(items[1].Score); got != 0x3f98e8d9b0207da2 {
		t.Fatalf("bits %x", got)
	}
}

// A boost is bounded: at most a first place in one more list, so a boosted
// item never passes one that two lists put first.
func TestBoostIsBounded(t *testing.T) {
	items, _ := RRF(60, List{Weight: 1, IDs: []string{"a", "b"}}, List{Weight: 1, IDs: []string{"a", "c"}})
	if _, err := Boost(items, 60, MaxBoost, func(id string) bool { return id == "b" }); err != nil {
		t.Fatal(err)
	}
	if items[0].ID != "a" || items[1].ID != "b" {
		t.Fatalf("%+v", items)
	}
	for _, p := range []int{-1, MaxBoost + 1} {
		if _, err := Boost(items, 60, p, func(string) bool { return true }); !errors.Is(err, ErrBadList) {
			t.Errorf("boost %d: %v", p, err)
		}
	}
	if _, err := Boost(items, MaxK+1, 50, func(string) bool { return true }); !errors.Is(err, ErrBadList) {
		t.Errorf("k above MaxK: %v", err)
	}
	if got, want := BoostTerm(math.MaxInt/100, 50), BoostTerm(MaxK, 50); got != want || got <= 0 {
		t.Errorf("BoostTerm above MaxK: %v, want MaxK's %v (100*(k+1) overflowed to a negative term)", got, want)
	}
	before := append([]Item(nil), items...)
	if n, err := Boost(items, 60, 0, func(string) bool { return true }); n != 0 || err != nil || !cmp.Equal(before, items) {
		t.Fatalf("a 0%% boost changes nothing: %d %v", n, err)
	}
}
