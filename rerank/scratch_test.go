package rerank

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScratchKeepsNothing: a Learned reranker keeps what feature
// extraction and the trees work in between its calls (featureScratch,
// treeScratch). Whatever call came before, and whatever runs beside, each
// call gives the rows and the order a fresh reranker gives: pools of
// several sizes, questions of more and fewer terms, with and without term
// numbers, in one order, the reverse (each after another predecessor), and
// on four goroutines at once.
func TestScratchKeepsNothing(t *testing.T) {
	m, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	f := smallFake()
	var calls []scratchCall
	pools := [][]string{{"a/3", "b/2", "a/2", "a/5", "c/1", "a/1"}, {"c/1"}, {"a/1", "a/2", "a/3"}, {}}
	for _, q := range []string{"capital conservation buffer of common equity", "boats", "hold liquid assets buffer capital records"} {
		for pi, ids := range pools {
			for _, stats := range []struct {
				name string
				s    Stats
			}{{"strings", f}, {"numbers", numbered(f, 1)}, {"sparse numbers", numbered(f, 4096)}} {
				calls = append(calls, scratchCall{fmt.Sprintf("%q, pool %d, %s", q, pi, stats.name), q, smallPool(f, ids...), stats.s})
			}
		}
	}
	fresh := func(c scratchCall) ([]Row, []string) {
		l, err := NewLearned(m) // its own, empty scratch
		if err != nil {
			t.Fatal(err)
		}
		return FeatureRows(c.q, c.pool, c.stats), order(t, l, c)
	}
	wantRows, wantOrder := make([][]Row, len(calls)), make([][]string, len(calls))
	for i, c := range calls {
		wantRows[i], wantOrder[i] = fresh(c)
	}
	shared, err := NewLearned(m)
	if err != nil {
		t.Fatal(err)
	}
	sc := &featureScratch{}
	check := func(i int) error {
		c := calls[i]
		if diff := cmp.Diff(wantRows[i], featureRows(c.q, c.pool, c.stats, sc)); diff != "" {
			return fmt.Errorf("%s: rows from a used scratch:\n%s", c.name, diff)
		}
		if diff := cmp.Diff(wantOrder[i], order(t, shared, c)); diff != "" {
			return fmt.Errorf("%s: order from a used reranker:\n%s", c.name, diff)
		}
		return nil
	}
	idx := make([]int, len(calls))
	for i := range idx {
		idx[i] = i
	}
	back := slices.Clone(idx)
	slices.Reverse(back)
	for _, seq := range [][]int{idx, back} {
		for _, i := range seq {
			if err := check(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Beside each other: the reranker's pool gives each call its own
	// scratch (featureRows's own sc is not shared: it is not safe to).
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			for k := range 3 * len(calls) {
				c := calls[(k*(g+1))%len(calls)]
				if diff := cmp.Diff(wantOrder[(k*(g+1))%len(calls)], order(t, shared, c)); diff != "" && errs[g] == nil {
					errs[g] = fmt.Errorf("goroutine %d, %s:\n%s", g, c.name, diff)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scratchCall is one call of TestScratchKeepsNothing.
type scratchCall struct {
	name  string
	q     string
	pool  []Candidate
	stats Stats
}

// order is l's order of c's pool, as chunk IDs and scores.
func order(t *testing.T, l *Learned, c scratchCall) []string {
	out, err := l.Rerank(context.Background(), c.q, c.pool, c.stats)
	if err != nil {
		t.Error(err)
		return nil
	}
	s := make([]string, len(out))
	for i, o := range out {
		s[i] = fmt.Sprintf("%s %d", o.ChunkID, o.Score)
	}
	return s
}
