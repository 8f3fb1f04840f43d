package obliqa

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/retrieve"
)

// BenchmarkOpenDense: the ObliQA corpus on disk with GloVe SIF vectors and
// an HNSW graph; per iteration, Open, the first dense query, a second one,
// and Close. What a service pays to start, and what its first request of a
// scope pays. Uses only the public API, so that a build before per-scope
// views (which embedded the corpus and built the graph at every Open) runs
// it too.
func BenchmarkOpenDense(b *testing.B) {
	o := dataset(b)
	recs, _ := Records(o)
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "evpack")
	opts := evpack.Options{Embedder: retrieve.NewSIF(gloveVectors(b)), Legs: "lexical,dense", DenseIndex: "hnsw"}
	ingestClosed(b, dir, opts, recs)
	var open, first, second time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		eng, err := evpack.Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		open += time.Since(start)
		for i, d := range []*time.Duration{&first, &second} {
			start = time.Now()
			if _, err := eng.Query(ctx, evpack.Request{Question: o.Questions[i].Text, AsOf: AsOf}); err != nil {
				b.Fatal(err)
			}
			*d += time.Since(start)
		}
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(n) }
	b.ReportMetric(ms(open), "open-ms")
	b.ReportMetric(ms(first), "first-query-ms")
	b.ReportMetric(ms(second), "second-query-ms")
}
