package obliqa

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// BenchmarkFactCommitsOverHistory (issue 30) commits retractions of the
// ObliQA corpus's chunks one at a time, each taking turns with bare
// bleve's delete of the same document, for 4,096 generations after the
// corpus. It reports the median commit, and bleve's median delete, in three
// bands of 64 generations: the first 64, those ending at 1,024 and those
// ending at 4,096. A commit that costs what it holds costs the same in the
// three; one that pays for the history (a manifest naming every generation)
// grows from band to band (growth: the last band's median over the first's).
// One op is the whole run:
//
//	EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench FactCommitsOverHistory -benchtime 1x -timeout 30m
func BenchmarkFactCommitsOverHistory(b *testing.B) {
	const history, band = 4096, 64
	o := dataset(b)
	recs, _ := Records(o)
	if len(recs) < history {
		b.Fatalf("%d records, the benchmark retracts %d", len(recs), history)
	}
	ctx := context.Background()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		eng, err := evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		idx := mergedBleve(b, filepath.Join(dir, "bleve"), recs)
		b.StartTimer()
		commits, deletes := make([]time.Duration, history), make([]time.Duration, history)
		for i := range history {
			r := recs[i]
			end := asof.DateFromDays(r.Chunk.Valid.From.Days() + 10)
			f := &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: r.Chunk.ID, End: end, Anchor: end.Start()}
			inTurn(i, func() {
				t0 := time.Now()
				if _, err := eng.Ingest(ctx, connectors.Records([]connectors.Record{{Where: fmt.Sprintf("retraction %d", i), Fact: f}}), evpack.IngestOptions{}); err != nil {
					b.Fatal(err)
				}
				commits[i] = time.Since(t0)
			}, func() {
				t0 := time.Now()
				if err := idx.Delete(r.Chunk.ID); err != nil {
					b.Fatal(err)
				}
				deletes[i] = time.Since(t0)
			})
		}
		b.StopTimer()
		median := func(ds []time.Duration) time.Duration {
			s := slices.Clone(ds)
			slices.Sort(s)
			return s[len(s)/2]
		}
		var first time.Duration
		for _, end := range []int{band, 1024, history} {
			ev, bl := median(commits[end-band:end]), median(deletes[end-band:end])
			if end == band {
				first = ev
			}
			b.ReportMetric(ms(ev), fmt.Sprintf("commit-p50-ms-to-%d", end))
			b.ReportMetric(ms(ev)/ms(bl), fmt.Sprintf("vs-bleve-delete-to-%d", end))
			if end == history {
				b.ReportMetric(float64(ev)/float64(first), "growth")
			}
		}
		b.ReportMetric(ms(median(deletes)), "bleve-delete-p50-ms")
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
		if err := idx.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
