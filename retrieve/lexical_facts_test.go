package retrieve

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

func factsChunk(t *testing.T, id, text string) *evidence.Chunk {
	t.Helper()
	c := &evidence.Chunk{ID: id, DocID: id, Text: text, SourceURL: "u", Connector: "c",
		RetrievedAt: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC),
		Anchor:      asof.Anchor{At: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Field: "published"}}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c
}

// The retirement clause keeps out a document from its retirement day on;
// Readmit lets named documents back in, Exclude keeps them out whatever
// else holds; RollBack deletes a later
// generation's documents and puts back the ones a later fact re-indexed.
func TestLexicalRetirement(t *testing.T) {
	ctx := context.Background()
	l, err := OpenLexical("", LexicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, b := factsChunk(t, "a", "records retained five years"), factsChunk(t, "b", "records retained seven years")
	bounds := NewBounds()
	bounds.Add(a)
	bounds.Add(b)
	if err := l.Index(ctx, []Doc{{Chunk: a, Gen: 1}, {Chunk: b, Gen: 1}}); err != nil {
		t.Fatal(err)
	}
	// Generation 2: a fact retires a from 2024-06-01.
	if err := l.Index(ctx, []Doc{{Chunk: a, Gen: 1, Retired: asof.MustDate("2024-06-01"), FactGen: 2, FirstFactGen: 2}}); err != nil {
		t.Fatal(err)
	}
	bounds.Retire(asof.MustDate("2024-06-01"))
	ids := func(day string, pinned int64, readmit []string, exclude ...string) []string {
		t.Helper()
		e := Eligibility{AsOf: asof.MustDate(day), Readmit: readmit, Exclude: exclude, Pinned: pinned > 0, UpTo: pinned}
		res, err := l.Search(ctx, "records retained", e, bounds, 10, BM25Stats{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Hits {
			out = append(out, h.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name, day string
		pinned    int64
		readmit   []string
		exclude   []string
		want      []string
	}{
		{"before the retirement day", "2024-05-31", 0, nil, nil, []string{"a", "b"}},
		{"on it", "2024-06-01", 0, nil, nil, []string{"b"}},
		{"re-admitted by ID", "2024-06-01", 0, []string{"a"}, nil, []string{"a", "b"}},
		{"pinned before its first fact", "2024-06-01", 1, nil, nil, []string{"a", "b"}},
		{"pinned at its first fact", "2024-06-01", 2, nil, nil, []string{"b"}},
		{"kept out by ID", "2024-05-31", 0, nil, []string{"b"}, []string{"a"}},
		{"kept out by ID, though re-admitted", "2024-06-01", 0, []string{"a"}, []string{"a"}, []string{"b"}},
	} {
		if got := ids(tc.day, tc.pinned, tc.readmit, tc.exclude...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if n, err := l.CountAbove(ctx, 1); err != nil || n != 1 {
		t.Fatalf("CountAbove(1) = %d, %v; want the re-indexed document", n, err)
	}
	restored := 0
	if _, err := l.RollBack(ctx, 1, func(id string) (Doc, error) {
		restored++
		return Doc{Chunk: a, Gen: 1}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := ids("2024-06-01", 0, nil); restored != 1 || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after the roll back: restored %d, cited %v", restored, got)
	}
}

// An index made before facts existed (its mapping lacks the fields) opens
// and answers, and says it cannot hold facts.
func TestLexicalWithoutFactFields(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lexical")
	m := newMapping("en")
	delete(m.DefaultMapping.Properties, fieldRetired)
	delete(m.DefaultMapping.Properties, fieldFactGen)
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLexical(dir, LexicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.HoldsFacts() {
		t.Fatal("an index without the fact fields says it holds facts")
	}
	fresh, err := OpenLexical(filepath.Join(t.TempDir(), "new"), LexicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if !fresh.HoldsFacts() {
		t.Fatal("a new index cannot hold facts")
	}
}
