package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestSearchScratchKeepsNothing: the pruned search keeps its cursors and
// collector between searches (Lexical.searches). Whatever search came
// before, and whatever runs beside, each gives the exhaustive search's
// hits: questions of more and fewer terms over more and fewer partitions,
// each n, in one order, in the reverse, and on four goroutines at once.
// After the searches, a scratch the pool hands back holds no reader, term,
// filter or postings (prunedSearch.release).
func TestSearchScratchKeepsNothing(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pc := buildPruneCorpus(t, r, "en")
	ctx := context.Background()
	type call struct {
		name  string
		text  string
		e     Eligibility
		stats BM25Stats
		n     int
		want  []Hit
	}
	var calls []call
	for q := range 24 {
		text := pc.question(r)
		if q%6 == 0 {
			text = pruneText(r, 1) // one term: one cursor a partition
		}
		e := pc.eligibility(r)
		stats := pc.stats(r, e.Tenant, pc.upTo(e))
		for _, n := range []int{1, 10, 50} {
			want, err := pc.l.SearchExhaustive(ctx, text, e, pc.bounds, n, stats)
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, call{fmt.Sprintf("question %d %q n=%d", q, text, n), text, e, stats, n, want.Hits})
		}
	}
	check := func(c call) error {
		got, err := pc.l.Search(ctx, c.text, c.e, pc.bounds, c.n, c.stats)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if !slices.Equal(got.Hits, c.want) {
			return fmt.Errorf("%s: from a used scratch\ngot  %v\nwant %v", c.name, got.Hits, c.want)
		}
		return nil
	}
	back := slices.Clone(calls)
	slices.Reverse(back)
	for _, seq := range [][]call{calls, back} {
		for _, c := range seq {
			if err := check(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			for k := range 2 * len(calls) {
				if err := check(calls[(k*(g+1))%len(calls)]); err != nil && errs[g] == nil {
					errs[g] = fmt.Errorf("goroutine %d: %w", g, err)
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
	ps, _ := pc.l.searches.Get().(*prunedSearch)
	if ps == nil {
		t.Log("the pool dropped its scratch (as -race makes it do at random): nothing left to inspect")
		return
	}
	if len(ps.spare) == 0 {
		t.Fatal("a used scratch holds no cursor sets: the searches kept nothing to reuse")
	}
	for i, p := range ps.spare {
		if p.r != nil || p.filter != nil || len(p.cur) != 0 {
			t.Errorf("cursor set %d keeps its reader, filter or cursors", i)
		}
		for _, c := range p.cs[:cap(p.cs)] {
			if c != (cursor{}) {
				t.Errorf("cursor set %d keeps a cursor of term %v", i, c.prunedTerm)
				break
			}
		}
		for _, c := range p.cur[:cap(p.cur)] {
			if c != nil {
				t.Errorf("cursor set %d keeps a cursor pointer", i)
				break
			}
		}
		for _, d := range p.decs[:cap(p.decs)] {
			if d.segs != nil || d.except != nil || d.starts != nil {
				t.Errorf("cursor set %d keeps a decoded cursor", i)
				break
			}
		}
		for _, s := range p.segs[:cap(p.segs)] {
			if s != nil {
				t.Errorf("cursor set %d keeps decoded postings", i)
				break
			}
		}
	}
	for _, t2 := range ps.terms[:cap(ps.terms)] {
		if t2 != nil {
			t.Errorf("the scratch keeps term %q", t2.term)
			break
		}
	}
	for _, p := range ps.parts[:cap(ps.parts)] {
		if p != nil {
			t.Error("the scratch keeps a partition of the last search")
			break
		}
	}
	if ps.cache != nil || len(ps.topHeap) != 0 || len(ps.topTies) != 0 || len(ps.risky) != 0 {
		t.Error("the scratch keeps the last search's cache or collector")
	}
}
