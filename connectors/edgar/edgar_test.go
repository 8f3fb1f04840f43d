package edgar

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/textblocks"
)

var retrieved = time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)

const (
	northwind = "0001234567"
	contoso   = "0007654321"
	original  = "0001234567-25-000010" // 10-K accepted 2025-02-14
	amendment = "0001234567-25-000021" // 10-K/A accepted 2025-04-20
)

func root() string { return filepath.Join("..", "..", "testdata", "edgar") }

func engine(t *testing.T, opts evpack.Options) *evpack.Engine {
	t.Helper()
	eng, err := evpack.OpenMemory(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Check()); eng.Close() })
	_, err = eng.Ingest(context.Background(), New(root(), retrieved), evpack.IngestOptions{})
	require.NoError(t, err)
	return eng
}

func ask(t *testing.T, eng *evpack.Engine, q, day string, filters map[string]string) *evidence.Pack {
	t.Helper()
	p, err := eng.Query(context.Background(), evpack.Request{Question: q, AsOf: asof.MustDate(day), Filters: filters, K: 5})
	require.NoError(t, err)
	return p
}

func TestAmendmentFiledAfterAsOfIsNeverCited(t *testing.T) {
	eng := engine(t, evpack.Options{})
	q := "How much did revenue increase in fiscal 2024, and what was net income?"
	f := map[string]string{"cik": northwind}

	before := ask(t, eng, q, "2025-04-19", f)
	require.NotEmpty(t, before.Citations)
	for _, c := range before.Citations {
		require.NotEqual(t, amendment, c.Meta["accession"], "the 10-K/A was accepted on 2025-04-20")
		require.Equal(t, AnchorField, c.Anchor.Field)
	}
	// The original item 7 answers (the learned reranker ranks item 8, with
	// the net income, first; the arithmetic ranked item 7 first).
	i := slices.Index(citedIDs(before), "edgar/"+northwind+"/"+original+"/item-7/1")
	require.GreaterOrEqual(t, i, 0, "the original item 7 is cited: %v", citedIDs(before))
	require.Less(t, i, 2, "among the first two: %v", citedIDs(before))
	require.Contains(t, before.Citations[i].Text, "$412.6 million")

	after := ask(t, eng, q, "2025-05-01", f)
	ids := map[string]bool{}
	for _, c := range after.Citations {
		ids[c.ChunkID] = true
	}
	require.True(t, ids["edgar/"+northwind+"/"+amendment+"/item-7/1"], "the restated item 7 is cited: %v", ids)
	require.False(t, ids["edgar/"+northwind+"/"+original+"/item-7/1"], "the original item 7 was superseded on 2025-04-20")
	require.False(t, ids["edgar/"+northwind+"/"+original+"/item-8/1"], "so was the original item 8")

	// Items the amendment does not restate stay citable from the original.
	risk := ask(t, eng, "Which supplier risk does the company face for lidar sensors?", "2025-05-01", f)
	require.Contains(t, citedIDs(risk), "edgar/"+northwind+"/"+original+"/item-1a/1")
}

func citedIDs(p *evidence.Pack) []string {
	var ids []string
	for _, c := range p.Citations {
		ids = append(ids, c.ChunkID)
	}
	return ids
}

// TestCompanyFilterAndNameStripping: restricted to Northwind, no Contoso
// chunk is ever cited; and Northwind's name, which its boilerplate repeats
// six times, is removed from the ranking text, so the answer wins instead.
func TestCompanyFilterAndNameStripping(t *testing.T) {
	q := "What drove Northwind Robotics revenue growth in fiscal 2024?"
	f := map[string]string{"cik": northwind}
	stripped := ask(t, engine(t, evpack.Options{}), q, "2025-03-01", f)
	kept := ask(t, engine(t, evpack.Options{KeepEntityNames: true}), q, "2025-03-01", f)

	for _, p := range []*evidence.Pack{stripped, kept} {
		for _, c := range p.Citations {
			require.Equal(t, northwind, c.Meta["cik"], "%s", c.ChunkID)
		}
	}
	require.Equal(t, "edgar/"+northwind+"/"+original+"/item-cover/1", kept.Citations[0].ChunkID,
		"with the name kept, the forward-looking boilerplate wins")
	require.Contains(t, kept.Citations[0].Text, "forward-looking statements")
	require.Equal(t, "edgar/"+northwind+"/"+original+"/item-7/1", stripped.Citations[0].ChunkID,
		"with the name removed, the passage that answers wins")
	require.Contains(t, stripped.Trace.Steps, `ranking text: removed "Northwind Robotics" (filter cik=0001234567)`)
	require.Equal(t, q, stripped.Question, "the pack keeps the question as asked")

	all := ask(t, engine(t, evpack.Options{}), "revenue growth in fiscal 2024 warehouse", "2025-03-01", nil)
	companies := map[string]bool{}
	for _, c := range all.Citations {
		companies[c.Meta["cik"]] = true
	}
	require.True(t, companies[contoso] && companies[northwind], "without the filter both companies compete")
}

