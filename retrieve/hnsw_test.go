package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// recallAgainstExact is the share of the exact scan's top 10 that the graph
// also returns, over the queries qs.
func recallAgainstExact(d *Dense, h *HNSW, qs [][]int8) float64 {
	ctx := context.Background()
	all := func(int) bool { return true }
	found, total := 0, 0
	for _, q := range qs {
		exact, _, _ := d.Search(ctx, q, all, 10)
		approx, _, _ := h.Search(ctx, q, all, 10)
		in := map[string]bool{}
		for _, x := range approx {
			in[x.ID] = true
		}
		for _, x := range exact {
			total++
			if in[x.ID] {
				found++
			}
		}
	}
	return float64(found) / float64(total)
}

// randomDense makes n random unit int8 vectors of dims components and 50
// random queries, from seed.
func randomDense(seed uint64, n, dims int) (*Dense, [][]int8) {
	rng := rand.New(rand.NewPCG(seed, 0))
	vec := func() []int8 {
		acc := make([]int64, dims)
		for j := range acc {
			acc[j] = int64(rng.NormFloat64() * 1000)
		}
		return normalize(acc)
	}
	ids := make([]string, n)
	vecs := make([][]int8, n)
	for i := range vecs {
		ids[i] = fmt.Sprintf("c%07d", i)
		vecs[i] = vec()
	}
	qs := make([][]int8, 50)
	for i := range qs {
		qs[i] = vec()
	}
	return NewDense(ids, vecs), qs
}

// TestHNSWAgainstExact checks what the wrapper promises (hits in exact cosine
// order, a subset of what exists) and logs recall@10 against the exact scan
// and the stability of 1,000 repeats: measurements, not promises (see
// docs/benchmarks.md: coder/hnsw's greedy stop costs most of the recall).
func TestHNSWAgainstExact(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(3, 3000, 32)
	h := NewHNSW(d, HNSWOptions{})
	all := func(int) bool { return true }
	for _, q := range qs {
		approx, _, _ := h.Search(ctx, q, all, 10)
		for i := 1; i < len(approx); i++ {
			if moreSimilar(approx[i-1], approx[i]) < 0 {
				t.Fatalf("hits out of exact cosine order: %+v", approx)
			}
		}
	}
	t.Logf("hnsw recall@10 against exact: %.4f", recallAgainstExact(d, h, qs))
	first, _, _ := h.Search(ctx, qs[0], all, 10)
	differ := 0
	for range 1000 {
		again, _, _ := h.Search(ctx, qs[0], all, 10)
		if fmt.Sprint(again) != fmt.Sprint(first) {
			differ++
		}
	}
	t.Logf("1,000 repeats of one query: %d differed from the first", differ)
}

func TestHNSWWidensUntilEnoughEligible(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(5, 2000, 16)
	h := NewHNSW(d, HNSWOptions{})
	// One chunk in 100 is eligible: the graph's first 10 candidates rarely
	// hold 10 of them, so the search must widen; it never post-filters.
	eligible := func(id string) bool { return id[len(id)-2:] == "00" }
	got, k, err := h.Search(ctx, qs[0], func(row int) bool { return eligible(d.ID(row)) }, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || k <= 10 {
		t.Fatalf("got %d hits after asking for %d candidates", len(got), k)
	}
	for _, x := range got {
		if !eligible(x.ID) {
			t.Fatalf("%s is not eligible", x.ID)
		}
	}
}
