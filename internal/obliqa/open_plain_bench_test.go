package obliqa

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// BenchmarkOpen: the ObliQA corpus on disk, lexical leg only; per
// iteration, Open and Close. What a service pays to start, in wall time
// (ns/op) and in CPU time (cpu-ms/op, steadier on a busy machine).
//
//	EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'BenchmarkOpen$' -benchtime 5x
func BenchmarkOpen(b *testing.B) {
	recs, _ := Records(dataset(b))
	dir := filepath.Join(b.TempDir(), "evpack")
	ingestClosed(b, dir, evpack.Options{}, recs)
	c0 := cpuTime(b)
	for b.Loop() {
		eng, err := evpack.Open(dir, evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-c0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime returns the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngestTurns: the ObliQA corpus ingested on disk by evpack (Open,
// one Ingest, Close) and by bare bleve (one batch of the texts, Close),
// taking turns; it reports each system's CPU time per ingest (including
// the goroutines each starts, which Close waits for) and their ratio. The
// two go first in turn: the first ingest of a fresh process also pays for
// growing its heap (page faults, collections), which would otherwise fall on
// one system every time.
//
//	EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'IngestTurns' -benchtime 4x
func BenchmarkIngestTurns(b *testing.B) {
	recs, _ := Records(dataset(b))
	var ev, bl time.Duration
	i := 0
	for b.Loop() {
		dir := b.TempDir()
		evpackTurn := func() {
			c0 := cpuTime(b)
			ingestClosed(b, filepath.Join(dir, "evpack"), evpack.Options{}, recs)
			ev += cpuTime(b) - c0
		}
		bleveTurn := func() {
			c0 := cpuTime(b)
			idx := bareBleve(b, filepath.Join(dir, "bleve"))
			batch := idx.NewBatch()
			for _, r := range recs {
				if err := batch.Index(r.Chunk.ID, map[string]any{"text": r.Chunk.Text}); err != nil {
					b.Fatal(err)
				}
			}
			if err := idx.Batch(batch); err != nil {
				b.Fatal(err)
			}
			if err := idx.Close(); err != nil {
				b.Fatal(err)
			}
			bl += cpuTime(b) - c0
		}
		inTurn(i, evpackTurn, bleveTurn)
		i++
	}
	n := float64(b.N)
	b.ReportMetric(ev.Seconds()/n, "evpack-cpu-s")
	b.ReportMetric(bl.Seconds()/n, "bleve-cpu-s")
	b.ReportMetric(ev.Seconds()/bl.Seconds(), "cpu-ratio")
}

// ingestClosed opens an index in dir with opts, ingests recs in one batch
// and closes it.
func ingestClosed(b *testing.B, dir string, opts evpack.Options, recs []connectors.Record) {
	eng, err := evpack.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Ingest(context.Background(), connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
}