func TestChunkStructure(t *testing.T) {
	recs, err := New(root(), retrieved).Read(context.Background())
	require.NoError(t, err)
	byID := map[string]connectors.Record{}
	var ids []string
	for _, r := range recs {
		byID[r.Chunk.ID] = r
		ids = append(ids, r.Chunk.ID)
	}
	want := []string{
		"edgar/0001234567/0001234567-25-000021/item-cover/1", "edgar/0001234567/0001234567-25-000021/item-7/1", "edgar/0001234567/0001234567-25-000021/item-8/1",
		"edgar/0001234567/0001234567-25-000015/item-cover/1", "edgar/0001234567/0001234567-25-000015/item-2.02/1", "edgar/0001234567/0001234567-25-000015/item-9.01/1",
		"edgar/0001234567/0001234567-25-000010/item-cover/1", "edgar/0001234567/0001234567-25-000010/item-1/1", "edgar/0001234567/0001234567-25-000010/item-1a/1",
		"edgar/0001234567/0001234567-25-000010/item-7/1", "edgar/0001234567/0001234567-25-000010/item-7a/1", "edgar/0001234567/0001234567-25-000010/item-8/1",
		"edgar/0007654321/0007654321-25-000005/item-cover/1", "edgar/0007654321/0007654321-25-000005/item-1/1", "edgar/0007654321/0007654321-25-000005/item-7/1",
	}
	require.Equal(t, want, ids, "form 4 is skipped; the table of contents stays in the cover")
	item8 := byID["edgar/0001234567/0001234567-25-000010/item-8/1"].Chunk
	require.Contains(t, item8.Text, "(in millions) | 2024 | 2023\nRevenue | $412.6 | $349.7\nGross profit | $169.2 | $129.4", "the table is kept whole")
	require.Equal(t, map[string]string{"accession": original, "cik": northwind, "company": "Northwind Robotics Inc.", "filing_date": "2025-02-14",
		"fiscal_year": "2024", "form": "10-K", "item": "8", "ticker": "NWRB",
		"entity_key": "cik", "entity_names": "Northwind Robotics Inc.|Northwind Robotics|NWRB"}, item8.Meta,
		"the connector declares the names a question about this company is ranked without")
	require.Equal(t, "2025-02-14T16:32:11Z", asof.FormatInstant(item8.Anchor.At))
	require.Equal(t, "2025-04-20", item8.Valid.To.String(), "restated by the amendment")
	require.Equal(t, "edgar/0001234567/10-K/2024-12-31", item8.DocID)
	require.Equal(t, item8.DocID, byID["edgar/0001234567/0001234567-25-000021/item-8/1"].Chunk.DocID, "the amendment is a new version of the same report")
	require.Equal(t, "https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/nwrb-20241231.htm", item8.SourceURL)
	require.True(t, byID["edgar/0001234567/0001234567-25-000010/item-1/1"].Chunk.Valid.To.IsZero(), "item 1 was not restated")
}

func TestSentencesNeverSplitMidSentence(t *testing.T) {
	s := strings.Repeat("The company sold robots to customers in 2024. ", 60) + "Revenue rose (sharply) in Q4."
	parts := textblocks.Sentences(s, MaxChunkChars)
	require.Greater(t, len(parts), 1)
	for _, p := range parts {
		require.LessOrEqual(t, len(p), MaxChunkChars)
		require.True(t, strings.HasSuffix(p, "."), "ends at a sentence end: %q", p[max(0, len(p)-20):])
	}
	require.Equal(t, strings.TrimSpace(s), strings.Join(parts, " "))
}

func TestParseSubmissionsErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(root(), "submissions", "CIK0007654321.json"))
	require.NoError(t, err)
	mutate := func(from, to string) string { return strings.Replace(string(good), from, to, 1) }
	cases := []struct {
		name, body string
		want       error
		where      string
	}{
		{"not JSON", "{\"cik\": ]", connectors.ErrSyntax, "s.json:1:"},
		{"no CIK", mutate(`"cik":"0007654321"`, `"cik":"abc"`), connectors.ErrField, "cik"},
		{"arrays of different lengths", mutate(`"form":["10-K"]`, `"form":["10-K","10-Q"]`), connectors.ErrField, "filings.recent.form"},
		{"bad acceptance time", mutate(`2025-02-28T14:02:37.000Z`, `28/02/2025`), asof.ErrBadDate, "filings.recent[0]"},
		{"primary document escapes its folder", mutate(`cnts-20241231.htm`, `../../secret.htm`), connectors.ErrField, "primaryDocument"},
		{"bad accession", mutate(`0007654321-25-000005`, `7654321-25-5`), connectors.ErrField, "accessionNumber"},
	}
	for _, c := range cases {
		_, err := ParseSubmissions("s.json", []byte(c.body))
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		require.Contains(t, err.Error(), c.where, c.name)
	}
}

