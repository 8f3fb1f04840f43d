package connectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestStatutePatternsWithoutALabel: a user's numbering pattern whose group
// may match "" or take no part in a match is refused where it does so, with
// ErrField naming the file and version; it made Read panic (an index out of
// range, a slice bound of -1).
func TestStatutePatternsWithoutALabel(t *testing.T) {
	body := `{"doc_id":"dpa","source_url":"https://x","retrieved_at":"2026-01-10T00:00:00Z","versions":[{"version":"2019","published":"2018-12-01","in_force":"2019-01-01",
	 "text":"Article 1 Scope\n(a) first\n() empty label\n* starred clause\nArticle Two\nbody"}]}`
	cases := []struct {
		name, article, clause, want string
	}{
		{"clause group may match the empty string", "", `(?m)^\(([a-z]*)\)\s`, `clause pattern matched "() "`},
		{"clause group optional", "", `(?m)^(?:\(([a-z])\)|\*)\s`, `clause pattern matched "* "`},
		{"article group optional", `(?m)^Article\s+([0-9]+)?`, "", `article pattern matched "Article "`},
	}
	for _, tc := range cases {
		s := NewStatute(write(t, "law.json", body))
		var err error
		if tc.article != "" {
			s, err = s.WithArticlePattern(tc.article)
		}
		if tc.clause != "" && err == nil {
			s, err = s.WithClausePattern(tc.clause)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err = s.Read(context.Background())
		var ce *evidence.ChunkError
		if !errors.Is(err, ErrField) || !errors.As(err, &ce) || !strings.Contains(ce.Where, "law.json") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrField naming law.json and %s", tc.name, err, tc.want)
		}
	}
}

// TestJSONLLineTooLong: a line over MaxJSONLLine is ErrSyntax naming its
// line, not the scanner's bare "token too long" naming the file alone.
func TestJSONLLineTooLong(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"id":"a","doc_id":"d","text":"ok"}` + "\n")
	b.WriteString(`{"id":"b","doc_id":"d","text":"` + strings.Repeat("x", MaxJSONLLine) + `"}` + "\n")
	_, err := NewJSONL().ReadFrom(context.Background(), "big.jsonl", &b)
	var ce *evidence.ChunkError
	if !errors.Is(err, ErrSyntax) || !errors.As(err, &ce) || ce.Where != "big.jsonl:2" {
		t.Fatalf("got %v, want ErrSyntax at big.jsonl:2", err)
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

// TestStatuteByNamesTheNextVersion: a unit a later version changes ends its
// chunk and names the new version's chunk (Record.By); a repealed unit's
// chunk ends and names nothing; an open chunk names nothing.
func TestStatuteByNamesTheNextVersion(t *testing.T) {
	type rec struct{ id, to, by string }
	cases := []struct {
		name string
		path string // a file under testdata, or "" for body
		body string
		want []rec
	}{
		{"the records act: articles changed in 2021 and 2025", filepath.Join("..", "testdata", "corpus", "records-act.json"), "", []rec{
			{"records-act/art-0@2018", "", ""},
			{"records-act/art-1@2018", "2026-01-01", "records-act/art-1@2025"},
			{"records-act/art-2@2018", "2021-04-01", "records-act/art-2@2021"},
			{"records-act/art-3@2018", "2021-04-01", "records-act/art-3@2021"},
			{"records-act/art-4@2018", "2026-01-01", "records-act/art-4@2025"},
			{"records-act/art-2@2021", "2026-01-01", "records-act/art-2@2025"},
			{"records-act/art-3@2021", "", ""},
			{"records-act/art-5@2021", "", ""},
			{"records-act/art-1@2025", "", ""},
			{"records-act/art-2@2025", "", ""},
			{"records-act/art-4@2025", "", ""},
		}},
		{"an amended clause, a repealed article", "", `{"doc_id":"dpa","versions":[{"version":"2020","published":"2020-01-15","in_force":"2020-03-01",
			"text":"Article 4 Consent\n(a) in writing;\n(b) by recorded call.\nArticle 6 Fees\nA fee of 100 dirhams applies."}],
			"amendments":[{"version":"2023","published":"2023-05-01","in_force":"2023-07-01","changes":[
			{"article":"4","replace":"by recorded call","with":"by recorded call or video call"},{"article":"6","repeal":true}]}]}`, []rec{
			{"dpa/art-4@2020", "", ""},
			{"dpa/art-4/a@2020", "", ""},
			{"dpa/art-4/b@2020", "2023-07-01", "dpa/art-4/b@2023"},
			{"dpa/art-6@2020", "2023-07-01", ""},
			{"dpa/art-4/b@2023", "", ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				path = write(t, "s.json", c.body)
			}
			recs, err := NewStatute(path).Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []rec
			for _, r := range recs {
				got = append(got, rec{r.Chunk.ID, r.Chunk.Valid.To.String(), r.By})
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("records:\n got %v\nwant %v", got, c.want)
			}
		})
	}
}

// TestJSONLFactLines: a line with a "fact" key is a fact about a chunk, in
// order among the chunk lines; a chunk line that merely mentions "fact" (a
// meta value, the text) stays a chunk.
func TestJSONLFactLines(t *testing.T) {
	p := write(t, "f.jsonl", `{"id":"a","doc_id":"d","text":"a fact sheet","meta":{"kind":"fact"}}
{"fact":"superseded","id":"a","end":"2025-07-01","anchor":"2025-06-16T10:30:00+02:00","by":"b"}

