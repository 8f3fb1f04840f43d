package evpack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// vintage is one ALFRED-like value of an observation: published on start,
// current until end (zero: still current), replaced by next.
func vintage(t testing.TB, id, text, start, end, next, fetched string) connectors.Record {
	t.Helper()
	c := evidence.Chunk{ID: id, DocID: "series/GDP", Version: start, Text: text,
		SourceURL: "https://example.test/series/GDP", Connector: "test",
		RetrievedAt: asof.MustDate(fetched).Start(),
		Anchor:      asof.Anchor{At: asof.MustDate(start).Start(), Field: "realtime_start"},
		Valid:       asof.Interval{From: asof.MustDate(start)}}
	if end != "" {
		c.Valid.To = asof.MustDate(end)
	}
	return connectors.Record{Chunk: c, By: next, Where: "fetch " + fetched + ": " + id}
}

// The two fetches of an ALFRED series: the advance estimate alone, then
// the same with its end and the two revisions that replaced it.
func gdpFetches(t testing.TB) (first, second []connectors.Record) {
	first = []connectors.Record{
		vintage(t, "gdp@2020-04-29", "GDP growth for 2020Q1: -4.8 percent.", "2020-04-29", "", "", "2020-05-15"),
	}
	second = []connectors.Record{
		vintage(t, "gdp@2020-04-29", "GDP growth for 2020Q1: -4.8 percent.", "2020-04-29", "2020-05-28", "gdp@2020-05-28", "2020-07-01"),
		vintage(t, "gdp@2020-05-28", "GDP growth for 2020Q1: -5.0 percent.", "2020-05-28", "2020-06-25", "gdp@2020-06-25", "2020-07-01"),
		vintage(t, "gdp@2020-06-25", "GDP growth for 2020Q1: -5.1 percent.", "2020-06-25", "", "", "2020-07-01"),
	}
	return first, second
}

// A later fetch that ends a stored vintage's validity is a fact, not
// "unchanged": as of a day after the end, the stale value is never cited,
// exactly as one ingest of the later fetch would have it; pinned to the
// generation before the fact, the pack is the one made then.
func TestLaterFetchEndsValidity(t *testing.T) {
	ctx := context.Background()
	first, second := gdpFetches(t)
	e := checked(t, memEngine(t, Options{}))
	_, err := e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	req := Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-06-01"), K: 3}
	before, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"gdp@2020-04-29"}, citedIDs(before))
	require.Empty(t, before.Citations[0].Valid.To.String(), "nothing said it ends yet")

	rep, err := e.Ingest(ctx, connectors.Records(second), IngestOptions{})
	require.NoError(t, err)
	// Two facts: -4.8 ended by -5.0 (learned now), and -5.0 arriving ended by -5.1.
	require.Equal(t, IngestReport{Read: 3, Added: 2, Documents: 1, Versions: 2, Unchanged: 0, Facts: 2, Generation: 2,
		NewFacts: []evidence.Fact{*superseded("gdp@2020-04-29", "2020-05-28", "gdp@2020-05-28"), *superseded("gdp@2020-05-28", "2020-06-25", "gdp@2020-06-25")}}, rep)
	f := e.st.Facts["gdp@2020-04-29"][0]
	require.Equal(t, evidence.Fact{Kind: evidence.FactSuperseded, ChunkID: "gdp@2020-04-29", By: "gdp@2020-05-28",
		End: asof.MustDate("2020-05-28"), Anchor: asof.MustDate("2020-05-28").Start()}, *f.Fact)
	require.EqualValues(t, 2, f.Gen)

	after, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"gdp@2020-05-28"}, citedIDs(after), "the stale vintage is not cited after its end")
	require.EqualValues(t, 2, after.Generation)

	// One ingest of the second fetch cites the same, in the same order.
	one := memEngine(t, Options{})
	_, err = one.Ingest(ctx, connectors.Records(second), IngestOptions{})
	require.NoError(t, err)
	for _, day := range []string{"2020-04-28", "2020-04-29", "2020-05-27", "2020-05-28", "2020-06-24", "2020-06-25", "2020-12-31"} {
		r := req
		r.AsOf = asof.MustDate(day)
		a, err := e.Query(ctx, r)
		require.NoError(t, err)
		b, err := one.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, citedIDs(b), citedIDs(a), "as of %s", day)
		for i := range a.Citations {
			require.Equal(t, b.Citations[i].Valid.From, a.Citations[i].Valid.From, "as of %s: the validity shown", day)
		}
	}
	// As of a day before the end, the end is not shown: the fact that set
	// it is anchored on 2020-05-28, after the as-of day (issue 31 item 10;
	// it showed 2020-05-28 before).
	r := req
	r.AsOf = asof.MustDate("2020-05-01")
	p, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.Empty(t, p.Citations[0].Valid.To.String())

	// Pinned to generation 1: the pack made then, byte for byte, and it
	// verifies; so does the latest one.
	r = req
	r.Generation = 1
	pinned, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.Equal(t, string(before.Bytes()), string(pinned.Bytes()))
	for _, p := range []*evidence.Pack{before, after} {
		v, err := e.Verify(ctx, p.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK(), "%v", v.Problems)
	}
	// The same fetch again changes nothing.
	rep, err = e.Ingest(ctx, connectors.Records(second), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Unchanged)
	require.EqualValues(t, 2, rep.Generation)
}

