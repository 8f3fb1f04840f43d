package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// clusteredDense makes n 384-d int8 unit vectors drawn around 4,096 random
// centres (each component centre + noise of half the centre's spread), and 50
// queries drawn the same way, from seed. Uniform random vectors would be the
// wrong test: real embeddings lie near a low-dimensional surface, uniform
// ones have nearest neighbours barely nearer than the rest.
func clusteredDense(seed uint64, n, dims int) (*Dense, [][]int8) {
	rng := rand.New(rand.NewPCG(seed, 0))
	centres := make([][]float64, 4096)
	for i := range centres {
		centres[i] = make([]float64, dims)
		for j := range centres[i] {
			centres[i][j] = rng.NormFloat64()
		}
	}
	vec := func() []int8 {
		c := centres[rng.IntN(len(centres))]
		acc := make([]int64, dims)
		for j := range acc {
			acc[j] = int64((c[j] + 0.5*rng.NormFloat64()) * 1000)
		}
		return normalize(acc)
	}
	return synthetic(n, vec)
}

func heapNow() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkGraphSynthetic compares the HNSW graph with the exact scan on N
// clustered 384-d vectors (N from EVPACK_BENCH_VECTORS, default 100,000; the
// closing note used 1,000,000): build rate, memory per vector, recall@10 of
// the graph against the exact scan, latency of both, and the filtered search
// at small eligible shares beside the exact scan of the same eligible set.
//
//	EVPACK_BENCH_VECTORS=1000000 go test ./retrieve -run '^$' -bench GraphSynthetic -benchtime 50x -timeout 3h -v
func BenchmarkGraphSynthetic(b *testing.B) {
	n := 100_000
	if s := os.Getenv("EVPACK_BENCH_VECTORS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	ctx := context.Background()
	h0 := heapNow()
	d, qs := clusteredDense(11, n, 384)
	h1 := heapNow()
	start := time.Now()
	g, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	h2 := heapNow()
	b.Logf("%d vectors of 384 dims: exact index %.0f bytes per vector (ids, int8 vectors, norms); graph %.0f more",
		n, float64(h1-h0)/float64(n), float64(h2-h1)/float64(n))
	b.Logf("%s: built in %s (%.0f inserts/s)", g.Options(), build.Round(time.Second), float64(n)/build.Seconds())
	all := func(int) bool { return true }
	exact := make([][]DenseHit, len(qs))
	for i, q := range qs {
		exact[i], _, _ = d.Search(ctx, q, all, 10)
	}
	for _, ef := range []int{128, 256, 512} {
		ge, err := g.WithEfSearch(ef)
		if err != nil {
			b.Fatal(err)
		}
		found, total, visited := 0, 0, 0
		for i, q := range qs {
			approx, st, _ := ge.Search(ctx, q, all, 10)
			total += len(exact[i])
			visited += st.Visited
			in := map[string]bool{}
			for _, x := range approx {
				in[x.ID] = true
			}
			for _, x := range exact[i] {
				if in[x.ID] {
					found++
				}
			}
		}
		b.Logf("ef_search=%d: recall@10 against exact %.4f, %d vectors compared per query", ef, float64(found)/float64(total), visited/len(qs))
		b.Run(fmt.Sprintf("graph-ef%d-%d", ef, n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				ge.Search(ctx, qs[i%len(qs)], all, 10)
				i++
			}
		})
	}
	loop := func(name string, search func(q []int8)) {
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				search(qs[i%len(qs)])
				i++
			}
		})
	}
	loop(fmt.Sprintf("exact-%d", n), func(q []int8) { d.Search(ctx, q, all, 10) })
	for _, perMille := range []int{10, 30, 100} {
		admit := func(row int) bool { return row%1000 < perMille }
		loop(fmt.Sprintf("graph-filtered-%dpermille", perMille), func(q []int8) { g.Search(ctx, q, admit, 50) })
		loop(fmt.Sprintf("exact-filtered-%dpermille", perMille), func(q []int8) { d.Search(ctx, q, admit, 50) })
	}
}
