package evpack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/evidence"
)

// The living corpus's first three failures, on the fixtures in testdata: a
// source fetched again later says that something it said before has ended.
// Each test ingests the fetches in order and compares with one ingest of
// the last fetch, which was always right.

func fetchInOrder(t *testing.T, srcs ...connectors.Connector) (*Engine, []IngestReport) {
	t.Helper()
	e := checked(t, memEngine(t, Options{}))
	var reps []IngestReport
	for _, src := range srcs {
		rep, err := e.Ingest(context.Background(), src, IngestOptions{})
		require.NoError(t, err, src.Name())
		reps = append(reps, rep)
	}
	return e, reps
}

// sameCitations asserts that two engines, a fed fetch by fetch and b the
// last fetch, cite the same chunks, in the same order and with the same
// validity start, for r. The end shown differs where a later fetch ended a
// chunk: in a it is a fact, shown only from its anchor day (a pack never
// tells what was learned after its date, issue 31 item 10), while b's
// chunk carries it; where a shows an end, b shows the same.
func sameCitations(t *testing.T, a, b *Engine, r Request) *evidence.Pack {
	t.Helper()
	pa, err := a.Query(context.Background(), r)
	require.NoError(t, err)
	pb, err := b.Query(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, citedIDs(pb), citedIDs(pa), "as of %s", r.AsOf)
	for i := range pa.Citations {
		require.Equal(t, pb.Citations[i].Valid.From, pa.Citations[i].Valid.From, "as of %s, [%d]", r.AsOf, i+1)
		if !pa.Citations[i].Valid.To.IsZero() {
			require.Equal(t, pb.Citations[i].Valid.To, pa.Citations[i].Valid.To, "as of %s, [%d]", r.AsOf, i+1)
		}
	}
	return pa
}

// Failure 1 (ALFRED): the advance estimate fetched on 2020-05-15, then the
// series fetched again on 2020-07-01 with the estimate ended and two
// revisions added. The stale vintage used to keep its open validity ("3
// unchanged") and be cited as [1] as of 2020-06-01.
func TestALFREDRevisionFetchedLater(t *testing.T) {
	dir := "testdata/fred/history/"
	early := fred.New(time.Date(2020, 5, 15, 12, 0, 0, 0, time.UTC), dir+"2020-05-15/A191RL1Q225SBEA")
	late := fred.New(time.Date(2020, 7, 1, 12, 0, 0, 0, time.UTC), dir+"2020-07-01/A191RL1Q225SBEA")
	e, reps := fetchInOrder(t, early, late)
	require.Equal(t, IngestReport{Read: 4, Added: 2, Documents: 1, Versions: 2, Unchanged: 1, Facts: 2, Generation: 2,
		NewFacts: []evidence.Fact{*superseded("fred/A191RL1Q225SBEA/2020-01-01@2020-04-29", "2020-05-28", "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28"),
			*superseded("fred/A191RL1Q225SBEA/2020-01-01@2020-05-28", "2020-06-25", "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25")}}, reps[1],
		"the -4.8 vintage's end is a fact, not 'unchanged' (and -5.0 arrives ended by -5.1)")
	one, _ := fetchInOrder(t, late)

	const (
		advance = "fred/A191RL1Q225SBEA/2020-01-01@2020-04-29"
		second  = "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28"
		third   = "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25"
	)
	q := "Real Gross Domestic Product percent change 2020-01-01"
	p := sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2020-06-01"), K: 3})
	require.Equal(t, second, p.Citations[0].ChunkID, "as of 2020-06-01 the second estimate is [1]")
	require.NotContains(t, citedIDs(p), advance, "and the advance estimate is never cited")
	for _, day := range []string{"2020-04-29", "2020-05-27", "2020-05-28", "2020-06-24", "2020-06-25", "2020-07-15"} {
		sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate(day), K: 3})
	}
	p = sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2020-07-15"), K: 3})
	require.Equal(t, third, p.Citations[0].ChunkID)
}

