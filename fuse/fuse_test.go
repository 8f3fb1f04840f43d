package fuse

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRRFHandComputed(t *testing.T) {
	got, err := RRF(60,
		List{Name: "lexical", Weight: 1, IDs: []string{"x", "y", "z"}},
		List{Name: "dense", Weight: 0.5, IDs: []string{"y", "x"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{ID: "x", Score: 1.0/61 + 0.5/62, Ranks: []int{1, 2}}, // 0.024457958
		{ID: "y", Score: 1.0/62 + 0.5/61, Ranks: []int{2, 1}}, // 0.024325753
		{ID: "z", Score: 1.0 / 63, Ranks: []int{3, 0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	// The items' ranks are cut from one array: a caller's append to one
	// item's must not write another's.
	for i := range got {
		got[i].Ranks = append(got[i].Ranks, 99)
	}
	if diff := cmp.Diff([][]int{{1, 2, 99}, {2, 1, 99}, {3, 0, 99}}, [][]int{got[0].Ranks, got[1].Ranks, got[2].Ranks}); diff != "" {
		t.Fatalf("ranks after appending to each item's: %s", diff)
	}
}

func TestRRFTiesBreakByID(t *testing.T) {
	got, err := RRF(0, List{Weight: 1, IDs: []string{"b", "a"}}, List{Weight: 1, IDs: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID != "a" || got[1].ID != "b" || got[0].Score != got[1].Score {
		t.Fatalf("equal scores must order by ID: %+v", got)
	}
}

func TestRRFErrors(t *testing.T) {
	cases := []struct {
		name string
		l    List
	}{
		{"negative weight", List{Name: "l", Weight: -1, IDs: []string{"a"}}},
		{"NaN weight", List{Name: "l", Weight: math.NaN(), IDs: []string{"a"}}},
		{"repeated id: a list is a ranking, not a bag", List{Name: "l", Weight: 1, IDs: []string{"a", "b", "a"}}},
	}
	for _, c := range cases {
		if _, err := RRF(60, c.l); !errors.Is(err, ErrBadList) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// Far above MaxK, k+rank overflowed: every score the same negative
	// number, and the order by ID alone.
	if _, err := RRF(MaxK+1, List{Name: "l", Weight: 1, IDs: []string{"z", "a"}}); !errors.Is(err, ErrBadList) {
		t.Errorf("k above MaxK: %v", err)
	}
	got, err := RRF(MaxK, List{Name: "l", Weight: 1, IDs: []string{"z", "a"}})
	if err != nil || got[0].ID != "z" || got[0].Score != 1/float64(MaxK+1) {
		t.Errorf("k = MaxK ranks as any k: %+v %v", got, err)
	}
}

func TestRRFZeroWeightKeepsOrderByID(t *testing.T) {
	got, _ := RRF(60, List{Weight: 0, IDs: []string{"c", "a", "b"}})
	if got[0].ID != "a" || got[2].ID != "c" {
		t.Fatalf("a leg of weight 0 contributes nothing: %+v", got)
	}
}
