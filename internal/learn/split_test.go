package learn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/rerank"
)

// checkPartition asserts what every split promises: no question held by two
// folds, and each fold trains on none of the questions it holds.
func checkPartition(t *testing.T, s Split, n int) {
	t.Helper()
	held := make([]int, n)
	for f := range s.Held {
		if len(s.Held[f]) == 0 {
			t.Errorf("fold %d holds no question", f)
		}
		for _, i := range s.Held[f] {
			held[i]++
			if slices.Contains(s.Train[f], i) {
				t.Errorf("fold %d trains on question %d, which it holds out", f, i)
			}
		}
	}
	for i, h := range held {
		if h > 1 {
			t.Errorf("question %d held out by %d folds", i, h)
		}
	}
}

func TestGroupedFoldsByHand(t *testing.T) {
	// Questions 1, 3 and 5 are one group (b, and c through question 5);
	// 0 and 2 share a; 4 is alone. Groups of 3, 2 and 1 questions are dealt
	// to the smaller fold: {1,3,5} to fold 0, {0,2} to fold 1, {4} to fold 1.
	keys := [][]string{{"a"}, {"b"}, {"a"}, {"c"}, {"d"}, {"b", "c"}}
	for _, seed := range []uint64{1, 2, 99} {
		s, err := GroupedFolds(keys, 2, seed, GroupGoldPassage)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(s.Held, s.Train); got != "[[1 3 5] [0 2 4]] [[0 2 4] [1 3 5]]" {
			t.Errorf("seed %d: held, train = %s", seed, got)
		}
		if s.Scheme != fmt.Sprintf("2 folds grouped by gold-passage (3 groups), seed %d", seed) {
			t.Errorf("scheme %q", s.Scheme)
		}
	}
}

// TestGroupedFoldsKeepEveryKeyInOneFold draws random key sets and checks that
// no key is held out by two folds, whatever the seed.
func TestGroupedFoldsKeepEveryKeyInOneFold(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 20 + rng.IntN(200)
		keys := make([][]string, n)
		for i := range keys {
			for range 1 + rng.IntN(3) {
				keys[i] = append(keys[i], fmt.Sprintf("p%d", rng.IntN(n)))
			}
		}
		k := 2 + rng.IntN(4)
		s, err := GroupedFolds(keys, k, seed, GroupGoldPassage)
		if errors.Is(err, rerank.ErrTrain) {
			continue // fewer groups than folds: refused, as it must be
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkPartition(t, s, n)
		foldOf := map[string]int{}
		for f, held := range s.Held {
			for _, i := range held {
				for _, key := range keys[i] {
					if g, ok := foldOf[key]; ok && g != f {
						t.Fatalf("seed %d: key %s held out by folds %d and %d", seed, key, g, f)
					}
					foldOf[key] = f
				}
			}
		}
		again, _ := GroupedFolds(keys, k, seed, GroupGoldPassage)
		if fmt.Sprint(again) != fmt.Sprint(s) {
			t.Fatalf("seed %d: two runs gave two splits", seed)
		}
	}
}

func TestDateFoldsByHand(t *testing.T) {
	d := asof.MustDate
	qs := []Question{
		{ID: "f", AsOf: d("2023-01-01")}, {ID: "a", AsOf: d("2021-01-01")}, {ID: "c", AsOf: d("2022-01-01")},
		{ID: "b", AsOf: d("2021-01-01")}, {ID: "e", AsOf: d("2022-06-01")}, {ID: "d", AsOf: d("2022-06-01")},
	}
	// Sorted: a b (2021), c (2022-01), d e (2022-06), f (2023). Blocks of
	// 2 at 2 and 4; the cut at 4 would split 2022-06-01, so it moves to 5:
	// [a b] [c d e] [f].
	s, err := DateFolds(qs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Train, s.Held); got != "[[1 3] [1 2 3 4 5]] [[2 4 5] [0]]" {
		t.Errorf("train, held = %s", got)
	}
	checkPartition(t, s, len(qs))
	for f := range s.Held {
		for _, h := range s.Held[f] {
			for _, tr := range s.Train[f] {
				if !qs[tr].AsOf.Before(qs[h].AsOf) {
					t.Errorf("fold %d trains on %s (%s), not before held %s (%s)", f, qs[tr].ID, qs[tr].AsOf, qs[h].ID, qs[h].AsOf)
				}
			}
		}
	}
}

func TestSplitsRefuse(t *testing.T) {
	d := asof.MustDate("2024-01-01")
	oneDate := []Question{{ID: "a", AsOf: d}, {ID: "b", AsOf: d}, {ID: "c", AsOf: d}}
	cases := []struct {
		name string
		err  func() error
	}{
		{"fewer groups than folds", func() error { _, err := GroupedFolds([][]string{{"a"}, {"a"}, {"b"}}, 3, 1, "x"); return err }},
		{"one fold", func() error { _, err := RandomFolds(10, 1, 1); return err }},
		{"more folds than questions", func() error { _, err := RandomFolds(3, 4, 1); return err }},
		{"a date split of one date", func() error { _, err := DateFolds(oneDate, 2); return err }},
		{"an unknown group key", func() error { _, err := GroupKeys(oneDate, "topic", nil); return err }},
		{"a field fold of questions without a group", func() error { _, err := GroupKeys(oneDate, GroupField, nil); return err }},
	}
	for _, tc := range cases {
		if err := tc.err(); !errors.Is(err, rerank.ErrTrain) {
			t.Errorf("%s: %v, want ErrTrain", tc.name, err)
		}
	}
}

func TestGroupKeys(t *testing.T) {
	qs := []Question{{ID: "q1", Gold: []string{"c1", "c2"}, Group: "7"}, {ID: "q2", Gold: []string{"c3"}, Group: "8"}}
	doc := map[string]string{"c1": "d1", "c2": "d2", "c3": "d1"}
	for _, tc := range []struct{ by, want string }{
		{GroupGoldPassage, "[[c1 c2] [c3]]"},
		{GroupGoldDocument, "[[d1 d2] [d1]]"},
		{GroupField, "[[7] [8]]"},
	} {
		keys, err := GroupKeys(qs, tc.by, func(id string) string { return doc[id] })
		if err != nil || fmt.Sprint(keys) != tc.want {
			t.Errorf("GroupKeys(%s) = %v, %v; want %s", tc.by, keys, err, tc.want)
		}
	}
}