// A fact record retracts a chunk from its anchor on; the gate says why a
// reranker's pick of it is dropped, and the dense leg never offers it.
func TestFactRecordRetracts(t *testing.T) {
	ctx := context.Background()
	first, _ := gdpFetches(t)
	e := checked(t, memEngine(t, Options{}))
	_, err := e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	retract := connectors.Record{Where: "retractions.jsonl:1", Fact: &evidence.Fact{Kind: evidence.FactRetracted,
		ChunkID: "gdp@2020-04-29", End: asof.MustDate("2020-05-01"), Anchor: time.Date(2020, 5, 10, 14, 0, 0, 0, time.UTC)}}
	rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{retract}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Facts)
	require.Zero(t, rep.Added)
	for _, tc := range []struct {
		day  string
		want []string
		why  string
	}{
		{"2020-05-01", []string{"gdp@2020-04-29"}, "the end took effect, but nobody knew it on the day"},
		{"2020-05-09", []string{"gdp@2020-04-29"}, "still not knowable"},
		{"2020-05-10", nil, "retracted from the day it was published"},
	} {
		p, err := e.Query(ctx, Request{Question: "GDP growth 2020Q1", AsOf: asof.MustDate(tc.day)})
		require.NoError(t, err)
		require.Equal(t, tc.want, citedIDs(p), "%s: %s", tc.day, tc.why)
	}
	sc := e.st.Scope("", e.st.Gen)
	entry, ok, err := sc.Entry("gdp@2020-04-29", asof.MustDate("2020-06-01"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "retracted from 2020-05-01 (known 2020-05-10T14:00:00Z) (fact of generation 2)", entry.Excluded)
}

// Facts that cannot hold fail their whole batch, naming the record; nothing
// of the batch is applied.
func TestBadFactsFailTheBatch(t *testing.T) {
	ctx := context.Background()
	first, _ := gdpFetches(t)
	fresh := vintage(t, "other", "An unrelated note.", "2020-05-01", "", "", "2020-05-15")
	fact := func(mod func(f *evidence.Fact)) connectors.Record {
		f := &evidence.Fact{Kind: evidence.FactEnded, ChunkID: "gdp@2020-04-29", End: asof.MustDate("2020-06-01"), Anchor: asof.MustDate("2020-06-01").Start()}
		mod(f)
		return connectors.Record{Fact: f, Where: "facts.jsonl:7"}
	}
	reopened := first[0]
	reopened.Chunk.Valid.To = asof.Date{}
	for _, tc := range []struct {
		name, why string
		recs      []connectors.Record
		want      error
		where     string
	}{
		{"no such chunk", "a fact names a committed chunk", []connectors.Record{fresh, fact(func(f *evidence.Fact) { f.ChunkID = "ghost" })}, evidence.ErrBadFact, `facts.jsonl:7: chunk "ghost"`},
		{"end before start", "an end before the validity starts contradicts the chunk", []connectors.Record{fresh, fact(func(f *evidence.Fact) { f.End = asof.MustDate("2020-04-29") })}, evidence.ErrBadFact, "on or before the chunk's first valid day"},
		{"replacement of another tenant", "tenants are sealed", []connectors.Record{othersChunk(t), fact(func(f *evidence.Fact) { f.Kind, f.By = evidence.FactSuperseded, "globex-note" })}, evidence.ErrBadFact, `replacing chunk "globex-note" belongs to another tenant`},
		{"no anchor", "an end is knowable from some instant", []connectors.Record{fresh, fact(func(f *evidence.Fact) { f.Anchor = time.Time{} })}, evidence.ErrBadFact, "facts.jsonl:7"},
		{"validity extended", "facts only end validity", []connectors.Record{fresh, withEnd(t, first[0], "2020-06-01"), withEnd(t, first[0], "2020-07-01")}, evidence.ErrValidityExtended, `chunk "gdp@2020-04-29"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := checked(t, memEngine(t, Options{}))
			_, err := e.Ingest(ctx, connectors.Records(first), IngestOptions{})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(tc.recs), IngestOptions{})
			require.ErrorIs(t, err, tc.want, tc.why)
			require.ErrorContains(t, err, tc.where)
			require.EqualValues(t, 1, e.st.Gen, "nothing of the batch applied")
			require.Empty(t, e.st.FactLog)
		})
	}
}

func othersChunk(t testing.TB) connectors.Record {
	t.Helper()
	r := vintage(t, "globex-note", "Globex's own note.", "2020-05-01", "", "", "2020-05-15")
	r.Chunk.Tenant = "globex"
	return r
}

func withEnd(t testing.TB, r connectors.Record, end string) connectors.Record {
	t.Helper()
	r.Chunk.Valid.To = asof.MustDate(end)
	return r
}

// A commit of facts that fails before its manifest, or dies there, leaves
// the index as it was: the re-indexed lexical documents are put back, and
// Check (run at cleanup) agrees with the batch files.
func TestFactCommitRollsBack(t *testing.T) {
	ctx := context.Background()
	first, second := gdpFetches(t)
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	req := Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-06-01")}
	want, err := e.Query(ctx, req)
	require.NoError(t, err)

	e.store.Hooks.BeforeManifest = func() error { return fmt.Errorf("disk full") }
	_, err = e.Ingest(ctx, connectors.Records(second), IngestOptions{})
	require.ErrorContains(t, err, "disk full")
	e.store.Hooks.BeforeManifest = nil
	require.NoError(t, e.Check())
	got, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, string(want.Bytes()), string(got.Bytes()))

	crashInCommit(t, e, second...)
	above, err := e.lex.CountAbove(ctx, 1)
	require.NoError(t, err)
	require.EqualValues(t, 3, above, "two new chunks and the re-indexed one reached bleve")
	require.NoError(t, e.lex.Close())
	require.NoError(t, e.store.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.EqualValues(t, 1, e.st.Gen)
	got, err = e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, string(want.Bytes()), string(got.Bytes()), "the retired field was put back")

	_, err = e.Ingest(ctx, connectors.Records(second), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"gdp@2020-05-28"}, citedIDs(p), "the fact survives a reopen")
	v, err := e.Verify(ctx, want.Bytes())
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
}