{"fact":"ended","id":"b","end":"2025-08-01","anchor":"2025-09-03"}
{"fact":"retracted","id":"fact","end":"2025-09-01","anchor":"2025-09-01T00:00:00Z"}`)
	recs, err := NewJSONL(p).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	day := asof.MustDate
	want := []struct {
		where string
		fact  *evidence.Fact
	}{
		{p + ":1", nil},
		{p + ":2", &evidence.Fact{Kind: evidence.FactSuperseded, ChunkID: "a", End: day("2025-07-01"),
			Anchor: time.Date(2025, 6, 16, 8, 30, 0, 0, time.UTC), By: "b"}},
		{p + ":4", &evidence.Fact{Kind: evidence.FactEnded, ChunkID: "b", End: day("2025-08-01"), Anchor: day("2025-09-03").Start()}},
		{p + ":5", &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: "fact", End: day("2025-09-01"), Anchor: day("2025-09-01").Start()}},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		switch {
		case r.Where != w.where:
			t.Errorf("record %d: where %q, want %q", i, r.Where, w.where)
		case w.fact == nil && (r.Fact != nil || r.Chunk.ID != "a" || r.Chunk.Meta["kind"] != "fact"):
			t.Errorf("record %d is the chunk: %+v", i, r)
		case w.fact != nil && (r.Fact == nil || r.Fact.Key() != w.fact.Key() || r.Fact.Anchor.Location() != time.UTC ||
			r.Chunk.ID != "" || r.By != ""):
			t.Errorf("record %d:\n got %+v\nwant %+v", i, r.Fact, w.fact)
		}
	}
}

// TestJSONLFactErrors: a bad fact line is refused with its file:line, and
// nothing of the file is returned.
func TestJSONLFactErrors(t *testing.T) {
	chunk := `{"id":"a","doc_id":"d","text":"t"}` + "\n"
	cases := []struct {
		name, line string
		want       []error
	}{
		{"unknown kind", `{"fact":"withdrawn","id":"a","end":"2025-09-01","anchor":"2025-09-01"}`, []error{ErrField, evidence.ErrBadFact}},
		{"no end", `{"fact":"retracted","id":"a","anchor":"2025-09-01"}`, []error{ErrField, evidence.ErrBadFact}},
		{"no anchor", `{"fact":"retracted","id":"a","end":"2025-09-01"}`, []error{ErrField, evidence.ErrBadFact}},
		{"no chunk id", `{"fact":"retracted","end":"2025-09-01","anchor":"2025-09-01"}`, []error{ErrField, evidence.ErrBadFact}},
		{"superseded without by", `{"fact":"superseded","id":"a","end":"2025-09-01","anchor":"2025-09-01"}`, []error{ErrField, evidence.ErrBadFact}},
		{"by on a retraction", `{"fact":"retracted","id":"a","end":"2025-09-01","anchor":"2025-09-01","by":"b"}`, []error{ErrField, evidence.ErrBadFact}},
		{"superseded by itself", `{"fact":"superseded","id":"a","end":"2025-09-01","anchor":"2025-09-01","by":"a"}`, []error{ErrField, evidence.ErrBadFact}},
		{"unknown field", `{"fact":"retracted","id":"a","end":"2025-09-01","anchor":"2025-09-01","text":"t"}`, []error{ErrSyntax}},
		{"bad end date", `{"fact":"ended","id":"a","end":"1 Sept 2025","anchor":"2025-09-01"}`, []error{ErrField, asof.ErrBadDate}},
		{"bad anchor", `{"fact":"ended","id":"a","end":"2025-09-01","anchor":"2025-09-01 10:00"}`, []error{ErrField, asof.ErrBadDate}},
		{"kind not a string", `{"fact":true,"id":"a","end":"2025-09-01","anchor":"2025-09-01"}`, []error{ErrSyntax}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, "f.jsonl", chunk+c.line+"\n"+chunk)
			recs, err := NewJSONL(p).Read(context.Background())
			if err == nil {
				t.Fatalf("accepted: %+v", recs)
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("%v is not %v", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), p+":2: ") || recs != nil {
				t.Errorf("the error names %s:2: %v (records %v)", p, err, recs)
			}
		})
	}
}

// TestJSONLHistoryFixtures: the two fetches of a guidance feed and the
// retraction that testdata/corpus/history holds for the engine's tests. The
// second fetch sends gn-2025-03-v1 again identical but for its valid_to, and
// adds its replacement.
func TestJSONLHistoryFixtures(t *testing.T) {
	dir := filepath.Join("..", "testdata", "corpus", "history")
	read := func(name string) []Record {
		t.Helper()
		recs, err := NewJSONL(filepath.Join(dir, name)).Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	ids := func(recs []Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Chunk.ID)
		}
		return out
	}
	first, second := read("fetch-1.jsonl"), read("fetch-2.jsonl")
	if got := ids(first); !slices.Equal(got, []string{"gn-2025-03-v1", "gn-2025-05", "gn-2025-06"}) {
		t.Fatalf("fetch-1: %v", got)
	}
	if got := ids(second); !slices.Equal(got, []string{"gn-2025-03-v1", "gn-2025-03-v2", "gn-2025-05", "gn-2025-06"}) {
		t.Fatalf("fetch-2: %v", got)
	}
	for i, c := range []struct {
		name       string
		a, b       *evidence.Chunk
		same, ends bool
	}{
		{"gn-2025-03-v1 ends", &first[0].Chunk, &second[0].Chunk, false, true},
		{"gn-2025-05 fetched again unchanged", &first[1].Chunk, &second[2].Chunk, true, true},
		{"gn-2025-06 fetched again unchanged", &first[2].Chunk, &second[3].Chunk, true, true},
	} {
		if evidence.SameEvidence(c.a, c.b) != c.same || evidence.SameExceptEnd(c.a, c.b) != c.ends || c.a.Tenant != "" {
			t.Errorf("case %d, %s: same %v, same but for the end %v", i, c.name, evidence.SameEvidence(c.a, c.b), evidence.SameExceptEnd(c.a, c.b))
		}
	}
	if v1, v2 := second[0].Chunk, second[1].Chunk; v1.Valid.String() != "[2025-03-14, 2025-07-01)" || !first[0].Chunk.Valid.To.IsZero() ||
		v2.Valid.String() != "[2025-07-01, …)" || v2.DocID != v1.DocID {
		t.Errorf("gn-2025-03: v1 %s (first fetch %s), v2 %s", v1.Valid, first[0].Chunk.Valid, v2.Valid)
	}
	retract := read("retract.jsonl")
	want := evidence.Fact{Kind: evidence.FactRetracted, ChunkID: "gn-2025-06", End: asof.MustDate("2025-09-01"),
		Anchor: asof.MustDate("2025-09-01").Start()}
	if len(retract) != 1 || retract[0].Fact == nil || retract[0].Fact.Key() != want.Key() {
		t.Fatalf("retract.jsonl: %+v", retract)
	}
}

// Two versions of a statute with the same label would give their chunks one
// ID, or with equal texts merge the second into the first silently: refused
// with ErrDuplicateVersion naming both (issue 31, item 8; FuzzStatute found
// "a chunk cannot supersede itself" on b3bfa5e). A version without a label
// is labelled by its in_force day, which counts too.
func TestStatuteDuplicateVersionLabels(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"different texts", `{"doc_id":"x","versions":[{"version":"v","published":"2020-01-01","in_force":"2020-01-01","text":"§ 1 a"},` +
			`{"version":"v","published":"2020-06-01","in_force":"2020-07-01","text":"§ 1 b"}]}`,
			`s.json: chunk "x": connectors: bad field: two versions share a label: versions[0] and versions[1] are both labelled "v"`},
		{"equal texts", `{"doc_id":"x","versions":[{"version":"v","published":"2020-01-01","in_force":"2020-01-01","text":"§ 1 a"},` +
			`{"version":"v","published":"2020-06-01","in_force":"2020-07-01","text":"§ 1 a"}]}`,
			`versions[0] and versions[1] are both labelled "v"`},
		{"an amendment", `{"doc_id":"x","versions":[{"version":"v","published":"2020-01-01","in_force":"2020-01-01","text":"§ 1 a"}],` +
			`"amendments":[{"version":"v","published":"2020-06-01","in_force":"2020-07-01","changes":[{"article":"1","text":"§ 1 b"}]}]}`,
			`versions[0] and amendments[0] are both labelled "v"`},
		{"a label equal to an in_force day", `{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-01-01","text":"§ 1 a"},` +
			`{"version":"2020-01-01","published":"2020-06-01","in_force":"2020-07-01","text":"§ 1 b"}]}`,
			`versions[0] and versions[1] are both labelled "2020-01-01"`},
	} {
		_, err := NewStatute().Parse("s.json", []byte(tc.raw))
		if !errors.Is(err, ErrDuplicateVersion) || !errors.Is(err, ErrField) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrDuplicateVersion saying %q", tc.name, err, tc.want)
		}
	}
}