// Failure 2 (EDGAR): a mirror fetched before Northwind's 10-K/A and again
// after it. The 10-K's restated items used to stay eligible after the
// amendment's acceptance (2025-04-20).
func TestEDGARAmendmentFetchedLater(t *testing.T) {
	before := edgar.New("testdata/edgar-history/before", time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC))
	after := edgar.New("testdata/edgar", time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC))
	e, reps := fetchInOrder(t, before, after)
	require.Equal(t, 3, reps[1].Facts, "items cover, 7 and 8 restated")
	one, _ := fetchInOrder(t, after)

	const (
		original = "edgar/0001234567/0001234567-25-000010/item-7/1"
		restated = "edgar/0001234567/0001234567-25-000021/item-7/1"
	)
	q := "Northwind revenue growth fiscal 2024 warehouse automation logistics customers"
	filter := map[string]string{"cik": "0001234567", "item": "7"}
	p := sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2025-04-19"), Filters: filter})
	require.Equal(t, []string{original}, citedIDs(p), "before the amendment: the 10-K")
	p = sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2025-04-20"), Filters: filter})
	require.Equal(t, []string{restated}, citedIDs(p), "from its acceptance day: the 10-K/A only")
	for _, day := range []string{"2025-02-14", "2025-03-10", "2025-05-01", "2026-01-01"} {
		sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate(day)})
		sameCitations(t, e, one, Request{Question: "Northwind net income revenue restated", AsOf: asof.MustDate(day)})
	}
}

// Failure 3 (JSONL): the same id and text sent again with a valid_to used
// to count "unchanged", its validity never ending. A retraction line
// retracts from its anchor.
func TestJSONLValidityChangeFetchedLater(t *testing.T) {
	dir := "testdata/corpus/history/"
	e, reps := fetchInOrder(t, connectors.NewJSONL(dir+"fetch-1.jsonl"), connectors.NewJSONL(dir+"fetch-2.jsonl"))
	require.Equal(t, IngestReport{Read: 4, Added: 1, Documents: 1, Versions: 1, Unchanged: 2, Facts: 1, Generation: 2,
		NewFacts: []evidence.Fact{{Kind: evidence.FactEnded, ChunkID: "gn-2025-03-v1", End: asof.MustDate("2025-07-01"), Anchor: reps[1].NewFacts[0].Anchor}}}, reps[1])
	f := e.st.Facts["gn-2025-03-v1"][0].Fact
	require.Equal(t, evidence.FactEnded, f.Kind)
	require.Equal(t, "2025-07-01", f.End.String())
	one, _ := fetchInOrder(t, connectors.NewJSONL(dir+"fetch-2.jsonl"))

	q := "how long must firms keep recordings of client telephone calls"
	p := sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2025-06-30"), K: 1})
	require.Equal(t, []string{"gn-2025-03-v1"}, citedIDs(p))
	require.Empty(t, p.Citations[0].Valid.To.String(), "the end a later fetch set, anchored 2025-07-01, was not known on 2025-06-30 (issue 31 item 10)")
	p = sameCitations(t, e, one, Request{Question: q, AsOf: asof.MustDate("2025-07-01"), K: 1})
	require.Equal(t, []string{"gn-2025-03-v2"}, citedIDs(p))

	// Retraction: cited until the day it was retracted, never after.
	rep, err := e.Ingest(context.Background(), connectors.NewJSONL(dir+"retract.jsonl"), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Facts)
	q = "introducing broker records clearing firm retention obligation"
	for _, tc := range []struct {
		day  string
		want []string
	}{{"2025-08-31", []string{"gn-2025-06"}}, {"2025-09-01", nil}} {
		p, err := e.Query(context.Background(), Request{Question: q, AsOf: asof.MustDate(tc.day), K: 1, Filters: map[string]string{"kind": "guidance"}})
		require.NoError(t, err)
		if tc.want == nil {
			require.NotContains(t, citedIDs(p), "gn-2025-06", tc.day)
		} else {
			require.Equal(t, tc.want, citedIDs(p), tc.day)
		}
	}
}
