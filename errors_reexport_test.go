package evpack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

// TestFailuresClassifyWithOneImport feeds the engine the bad input a service
// meets and classifies each failure with the root package's sentinels alone:
// a caller needs no import of evidence, asof or connectors to tell a bad date
// from a duplicate chunk.
func TestFailuresClassifyWithOneImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := `{"id":"a","doc_id":"d","text":"alpha","source_url":"u","retrieved_at":"2024-01-01T00:00:00Z"}`
	cases := []struct {
		name, body string
		want       error
	}{
		{"a malformed line is a syntax error", "{\"id\": \"b\",\n", evpack.ErrSyntax},
		{"an impossible date", `{"id":"b","doc_id":"d","text":"x","anchor":"2024-13-01"}`, evpack.ErrBadDate},
		{"an empty text", `{"id":"b","doc_id":"d","text":"  "}`, evpack.ErrEmptyText},
		{"no id", `{"doc_id":"d","text":"x"}`, evpack.ErrMissingID},
		{"an interval that ends before it starts", `{"id":"b","doc_id":"d","text":"x","valid_from":"2024-02-01","valid_to":"2024-01-01"}`, evpack.ErrBadInterval},
		{"one id, two texts", good + "\n" + `{"id":"a","doc_id":"d","text":"beta"}`, evpack.ErrDuplicateChunk},
		{"a metadata key with a space", `{"id":"b","doc_id":"d","text":"x","meta":{"Bad Key":"v"}}`, evpack.ErrBadMeta},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := evpack.OpenMemory(evpack.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			p := filepath.Join(dir, "case"+string(rune('a'+i))+".jsonl")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = e.Ingest(ctx, connectors.NewJSONL(p), evpack.IngestOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Ingest: got %v, want errors.Is(%v)", err, tc.want)
			}
		})
	}

	e, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Query(ctx, evpack.Request{Question: "q", AsOf: asof.MustDate("2026-01-01"), Tenant: "acme\x00"})
	if !errors.Is(err, evpack.ErrBadTenant) || !errors.Is(err, evpack.ErrBadRequest) {
		t.Errorf("bad tenant: got %v, want ErrBadTenant within ErrBadRequest", err)
	}
	for _, raw := range []string{"not json", `{"format":"evpack-pack/1"}`} {
		_, err = e.Verify(ctx, []byte(raw))
		if !errors.Is(err, evpack.ErrBadPack) && !errors.Is(err, evpack.ErrNotCanonical) {
			t.Errorf("Verify(%q): got %v, want ErrBadPack or ErrNotCanonical", raw, err)
		}
	}
}
