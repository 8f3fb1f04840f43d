package retrieve

import (
	"context"
	"flag"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var namingSeed = flag.Uint64("naming.seed", 0, "seed of TestSearchNamingIsARestrictedSearch (0: seeds 1 and 2)")

// names reports whether chunk id, as last indexed, names what n names, by
// the rule Naming documents, computed from the chunk itself.
func (pc *pruneCorpus) names(id string, n Naming) bool {
	c := pc.last[id].Chunk
	terms, _ := pc.l.Terms(c.Text)
	for _, t := range n.Terms {
		if slices.Contains(terms, t) {
			return true
		}
	}
	for k, v := range c.Meta {
		for _, m := range n.Meta {
			if k+"="+v == m {
				return true
			}
		}
		for _, p := range n.MetaPrefixes {
			if strings.HasPrefix(k+"="+v, p) {
				return true
			}
		}
	}
	return false
}

// A naming search is the search over the eligible chunks that name what it
// names: the same hits, scores and order as the exhaustive search over every
// eligible chunk with the others struck out, to any depth; never a chunk the
// eligibility (as-of, tenant, filters, generation, facts, purges) keeps out.
// NamedIn picks out of any IDs exactly the eligible ones that name it.
func TestSearchNamingIsARestrictedSearch(t *testing.T) {
	seeds := []uint64{1, 2}
	if *namingSeed != 0 {
		seeds = []uint64{*namingSeed}
	}
	ctx := context.Background()
	for _, seed := range seeds {
		t.Logf("seed %d (rerun with -naming.seed %d)", seed, seed)
		r := rand.New(rand.NewPCG(seed, 0x51ed))
		pc := buildPruneCorpus(t, r, []string{"en", "standard"}[seed%2])
		var hitsSeen, outside int
		for q := 0; q < 60; q++ {
			text := pc.question(r)
			e := pc.eligibility(r)
			stats := pc.stats(r, e.Tenant, pc.upTo(e))
			var n Naming
			for range r.IntN(3) {
				term, _ := pc.l.Terms(pruneWords[r.IntN(len(pruneWords))])
				n.Terms = append(n.Terms, term...)
			}
			if r.IntN(3) == 0 {
				n.Meta = append(n.Meta, "kind=guidance")
			}
			if r.IntN(4) == 0 {
				n.MetaPrefixes = append(n.MetaPrefixes, "kind=ru")
			}
			eligible, err := pc.l.Eligible(ctx, e, pc.bounds)
			if err != nil {
				t.Fatal(err)
			}
			all, err := pc.l.SearchExhaustive(ctx, text, e, pc.bounds, len(pc.chunks)+1, stats)
			if err != nil {
				t.Fatal(err)
			}
			var want []Hit
			for _, h := range all.Hits {
				if pc.names(h.ID, n) {
					want = append(want, h)
				}
			}
			for _, depth := range []int{1, 5, 200} {
				got, err := pc.l.SearchNaming(ctx, text, e, pc.bounds, depth, stats, n)
				if err != nil {
					t.Fatal(err)
				}
				w := want[:min(depth, len(want))]
				if !slices.Equal(got.Hits, w) {
					t.Fatalf("seed %d question %d %q depth %d naming %+v elig %+v:\ngot  %v\nwant %v", seed, q, text, depth, n, e, got.Hits, w)
				}
				for _, h := range got.Hits {
					if _, ok := slices.BinarySearch(eligible, h.ID); !ok {
						t.Fatalf("seed %d: %s is not eligible", seed, h.ID)
					}
				}
				hitsSeen += len(got.Hits)
			}
			// NamedIn over a random draw of IDs, eligible or not.
			var ids []string
			for range 1 + r.IntN(40) {
				ids = append(ids, pc.chunks[r.IntN(len(pc.chunks))].ID)
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			var wantNamed []string
			for _, id := range ids {
				if _, ok := slices.BinarySearch(eligible, id); !ok {
					outside++
					continue
				}
				if pc.names(id, n) {
					wantNamed = append(wantNamed, id)
				}
			}
			gotNamed, err := pc.l.NamedIn(ctx, ids, e, pc.bounds, n.MetaOnly())
			if err != nil {
				t.Fatal(err)
			}
			wantMeta := wantNamed[:0:0]
			for _, id := range wantNamed {
				if pc.names(id, n.MetaOnly()) {
					wantMeta = append(wantMeta, id)
				}
			}
			if !slices.Equal(gotNamed, wantMeta) {
				t.Fatalf("seed %d question %d NamedIn(%v, %+v) = %v, want %v", seed, q, ids, n.MetaOnly(), gotNamed, wantMeta)
			}
		}
		t.Logf("seed %d: %d naming hits, %d ineligible IDs offered to NamedIn", seed, hitsSeen, outside)
		if hitsSeen < 300 || outside < 50 {
			t.Fatalf("seed %d: the draw exercised too little (%d hits, %d ineligible)", seed, hitsSeen, outside)
		}
	}
}