func FuzzParseSubmissions(f *testing.F) {
	for _, name := range []string{"CIK0001234567.json", "CIK0007654321.json"} {
		raw, _ := os.ReadFile(filepath.Join(root(), "submissions", name))
		f.Add(raw)
	}
	f.Add([]byte(`{"cik":"1","filings":{"recent":{"accessionNumber":["x"]}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		filings, err := ParseSubmissions("s.json", raw)
		if err != nil {
			return
		}
		for _, fl := range filings {
			if fl.PrimaryDocument != filepath.Base(fl.PrimaryDocument) || fl.Accepted.IsZero() {
				t.Fatalf("accepted a bad filing %+v", fl)
			}
		}
	})
}

func FuzzChunks(f *testing.F) {
	for _, p := range []string{
		"Archives/edgar/data/1234567/000123456725000010/nwrb-20241231.htm",
		"Archives/edgar/data/1234567/000123456725000015/nwrb-8k-20250303.txt",
	} {
		raw, _ := os.ReadFile(filepath.Join(root(), p))
		f.Add(raw, strings.HasSuffix(p, ".htm"))
	}
	f.Add([]byte("<table><tr><td>Item 7.<td>x</table><p>Item 7. y"), true)
	f.Fuzz(func(t *testing.T, doc []byte, isHTML bool) {
		fl := Filing{CIK: northwind, Accession: original, Form: "10-K", PrimaryDocument: "d.txt", Accepted: retrieved}
		if isHTML {
			fl.PrimaryDocument = "d.htm"
		}
		seen := map[string]bool{}
		for _, r := range Chunks(fl, "d", doc, retrieved) {
			if seen[r.Chunk.ID] {
				t.Fatalf("duplicate chunk id %s", r.Chunk.ID)
			}
			seen[r.Chunk.ID] = true
		}
	})
}

// TestAmendmentNamesTheRestatingChunk: an item the 10-K/A restates ends in
// the 10-K on the amendment's acceptance day, and its record names the
// amendment's first chunk of that item (Record.By); nothing else ends.
func TestAmendmentNamesTheRestatingChunk(t *testing.T) {
	recs, err := New(root(), retrieved).Read(context.Background())
	require.NoError(t, err)
	type rec struct{ id, to, by string }
	var got []rec
	for _, r := range recs {
		got = append(got, rec{r.Chunk.ID, r.Chunk.Valid.To.String(), r.By})
	}
	nw := func(accession, item string) string {
		return "edgar/" + northwind + "/" + accession + "/item-" + item + "/1"
	}
	ct := func(item string) string { return "edgar/" + contoso + "/0007654321-25-000005/item-" + item + "/1" }
	eightK := "0001234567-25-000015"
	require.Equal(t, []rec{
		{nw(amendment, "cover"), "", ""}, {nw(amendment, "7"), "", ""}, {nw(amendment, "8"), "", ""},
		{nw(eightK, "cover"), "", ""}, {nw(eightK, "2.02"), "", ""}, {nw(eightK, "9.01"), "", ""},
		{nw(original, "cover"), "2025-04-20", nw(amendment, "cover")},
		{nw(original, "1"), "", ""},
		{nw(original, "1a"), "", ""},
		{nw(original, "7"), "2025-04-20", nw(amendment, "7")},
		{nw(original, "7a"), "", ""},
		{nw(original, "8"), "2025-04-20", nw(amendment, "8")},
		{ct("cover"), "", ""}, {ct("1"), "", ""}, {ct("7"), "", ""},
	}, got)
}

// TestSupersedeByEarliestLaterAmendment: with two amendments of a report, a
// chunk is ended by, and names, the earliest accepted after it (its day is
// the end); the first amendment's own item is ended by the second; every
// chunk of a restated item names the restating item's chunk 1.
func TestSupersedeByEarliestLaterAmendment(t *testing.T) {
	at := func(s string) time.Time { x, err := asof.ParseInstant(s); require.NoError(t, err); return x }
	chunk := func(accession, form, item string, n int, accepted string) connectors.Record {
		return connectors.Record{Chunk: evidence.Chunk{
			ID:    "edgar/" + northwind + "/" + accession + "/item-" + item + "/" + strconv.Itoa(n),
			DocID: "edgar/" + northwind + "/10-K/2024-12-31", Anchor: asof.Anchor{Field: AnchorField, At: at(accepted)},
			Meta: map[string]string{"form": form, "item": item, "accession": accession},
		}}
	}
	cases := []struct {
		name string
		recs []connectors.Record
		want [][2]string // end, by of each record
	}{
		{"listed latest first, as EDGAR does", []connectors.Record{
			chunk("A2", "10-K/A", "7", 1, "2025-06-02T10:00:00Z"),
			chunk("A1", "10-K/A", "7", 1, "2025-04-20T16:05:44Z"),
			chunk("A1", "10-K/A", "7", 2, "2025-04-20T16:05:44Z"),
			chunk("K", "10-K", "7", 1, "2025-02-14T16:32:11Z"),
			chunk("K", "10-K", "7", 2, "2025-02-14T16:32:11Z"),
			chunk("K", "10-K", "8", 1, "2025-02-14T16:32:11Z"),
		}, [][2]string{
			{"", ""},
			{"2025-06-02", "edgar/" + northwind + "/A2/item-7/1"},
			{"2025-06-02", "edgar/" + northwind + "/A2/item-7/1"},
			{"2025-04-20", "edgar/" + northwind + "/A1/item-7/1"},
			{"2025-04-20", "edgar/" + northwind + "/A1/item-7/1"},
			{"", ""},
		}},
		{"an amendment accepted the same day, later", []connectors.Record{
			chunk("A1", "10-K/A", "7", 1, "2025-02-14T20:00:00Z"),
			chunk("K", "10-K", "7", 1, "2025-02-14T16:32:11Z"),
		}, [][2]string{
			{"", ""},
			{"2025-02-14", "edgar/" + northwind + "/A1/item-7/1"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			supersede(c.recs)
			var got [][2]string
			for _, r := range c.recs {
				got = append(got, [2]string{r.Chunk.Valid.To.String(), r.By})
			}
			require.Equal(t, c.want, got)
		})
	}
}

// TestMirrorBeforeTheAmendment: the mirror as it stood before the 10-K/A
// (testdata/edgar-history/before) has the 10-K's items open and naming
// nothing; testdata/edgar is the same mirror after it.
func TestMirrorBeforeTheAmendment(t *testing.T) {
	recs, err := New(filepath.Join("..", "..", "testdata", "edgar-history", "before"), retrieved).Read(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		require.True(t, r.Chunk.Valid.To.IsZero(), "%s", r.Chunk.ID)
		require.Empty(t, r.By, "%s", r.Chunk.ID)
		ids = append(ids, r.Chunk.ID)
	}
	require.Equal(t, []string{
		"edgar/0001234567/0001234567-25-000015/item-cover/1", "edgar/0001234567/0001234567-25-000015/item-2.02/1", "edgar/0001234567/0001234567-25-000015/item-9.01/1",
		"edgar/0001234567/0001234567-25-000010/item-cover/1", "edgar/0001234567/0001234567-25-000010/item-1/1", "edgar/0001234567/0001234567-25-000010/item-1a/1",
		"edgar/0001234567/0001234567-25-000010/item-7/1", "edgar/0001234567/0001234567-25-000010/item-7a/1", "edgar/0001234567/0001234567-25-000010/item-8/1",
		"edgar/0007654321/0007654321-25-000005/item-cover/1", "edgar/0007654321/0007654321-25-000005/item-1/1", "edgar/0007654321/0007654321-25-000005/item-7/1",
	}, ids)
}
