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
//	EVPACK_OBLIQA_DIR=../shared/data/obliqa go test ./internal/obliqa -run '^$' -bench 'BenchmarkOpen$' -benchtime 5x
func BenchmarkOpen(b *testing.B) {
	o := dataset(b)
	recs, _ := Records(o)
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "evpack")
	eng, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
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
