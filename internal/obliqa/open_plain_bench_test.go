package obliqa

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// BenchmarkOpen: the ObliQA corpus on disk, lexical leg only; per
// iteration, Open and Close. What a service pays to start.
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
	for b.Loop() {
		eng, err := evpack.Open(dir, evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
