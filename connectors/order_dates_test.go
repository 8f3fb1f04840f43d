package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
)

// TestStatuteVersionOrderDoesNotMatter: a statute whose versions are
// listed in another order gives the same records in the same order (they
// are walked in force order): IDs, validity and supersessions do not depend
// on how the file lists them. Seeded shuffles of the records act.
func TestStatuteVersionOrderDoesNotMatter(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "records-act.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	want, err := NewStatute().Parse("s.json", raw)
	if err != nil || len(want) == 0 {
		t.Fatalf("%d records, %v", len(want), err)
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	vs := f["versions"].([]any)
	for i := 0; i < 10; i++ {
		r.Shuffle(len(vs), func(a, b int) { vs[a], vs[b] = vs[b], vs[a] })
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewStatute().Parse("s.json", b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("shuffle %d: %d records, want %d", i, len(got), len(want))
		}
		for j := range got {
			g, w := got[j], want[j]
			if g.Chunk.ID != w.Chunk.ID || g.By != w.By || g.Chunk.Valid != w.Chunk.Valid || g.Chunk.Text != w.Chunk.Text || !reflect.DeepEqual(g.Chunk.Meta, w.Chunk.Meta) {
				t.Fatalf("shuffle %d, record %d: got %s by %q %v, want %s by %q %v", i, j, g.Chunk.ID, g.By, g.Chunk.Valid, w.Chunk.ID, w.By, w.Chunk.Valid)
			}
		}
	}
}

// TestJSONLDatesOutsideTheYears: a date or instant outside the years
// 1000-9999, year 0 or one that a time zone carries past 9999-12-31 in UTC,
// is asof.ErrBadDate and ErrField naming the line, chunk and field; an
// instant with a zone is read in UTC.
func TestJSONLDatesOutsideTheYears(t *testing.T) {
	for _, tc := range []struct{ field, value string }{
		{"valid_from", "0000-01-01"}, {"valid_to", "10000-01-01"}, {"anchor", "9999-12-31T23:59:59-05:00"},
		{"retrieved_at", "0999-12-31T23:59:59Z"}, {"anchor", "2025-02-30"}, {"valid_to", "2025-01-01T00:00:00Z"},
	} {
		line := `{"id":"a","doc_id":"d","text":"t","` + tc.field + `":"` + tc.value + `"}`
		_, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader(line))
		if !errors.Is(err, asof.ErrBadDate) || !errors.Is(err, ErrField) || !strings.HasPrefix(err.Error(), `x.jsonl:1: chunk "a": connectors: bad field: `+tc.field+": ") {
			t.Errorf("%s %s: got %v", tc.field, tc.value, err)
		}
	}
	recs, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader(
		`{"id":"a","doc_id":"d","text":"t","retrieved_at":"2025-01-14T23:30:00-05:00"}`))
	if err != nil || len(recs) != 1 || recs[0].Chunk.Anchor.At.Format(time.RFC3339) != "2025-01-15T04:30:00Z" || asof.DateOf(recs[0].Chunk.Anchor.At).String() != "2025-01-15" {
		t.Fatalf("got %+v, %v", recs, err)
	}
}
