package learn

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/evpack/evpack/rerank"
)

// Split is a cross-validation plan: for each fold, the questions its model
// answers (Held) and the questions it is trained on (Train), as indexes into
// the question list. A question may be held by no fold (the earliest block
// of a date split is only ever trained on); no question is held by two.
type Split struct {
	// Scheme names the plan as the verdict prints it, e.g. "5 random folds,
	// seed 1" or "5 folds grouped by gold-document, seed 1".
	Scheme string
	Held   [][]int
	Train  [][]int
}

// The group-by keys of GroupKeys.
const (
	GroupGoldDocument = "gold-document" // questions whose gold passages share a document share a fold
	GroupGoldPassage  = "gold-passage"  // questions sharing a gold passage share a fold
	GroupField        = "field"         // questions with the same "group" field share a fold
)

// Why random folds overstate: a question generated from the same passage as
// a training question (ObliQA: 623 of dev's 1,575 gold passages serve
// several questions) is answered by a model that has already seen its gold
// passage ranked as gold. Grouped folds keep every question of a group on
// one side, as new questions about new text would be; a date split answers
// only questions asked after every question the model saw.

// RandomFolds assigns each of n questions to one of k folds by a seeded
// permutation (Folds) and trains each fold's model on the others.
func RandomFolds(n, k int, seed uint64) (Split, error) {
	if k < 2 || k > n {
		return Split{}, fmt.Errorf("%w: %d folds for %d questions", rerank.ErrTrain, k, n)
	}
	fold := Folds(n, k, seed)
	return complement(fmt.Sprintf("%d random folds, seed %d", k, seed), fold, k), nil
}

// complement makes the split in which fold f holds the questions assigned
// to it and trains on every other question.
func complement(scheme string, fold []int, k int) Split {
	s := Split{Scheme: scheme, Held: make([][]int, k), Train: make([][]int, k)}
	for i, f := range fold {
		for g := range k {
			if g == f {
				s.Held[g] = append(s.Held[g], i)
			} else {
				s.Train[g] = append(s.Train[g], i)
			}
		}
	}
	return s
}

// GroupKeys returns each question's keys under scheme by (GroupGoldDocument,
// GroupGoldPassage or GroupField): its gold passages, their documents (docOf
// maps a chunk ID to its document), or its Group field.
func GroupKeys(qs []Question, by string, docOf func(chunkID string) string) ([][]string, error) {
	keys := make([][]string, len(qs))
	for i, q := range qs {
		switch by {
		case GroupGoldPassage:
			keys[i] = slices.Clone(q.Gold)
		case GroupGoldDocument:
			for _, g := range q.Gold {
				keys[i] = append(keys[i], docOf(g))
			}
		case GroupField:
			if q.Group == "" {
				return nil, fmt.Errorf("%w: %s: question %s has no group field to fold by", rerank.ErrTrain, q.Where, q.ID)
			}
			keys[i] = []string{q.Group}
		default:
			return nil, fmt.Errorf("%w: group by %q (want %s, %s or %s)", rerank.ErrTrain, by, GroupGoldDocument, GroupGoldPassage, GroupField)
		}
	}
	return keys, nil
}

// GroupedFolds assigns questions to k folds so that questions sharing any key
// share a fold (keys are joined transitively: two questions with one gold
// passage each, both in document D, are one group under gold-document).
// Groups are dealt largest first, ties in a seeded order, each to the fold
// holding fewest questions so far (ties to the lowest fold): the same keys
// and seed give the same folds on every machine.
func GroupedFolds(keys [][]string, k int, seed uint64, by string) (Split, error) {
	n := len(keys)
	if k < 2 || k > n {
		return Split{}, fmt.Errorf("%w: %d folds for %d questions", rerank.ErrTrain, k, n)
	}
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := map[string]int{} // key → the first question that named it
	for i, ks := range keys {
		for _, key := range ks {
			if j, ok := first[key]; ok {
				a, b := find(i), find(j)
				parent[max(a, b)] = min(a, b) // the lower index roots, so roots do not depend on map order
			} else {
				first[key] = i
			}
		}
	}
	members := map[int][]int{}
	var roots []int
	for i := range n {
		r := find(i)
		if _, ok := members[r]; !ok {
			roots = append(roots, r)
		}
		members[r] = append(members[r], i)
	}
	if len(roots) < k {
		return Split{}, fmt.Errorf("%w: %d groups by %s cannot fill %d folds", rerank.ErrTrain, len(roots), by, k)
	}
	rank := rand.New(rand.NewPCG(seed, 1)).Perm(len(roots))
	order := make([]int, len(roots)) // positions into roots
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(len(members[roots[b]]), len(members[roots[a]])), cmp.Compare(rank[a], rank[b]))
	})
	fold := make([]int, n)
	size := make([]int, k)
	for _, o := range order {
		f := 0
		for g := 1; g < k; g++ {
			if size[g] < size[f] {
				f = g
			}
		}
		for _, i := range members[roots[o]] {
			fold[i] = f
		}
		size[f] += len(members[roots[o]])
	}
	return complement(fmt.Sprintf("%d folds grouped by %s (%d groups), seed %d", k, by, len(roots), seed), fold, k), nil
}

// DateFolds splits questions in time: sorted by as-of date (ties by ID),
// cut into k+1 blocks of near-equal size that never split a date, and fold f
// holds block f+1 and trains on blocks 0..f. Every model answers only
// questions dated after every question it was trained on; block 0 is only
// trained on.
func DateFolds(qs []Question, k int) (Split, error) {
	n := len(qs)
	if k < 1 || k+1 > n {
		return Split{}, fmt.Errorf("%w: a date split in %d folds needs more than %d questions", rerank.ErrTrain, k, n)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(qs[a].AsOf.Days(), qs[b].AsOf.Days()), strings.Compare(qs[a].ID, qs[b].ID))
	})
	// Cut points at i*n/(k+1), each moved forward past questions of the
	// same date as the one before it.
	var cuts []int
	for b := 1; b <= k; b++ {
		c := b * n / (k + 1)
		for c < n && c > 0 && qs[idx[c]].AsOf == qs[idx[c-1]].AsOf {
			c++
		}
		if c >= n || (len(cuts) > 0 && c <= cuts[len(cuts)-1]) {
			return Split{}, fmt.Errorf("%w: the questions' dates cannot be cut into %d blocks (too few distinct dates)", rerank.ErrTrain, k+1)
		}
		cuts = append(cuts, c)
	}
	cuts = append(cuts, n)
	s := Split{Scheme: fmt.Sprintf("date split, %d blocks, each answered by a model of the blocks before it", k+1),
		Held: make([][]int, k), Train: make([][]int, k)}
	for f := range k {
		s.Train[f] = slices.Sorted(slices.Values(idx[:cuts[f]]))
		s.Held[f] = slices.Sorted(slices.Values(idx[cuts[f]:cuts[f+1]]))
	}
	return s, nil
}
