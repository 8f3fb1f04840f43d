package connectors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatuteVersions(t *testing.T) {
	recs, err := NewStatute(filepath.Join("..", "testdata", "corpus", "records-act.json")).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]evidence.Chunk{}
	var order []string
	for _, r := range recs {
		got[r.Chunk.ID] = r.Chunk
		order = append(order, r.Chunk.ID)
	}
	want := []string{
		"records-act/art-0@2018", "records-act/art-1@2018", "records-act/art-2@2018", "records-act/art-3@2018", "records-act/art-4@2018",
		"records-act/art-2@2021", "records-act/art-3@2021", "records-act/art-5@2021",
		"records-act/art-1@2025", "records-act/art-2@2025", "records-act/art-4@2025",
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("chunks:\n got %v\nwant %v", order, want)
	}
	checks := []struct {
		id, from, to, anchor string
		why                  string
	}{
		{"records-act/art-0@2018", "2018-07-01", "", "2018-03-01T00:00:00Z", "the title never changes: one chunk, open-ended"},
		{"records-act/art-2@2018", "2018-07-01", "2021-04-01", "2018-03-01T00:00:00Z", "five years, until the 2021 amendment"},
		{"records-act/art-2@2021", "2021-04-01", "2026-01-01", "2021-02-15T00:00:00Z", "seven years"},
		{"records-act/art-2@2025", "2026-01-01", "", "2025-11-20T00:00:00Z", "ten years; published before in force"},
		{"records-act/art-3@2021", "2021-04-01", "", "2021-02-15T00:00:00Z", "unchanged in 2025: stays valid"},
		{"records-act/art-4@2018", "2018-07-01", "2026-01-01", "2018-03-01T00:00:00Z", "unchanged in 2021, changed in 2025"},
	}
	for _, c := range checks {
		ch := got[c.id]
		if ch.Valid.From.String() != c.from || ch.Valid.To.String() != c.to || asof.FormatInstant(ch.Anchor.At) != c.anchor ||
			ch.Anchor.Field != "published" {
			t.Errorf("%s (%s): valid %s anchor %s %s", c.id, c.why, ch.Valid, ch.Anchor.Field, asof.FormatInstant(ch.Anchor.At))
		}
	}
	if a2 := got["records-act/art-2@2021"]; !strings.HasPrefix(a2.Text, "Article 2 Retention period\n") || a2.Meta["article"] != "2" ||
		a2.Meta["jurisdiction"] != "example" || a2.SourceURL != "https://laws.example.org/records-act/2021" {
		t.Errorf("article 2 of 2021: %+v", a2)
	}
}

func TestStatuteErrors(t *testing.T) {
	cases := []struct {
		name, body string
		want       error
		where      string
	}{
		{"syntax error with line and column", "{\n \"doc_id\": \"x\",\n \"versions\": [}\n", ErrSyntax, "s.json:3:"},
		{"unknown field", `{"doc_id":"x","version":[]}`, ErrSyntax, "s.json"},
		{"bad in_force date", `{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-13-01","text":"Article 1 a"}]}`, asof.ErrBadDate, "versions[0]"},
		{"an article twice in one version", `{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-01-01","text":"Article 1 a\nArticle 1 b"}]}`, ErrField, "versions[0]"},
		{"two versions in force the same day", `{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-01-01","text":"Article 1 a"},{"published":"2020-01-01","in_force":"2020-01-01","text":"Article 1 b"}]}`, ErrField, "s.json"},
		{"no doc_id", `{"versions":[]}`, ErrField, "s.json"},
	}
	for _, c := range cases {
		_, err := NewStatute(write(t, "s.json", c.body)).Read(context.Background())
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	if _, err := NewStatute().WithArticlePattern(`(?m)^Art\.`); !errors.Is(err, ErrField) {
		t.Fatalf("a pattern without a capture group: %v", err)
	}
}

func TestStatuteCustomPatternAndRepeal(t *testing.T) {
	body := `{"doc_id":"law","source_url":"u","retrieved_at":"2024-01-01T00:00:00Z","versions":[
	 {"published":"2020-01-01","in_force":"2020-02-01","text":"Art. 1. one\nArt. 2. two"},
	 {"published":"2021-01-01","in_force":"2021-02-01","text":"Art. 1. one"}]}`
	s, err := NewStatute(write(t, "law.json", body)).WithArticlePattern(`(?m)^Art\.\s+([0-9]+)\.`)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Chunk.ID != "law/art-2@2020-02-01" || recs[1].Chunk.Valid.To.String() != "2021-02-01" ||
		!recs[0].Chunk.Valid.To.IsZero() {
		t.Fatalf("article 2 is repealed by the second version: %+v", recs)
	}
}

func TestJSONLFields(t *testing.T) {
	p := write(t, "c.jsonl", `{"id":"a","doc_id":"d","version":"2","text":"t","source_url":"u","retrieved_at":"2026-01-10T09:00:00Z","anchor":"2025-03-01","valid_from":"2025-01-01","valid_to":"2026-01-01","tenant":"acme","meta":{"k":"v"}}

{"id":"b","doc_id":"d","text":"no dates at all"}`)
	recs, err := NewJSONL(p).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := recs[0].Chunk
	if a.Anchor.Field != "anchor" || asof.FormatInstant(a.Anchor.At) != "2025-03-01T00:00:00Z" || a.Valid.String() != "[2025-01-01, 2026-01-01)" ||
		a.Tenant != "acme" || a.Meta["k"] != "v" || a.Connector != "jsonl" || recs[0].Where != p+":1" {
		t.Fatalf("a: %+v", recs[0])
	}
	b := recs[1].Chunk
	if b.Anchor.Field != asof.RetrievedAtField || !b.Anchor.At.IsZero() || recs[1].Where != p+":3" {
		t.Fatalf("b is undated, and blank lines still count: %+v", recs[1])
	}
}
