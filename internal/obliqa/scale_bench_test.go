package obliqa

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// scaleFromEnv reads EVPACK_SCALE ("TENANTSxVERSIONS", default 2x4: about
// 100,000 chunks; 8x10 is the million).
func scaleFromEnv(b *testing.B) Scale {
	s := Scale{Tenants: 2, Versions: 4, Seed: 20261130}
	if v := os.Getenv("EVPACK_SCALE"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &s.Tenants, &s.Versions); err != nil || s.Tenants < 1 || s.Versions < 1 {
			b.Fatalf("EVPACK_SCALE=%q: want TENANTSxVERSIONS, e.g. 8x10", v)
		}
	}
	return s
}

// heapInUse returns the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkScale measures cost at scale (issue 12): the ObliQA corpus grown
// by Scale (EVPACK_SCALE tenants × versions) ingested in batches of 50,000
// into evpack on disk and into bare bleve (text, tenant and the three dates
// as fields), both merged to one segment. It reports each system's ingest
// CPU, evpack's Open after a Close, the Go heap each holds once open (after
// a collection; bleve's segment files are mapped, not in the heap), and
// query latency with the systems taking turns question by question: evpack
// (a tenant's request as of ScaleAsOf, which sees one version of every
// passage, with the pack's bytes and hash), bleve's match query unfiltered,
// and bleve's match query with the same eligibility written by hand. The
// same questions against the 13k corpus alone in evpack (one more index in
// the same process) give "its 13k figure".
//
//	EVPACK_SCALE=2x4 EVPACK_OBLIQA_DIR=../shared/data/obliqa go test ./internal/obliqa -run '^$' -bench 'Scale$' -benchtime 2788x -timeout 3h
func BenchmarkScale(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	ctx := context.Background()
	dir := b.TempDir()
	const batch = 50_000
	b.Logf("scale %dx%d: %d chunks, seed %d, as of %s", s.Tenants, s.Versions, s.Len(base), s.Seed, s.ScaleAsOf())

	// evpack, batch by batch; Open, and the heap it holds.
	h0 := int64(heapInUse())
	eng, evIngest, open := scaleEngine(b, filepath.Join(dir, "evpack"), evpack.Options{}, s, base, batch)
	h1 := int64(heapInUse())
	evHeap := h1 - h0
	// The same corpus in one bleve index (EVPACK_SCALE_ONE_INDEX=1): the
	// layout before partitions, to measure what they change.
	var one *evpack.Engine
	var oneIngest, oneOpen time.Duration
	if os.Getenv("EVPACK_SCALE_ONE_INDEX") == "1" {
		one, oneIngest, oneOpen = scaleEngine(b, filepath.Join(dir, "one"), evpack.Options{PartitionDays: -1}, s, base, batch)
		h1 = int64(heapInUse())
	}

	// bare bleve, the same batches.
	c0 := cpuTime(b)
	idx := bareBleve(b, filepath.Join(dir, "bleve"))
	for recs := range s.Batches(base, batch) {
		bb := idx.NewBatch()
		for _, r := range recs {
			to := float64(1 << 30)
			if !r.Chunk.Valid.To.IsZero() {
				to = float64(r.Chunk.Valid.To.Days())
			}
			if err := bb.Index(r.Chunk.ID, map[string]any{"text": r.Chunk.Text, "tenant": r.Chunk.Tenant,
				"anchor": float64(r.Chunk.Anchor.Day().Days()), "from": float64(r.Chunk.Valid.From.Days()), "to": to}); err != nil {
				b.Fatal(err)
			}
		}
		if err := idx.Batch(bb); err != nil {
			b.Fatal(err)
		}
	}
	adv, _ := idx.Advanced()
	opts := mergeplan.SingleSegmentMergePlanOptions
	if err := adv.(*scorch.Scorch).ForceMerge(ctx, &opts); err != nil {
		b.Fatal(err)
	}
	blIngest := cpuTime(b) - c0
	b.Cleanup(func() { idx.Close() })

	blHeap := int64(heapInUse()) - h1
	// evpack over the 13k corpus alone: its 13k figure.
	small, err := evpack.Open(filepath.Join(dir, "small"), evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { small.Close() })
	if _, err := small.Ingest(ctx, connectors.Records(base), evpack.IngestOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := small.Merge(ctx); err != nil {
		b.Fatal(err)
	}

	day := s.ScaleAsOf()
	num := func(field string, lo, hi *float64, loIn, hiIn bool) query.Query {
		q := bleve.NewNumericRangeInclusiveQuery(lo, hi, &loIn, &hiIn)
		q.SetField(field)
		return q
	}
	d := float64(day.Days())
	var ev, sm, bl, bf, on []time.Duration
	i := 0
	for b.Loop() {
		q := o.Questions[i%len(o.Questions)].Text
		tenant := s.Tenant(i % s.Tenants)
		t0 := time.Now()
		p, err := eng.Query(ctx, evpack.Request{Question: q, AsOf: day, Tenant: tenant})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Hash()
		t1 := time.Now()
		ev = append(ev, t1.Sub(t0))
		if one != nil {
			po, err := one.Query(ctx, evpack.Request{Question: q, AsOf: day, Tenant: tenant})
			if err != nil {
				b.Fatal(err)
			}
			if po.Hash() != p.Hash() {
				b.Fatalf("question %d: the partitioned index and one index give different packs", i)
			}
			on = append(on, time.Since(t1))
			t1 = time.Now()
		}
		p, err = small.Query(ctx, evpack.Request{Question: q, AsOf: AsOf})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Hash()
		t2 := time.Now()
		mq := bleve.NewMatchQuery(q)
		mq.SetField("text")
		if _, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, 10, 0, false)); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		tq := bleve.NewTermQuery(tenant)
		tq.SetField("tenant")
		fq := bleve.NewConjunctionQuery(mq, tq, num("anchor", nil, &d, false, true), num("from", nil, &d, false, true), num("to", &d, nil, false, false))
		if _, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(fq, 10, 0, false)); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		sm, bl, bf = append(sm, t2.Sub(t1)), append(bl, t3.Sub(t2)), append(bf, t4.Sub(t3))
		i++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"evpack", ev}, {"evpack13k", sm}, {"bleve", bl}, {"bleve-filtered", bf}} {
		b.ReportMetric(ms(Percentile(m.ds, 0.5)), m.name+"-p50-ms")
		b.ReportMetric(ms(Percentile(m.ds, 0.99)), m.name+"-p99-ms")
	}
	if one != nil { // after the loop: b.Loop's start clears earlier metrics
		b.ReportMetric(oneIngest.Seconds(), "one-index-ingest-cpu-s")
		b.ReportMetric(float64(oneOpen.Milliseconds()), "one-index-open-ms")
		b.ReportMetric(ms(Percentile(on, 0.5)), "one-index-p50-ms")
		b.ReportMetric(ms(Percentile(on, 0.99)), "one-index-p99-ms")
	}
	b.ReportMetric(ms(Percentile(ev, 0.5))/ms(Percentile(sm, 0.5)), "p50-vs-13k")
	b.ReportMetric(ms(Percentile(ev, 0.99))/ms(Percentile(sm, 0.99)), "p99-vs-13k")
	b.ReportMetric(evIngest.Seconds(), "evpack-ingest-cpu-s")
	b.ReportMetric(blIngest.Seconds(), "bleve-ingest-cpu-s")
	b.ReportMetric(float64(open.Milliseconds()), "evpack-open-ms")
	b.ReportMetric(float64(evHeap)/(1<<20), "evpack-heap-MiB")
	b.ReportMetric(float64(blHeap)/(1<<20), "bleve-heap-MiB")
}

// scaleEngine ingests the scale corpus into a new evpack index at dir with
// opts, merges and closes it, and opens it again. It returns the engine, the
// ingest's CPU time (Open to Close) and the time the last Open took.
func scaleEngine(b *testing.B, dir string, opts evpack.Options, s Scale, base []connectors.Record, batch int) (*evpack.Engine, time.Duration, time.Duration) {
	ctx := context.Background()
	c0 := cpuTime(b)
	eng, err := evpack.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	for recs := range s.Batches(base, batch) {
		if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := eng.Merge(ctx); err != nil {
		b.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
	ingest := cpuTime(b) - c0
	start := time.Now()
	eng, err = evpack.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	return eng, ingest, time.Since(start)
}
