package retrieve

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkExactScanSynthetic scans N random 384-d int8 unit vectors (N from
// EVPACK_BENCH_VECTORS, default 100,000; the closing note used 1,000,000) and
// reports memory per vector. HNSW is built over the first 20,000 of them and
// measured against the exact scan of those.
//
//	EVPACK_BENCH_VECTORS=1000000 go test ./retrieve -run '^$' -bench ExactScanSynthetic -benchtime 20x -v
func BenchmarkExactScanSynthetic(b *testing.B) {
	n := 100_000
	if s := os.Getenv("EVPACK_BENCH_VECTORS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, qs := randomDense(11, n, 384)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.Logf("%d vectors of 384 dims: %.0f bytes per vector in the exact index (ids, int8 vectors, norms)",
		n, float64(after.HeapAlloc-before.HeapAlloc)/float64(n))
	all := func(int) bool { return true }
	ctx := context.Background()
	b.Run(fmt.Sprintf("exact-%d", n), func(b *testing.B) {
		i := 0
		for b.Loop() {
			d.Search(ctx, qs[i%len(qs)], all, 10)
			i++
		}
	})
	m := min(n, 20_000)
	sub := NewDense(d.ids[:m], d.vecs[:m])
	start := time.Now()
	h := NewHNSW(sub, HNSWOptions{EfSearch: 64})
	build := time.Since(start)
	b.Logf("hnsw over %d of them: built in %s (%.0f inserts/s), recall@10 against exact %.4f",
		m, build.Round(time.Millisecond), float64(m)/build.Seconds(), recallAgainstExact(sub, h, qs))
	b.Run(fmt.Sprintf("hnsw-ef64-%d", m), func(b *testing.B) {
		i := 0
		for b.Loop() {
			h.Search(ctx, qs[i%len(qs)], all, 10)
			i++
		}
	})
	b.Run(fmt.Sprintf("exact-%d", m), func(b *testing.B) {
		i := 0
		for b.Loop() {
			sub.Search(ctx, qs[i%len(qs)], all, 10)
			i++
		}
	})
}
