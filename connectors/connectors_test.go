package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

func TestStatuteClausesAndAmendments(t *testing.T) {
	long := strings.Repeat("The operator must keep the log for inspection by the Authority. ", 30)
	body := `{"doc_id":"dpa","source_url":"https://laws.example.org/dpa","retrieved_at":"2026-01-10T00:00:00Z",
	"versions":[{"version":"2020","published":"2020-01-15","in_force":"2020-03-01","text":` + strconvQuote(
		"Article 4 Lawful processing\nProcessing is lawful only if:\n(1) the subject consented;\n(a) in writing; or\n(b) by recorded call;\n(2) it is needed for a contract.\n"+
			"Article 5 Logs\n(g) "+long+"\nArticle 6 Fees\nA fee of 100 dirhams applies.") + `}],
	"amendments":[{"version":"2023","published":"2023-05-01","in_force":"2023-07-01","changes":[
		{"article":"4","replace":"by recorded call","with":"by recorded call or video call"},
		{"article":"6","repeal":true},
		{"article":"7","text":"Article 7 Transfers\nTransfers abroad need approval."}]}]}`
	recs, err := NewStatute(write(t, "dpa.json", body)).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]evidence.Chunk{}
	var ids []string
	for _, r := range recs {
		got[r.Chunk.ID] = r.Chunk
		ids = append(ids, r.Chunk.ID)
	}
	want := []string{
		"dpa/art-4@2020", "dpa/art-4/1@2020", "dpa/art-4/1/a@2020", "dpa/art-4/1/b@2020", "dpa/art-4/2@2020",
		"dpa/art-5@2020", "dpa/art-5/g#1@2020", "dpa/art-5/g#2@2020", "dpa/art-6@2020",
		"dpa/art-4/1/b@2023", "dpa/art-7@2023",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("chunks:\n got %v\nwant %v", ids, want)
	}
	b := got["dpa/art-4/1/b@2020"]
	if b.Text != "Article 4 Lawful processing\n(b) by recorded call;" || b.Meta["clause"] != "1/b" || b.Meta["article"] != "4" ||
		b.Valid.String() != "[2020-03-01, 2023-07-01)" {
		t.Fatalf("clause 4(1)(b) reads on its own and ends when amended: %+v", b)
	}
	if c := got["dpa/art-4/1/b@2023"]; c.Text != "Article 4 Lawful processing\n(b) by recorded call or video call;" || !c.Valid.To.IsZero() ||
		asof.FormatInstant(c.Anchor.At) != "2023-05-01T00:00:00Z" {
		t.Fatalf("the amendment replayed: %+v", c)
	}
	if a := got["dpa/art-4/1/a@2020"]; !a.Valid.To.IsZero() {
		t.Fatalf("4(1)(a) is unchanged by the amendment and stays valid: %s", a.Valid)
	}
	if got["dpa/art-6@2020"].Valid.To.String() != "2023-07-01" {
		t.Fatalf("article 6 is repealed: %s", got["dpa/art-6@2020"].Valid)
	}
	g1, g2 := got["dpa/art-5/g#1@2020"], got["dpa/art-5/g#2@2020"]
	if len(g1.Text) > MaxClauseChars || !strings.HasSuffix(g1.Text, "Authority.") || !strings.HasSuffix(g2.Text, "Authority.") {
		t.Fatalf("a long clause splits at sentence ends: %d bytes", len(g1.Text))
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestStatuteAmendmentRefused(t *testing.T) {
	base := `{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-02-01","text":"Article 1 five years, five years\nArticle 2 ten days"}],"amendments":[%s]}`
	cases := []struct {
		name, amendment, want string
	}{
		{"text not found", `{"published":"2021-01-01","in_force":"2021-02-01","changes":[{"article":"2","replace":"eleven days","with":"x"}]}`, `article 2 does not contain "eleven days"`},
		{"text ambiguous", `{"published":"2021-01-01","in_force":"2021-02-01","changes":[{"article":"1","replace":"five years","with":"x"}]}`, `contains "five years" 2 times`},
		{"no such article", `{"published":"2021-01-01","in_force":"2021-02-01","changes":[{"article":"9","repeal":true}]}`, "article 9 to repeal does not exist"},
		{"before the version it amends", `{"published":"2019-01-01","in_force":"2019-02-01","changes":[]}`, "is not after version"},
		{"two kinds of change at once", `{"published":"2021-01-01","in_force":"2021-02-01","changes":[{"article":"2","replace":"ten","repeal":true}]}`, "exactly one of"},
	}
	for _, c := range cases {
		_, err := NewStatute(write(t, "x.json", fmt.Sprintf(base, c.amendment))).Read(context.Background())
		if !errors.Is(err, ErrField) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "amendments[0]") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
