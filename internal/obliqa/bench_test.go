package obliqa

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/evpack/evpack"
)

// The benchmarks run evpack and its peer, bare bleve, in the same process
// on the ObliQA corpus (13,012 non-empty passages) and questions:
//
//	EVPACK_OBLIQA_DIR=../shared/data/obliqa go test ./internal/obliqa -run '^$' -bench . -benchtime 2788x
//
// Query benchmarks report p50 and p99 latency per question as metrics.

func BenchmarkIngest(b *testing.B) {
	o := dataset(b)
	recs, _ := Records(o)
	ctx := context.Background()
	b.Run("evpack-memory", func(b *testing.B) {
		for b.Loop() {
			eng, err := evpack.OpenMemory(evpack.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eng.IngestRecords(ctx, recs); err != nil {
				b.Fatal(err)
			}
			eng.Close()
		}
		b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "passages/s")
	})
	b.Run("bleve-memory", func(b *testing.B) {
		for b.Loop() {
			idx := bareBleve(b, "")
			batch := idx.NewBatch()
			for _, r := range recs {
				batch.Index(r.Chunk.ID, map[string]any{"text": r.Chunk.Text})
			}
			if err := idx.Batch(batch); err != nil {
				b.Fatal(err)
			}
			idx.Close()
		}
		b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "passages/s")
	})
}

func bareBleve(tb testing.TB, dir string) bleve.Index {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return idx
}

func BenchmarkQuery(b *testing.B) {
	o := dataset(b)
	recs, _ := Records(o)
	ctx := context.Background()
	qs := o.Questions

	dir := b.TempDir()
	eng, err := evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.IngestRecords(ctx, recs); err != nil {
		b.Fatal(err)
	}
	if err := eng.Merge(ctx); err != nil {
		b.Fatal(err)
	}
	idx := bareBleve(b, filepath.Join(dir, "bleve"))
	defer idx.Close()
	batch := idx.NewBatch()
	for _, r := range recs {
		batch.Index(r.Chunk.ID, map[string]any{"text": r.Chunk.Text})
	}
	if err := idx.Batch(batch); err != nil {
		b.Fatal(err)
	}
	adv, _ := idx.Advanced()
	opts := mergeplan.SingleSegmentMergePlanOptions
	if err := adv.(*scorch.Scorch).ForceMerge(ctx, &opts); err != nil {
		b.Fatal(err)
	}

	measure := func(b *testing.B, one func(q string) error) {
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			start := time.Now()
			if err := one(qs[i%len(qs)].Text); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			i++
		}
		b.ReportMetric(float64(Percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(Percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	}
	b.Run("evpack-disk-merged", func(b *testing.B) {
		measure(b, func(q string) error {
			_, err := eng.Query(ctx, evpack.Request{Question: q, AsOf: AsOf})
			return err
		})
	})
	b.Run("bleve-disk-merged", func(b *testing.B) {
		measure(b, func(q string) error {
			mq := bleve.NewMatchQuery(q)
			mq.SetField("text")
			_, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, 10, 0, false))
			return err
		})
	})
}
