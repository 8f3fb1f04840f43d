package obliqa

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// BenchmarkScaleFirstWrite: what a process pays to add a day's few chunks
// to a kept scale index (EVPACK_SCALE_DIR, made by BenchmarkScale): the next
// version of 100 records of one tenant. evpack: Open, one Ingest, Close (its
// first write after Open builds the full state, the checkpoint unfolded
// with every batch file's chunks, and its commit writes a new checkpoint). Bare bleve: Open, one batch of the
// same 100 documents, Close. Apart (not in those times), each then writes
// the next 100 records before it closes: what a process that stays open
// pays a write. Each op first copies both indexes (not timed),
// so that every write is the first on the index as built; the two take
// turns, evpack first. It reports each system's wall and CPU time (the
// process's, goroutines included), the ratio of their wall times, the
// wall time of the next write, and evpack's Go heap in use once the first
// ingest is done.
func BenchmarkScaleFirstWrite(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	recs := s.Next(base, 200)
	first, second := recs[:100], recs[100:]
	ctx := context.Background()
	var ev, bl, evCPU, blCPU, evNext, blNext time.Duration
	var heap uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		for _, sub := range []string{"evpack", "bleve"} {
			if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(root, sub))); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()

		t0, c0 := time.Now(), cpuTime(b)
		eng, err := evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Ingest(ctx, connectors.Records(first), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ingested, c1 := time.Now(), cpuTime(b)
		heap = max(heap, heapInUse())
		t := time.Now()
		if _, err := eng.Ingest(ctx, connectors.Records(second), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		evNext += time.Since(t)
		closing, c2 := time.Now(), cpuTime(b)
		b.StartTimer()
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
		t1, c3 := time.Now(), cpuTime(b)
		ev += ingested.Sub(t0) + t1.Sub(closing)
		evCPU += c1 - c0 + c3 - c2

		idx, err := bleve.Open(filepath.Join(dir, "bleve"))
		if err != nil {
			b.Fatal(err)
		}
		indexScale(b, idx, first)
		b.StopTimer()
		indexed, c4 := time.Now(), cpuTime(b)
		indexScale(b, idx, second)
		blClosing, c5 := time.Now(), cpuTime(b)
		blNext += blClosing.Sub(indexed)
		b.StartTimer()
		if err := idx.Close(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		bl += indexed.Sub(t1) + t2.Sub(blClosing)
		blCPU += c4 - c3 + cpuTime(b) - c5
	}
	n := float64(b.N)
	b.ReportMetric(ev.Seconds()/n, "evpack-first-write-s")
	b.ReportMetric(bl.Seconds()/n, "bleve-first-write-s")
	b.ReportMetric(float64(ev)/float64(bl), "evpack-vs-bleve")
	b.ReportMetric(evCPU.Seconds()/n, "evpack-first-write-cpu-s")
	b.ReportMetric(blCPU.Seconds()/n, "bleve-first-write-cpu-s")
	b.ReportMetric(evNext.Seconds()/n, "evpack-next-write-s")
	b.ReportMetric(blNext.Seconds()/n, "bleve-next-write-s")
	b.ReportMetric(float64(heap)/(1<<20), "evpack-heap-after-ingest-MiB")
}
