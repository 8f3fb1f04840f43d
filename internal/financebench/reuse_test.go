package financebench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/evpack/evpack"
)

// tinyChunks writes a chunks.jsonl.gz of two companies, two pages each.
func tinyChunks(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	for _, cik := range []string{"a", "b"} {
		for p := range 2 {
			fmt.Fprintf(z, `{"id":"%s_2020_10K#p%d","doc_id":"%s_2020_10K","text":"Company %s page %d: capital expenditure was %d million.","source_url":"https://example.com/%s.pdf#page=%d","retrieved_at":"2026-12-01T00:00:00Z","anchor":"2021-03-01","meta":{"company":"%s","cik":"%s"}}`+"\n",
				cik, p, cik, cik, p, 10+p, cik, p+1, cik, cik)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chunks.jsonl.gz"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenRefusesAnIndexOfOtherChunks: an --index made for company a was
// opened for company b (or for every company, or after an interrupted first
// run left it empty), and every question asked of the wrong corpus.
func TestOpenRefusesAnIndexOfOtherChunks(t *testing.T) {
	ctx := context.Background()
	dir := tinyChunks(t)
	index := filepath.Join(t.TempDir(), "idx")
	eng, err := Open(ctx, dir, index, []string{"a"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	eng.Close()
	eng, err = Open(ctx, dir, index, []string{"a"}, io.Discard) // the same companies: reused
	if err != nil {
		t.Fatalf("reopening for the same companies: %v", err)
	}
	eng.Close()
	for _, ciks := range [][]string{{"b"}, nil} {
		if eng, err := Open(ctx, dir, index, ciks, io.Discard); !errors.Is(err, ErrIndexMismatch) {
			if eng != nil {
				eng.Close()
			}
			t.Fatalf("companies %v over an index of a: %v, want ErrIndexMismatch", ciks, err)
		}
	}

	empty := filepath.Join(t.TempDir(), "empty")
	e, err := evpack.Open(empty, evpack.Options{}) // a first run killed before its ingest committed
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if eng, err := Open(ctx, dir, empty, nil, io.Discard); !errors.Is(err, ErrIndexMismatch) {
		if eng != nil {
			eng.Close()
		}
		t.Fatalf("an empty index: %v, want ErrIndexMismatch", err)
	}
}
