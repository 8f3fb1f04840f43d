package evpack

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/rerank"
)

var diffRetrieved = time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)

// committedAt returns generation g's commit time in e (the clock is the
// wall's, so tests read it back).
func committedAt(t *testing.T, e *Engine, g int64) time.Time {
	t.Helper()
	h, err := e.History()
	require.NoError(t, err)
	require.Greater(t, len(h), int(g-1))
	return h[g-1].CommittedAt
}

// genAt renders generation g of e as a DiffCause's Why names it.
func genAt(t *testing.T, e *Engine, g int64) string {
	t.Helper()
	return "generation " + strconv.FormatInt(g, 10) + " (committed " + asof.FormatInstant(committedAt(t, e, g)) + ")"
}

// superseded is the fact a later fetch makes of a chunk's end: anchored at
// the end day (the source could not say it earlier).
func superseded(id, end, by string) *evidence.Fact {
	return &evidence.Fact{Kind: evidence.FactSuperseded, ChunkID: id, End: asof.MustDate(end), Anchor: asof.MustDate(end).Start(), By: by}
}

// TestDiffALFRED: a pack made from the advance estimate of 2020Q1 GDP
// (-4.8), diffed after the fetch that holds the two revisions.
func TestDiffALFRED(t *testing.T) {
	ctx := context.Background()
	series := func(fetch string) connectors.Connector {
		return fred.New(diffRetrieved, filepath.Join("testdata", "fred", "history", fetch, "A191RL1Q225SBEA"))
	}
	const (
		q4   = "fred/A191RL1Q225SBEA/2019-10-01@2020-01-30"
		adv  = "fred/A191RL1Q225SBEA/2020-01-01@2020-04-29" // -4.8
		sec  = "fred/A191RL1Q225SBEA/2020-01-01@2020-05-28" // -5.0
		thrd = "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25" // -5.1
	)
	e := memEngine(t, Options{})
	_, err := e.Ingest(ctx, series("2020-05-15"), IngestOptions{})
	require.NoError(t, err)
	p, err := e.Query(ctx, Request{Question: "real GDP percent change 2020Q1", AsOf: asof.MustDate("2020-07-15")})
	require.NoError(t, err)
	require.Equal(t, []string{q4, adv}, citedIDs(p))
	require.Contains(t, p.Citations[1].Text, "-4.8")

	_, err = e.Ingest(ctx, series("2020-07-01"), IngestOptions{})
	require.NoError(t, err)
	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.True(t, rep.Verify.OK(), "%v", rep.Verify.Problems)
	require.True(t, rep.Compared)
	require.EqualValues(t, 1, rep.Generation)
	require.EqualValues(t, 2, rep.LatestGeneration)
	const name = "FRED series A191RL1Q225SBEA, observation "
	require.Equal(t, []audit.CitationDiff{
		{Index: 1, ChunkID: q4, Status: audit.DiffUnchanged, Now: 1, Source: name + "2019-10-01, vintage 2020-01-30"},
		// The -5.0 vintage came already ended (2020-06-25) and naming -5.1:
		// ingest records that supersession as a fact of its batch too, so
		// the chain runs -4.8 -> -5.0 -> -5.1, in force on 2020-07-15 and
		// cited now as [2].
		{Index: 2, ChunkID: adv, Status: audit.DiffSuperseded, Fact: superseded(adv, "2020-05-28", sec), FactGeneration: 2,
			Chain: []string{sec, "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25"}, Replacement: "fred/A191RL1Q225SBEA/2020-01-01@2020-06-25", ReplacementNow: 2,
			Source: name + "2020-01-01, vintage 2020-04-29",
			Cause: &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2},
				Why: genAt(t, e, 2) + " recorded that it is superseded by " + sec + " (" + name + "2020-01-01, vintage 2020-05-28) from 2020-05-28"}},
	}, rep.Citations)
	// -5.1 is a backfill: published 2020-06-25, on or before the pack's
	// as-of day 2020-07-15, but committed in generation 2, after the pack's
	// generation 1 (the 2020-05-15 fetch could not hold it).
	require.Equal(t, []audit.NewCitation{{Index: 2, ChunkID: thrd, Committed: 2, Backfill: true, Source: name + "2020-01-01, vintage 2020-06-25",
		CommittedAt: committedAt(t, e, 2)}}, rep.New)
	require.False(t, rep.Unchanged())
	require.Equal(t, "[2] "+adv+" ("+name+"2020-01-01, vintage 2020-04-29): superseded by "+sec+" from 2020-05-28 (fact of generation 2); now replaced by "+thrd+" [2]",
		strings.Split(rep.String(), "\n")[3])
	require.Equal(t, "    why: "+rep.Citations[1].Cause.Why, strings.Split(rep.String(), "\n")[4])
	require.Equal(t, "changed: 1 of 2 citations (1 by facts); 1 new (1 backfill)\n", rep.String()[strings.LastIndex(rep.String()[:len(rep.String())-1], "\n")+1:])

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(js), `{"index":2,"chunk_id":"`+adv+`","status":"superseded","fact":{"kind":"superseded","end":"2020-05-28","anchor":"2020-05-28T00:00:00Z","retires":"2020-05-28","by":"`+sec+`","generation":2},"chain":["`+sec+`","`+thrd+`"],"replacement":"`+thrd+`","replacement_now":2,"source":"`+name+`2020-01-01, vintage 2020-04-29","cause":{"kind":"fact","generations":[2],"why":"`+rep.Citations[1].Cause.Why+`"}}`)
	require.Contains(t, string(js), `"new":[{"index":2,"chunk_id":"`+thrd+`","committed":2,"backfill":true,"source":"`+name+`2020-01-01, vintage 2020-06-25","committed_at":"`+asof.FormatInstant(committedAt(t, e, 2))+`"}]`)
	require.Contains(t, string(js), `"scope_commits":[2]`)
}

// TestDiffEDGAR: a pack that cites Northwind's 10-K items, diffed after the
// 10-K/A that restates items cover, 7 and 8.
func TestDiffEDGAR(t *testing.T) {
	ctx := context.Background()
	const (
		k  = "edgar/0001234567/0001234567-25-000010/"
		ka = "edgar/0001234567/0001234567-25-000021/"
	)
	// The arithmetic reranker cites three items the amendment replaces (the
	// learned one ranks item 1A, which it does not, third).
	e := memEngine(t, Options{Reranker: rerank.DefaultArithmetic()})
	_, err := e.Ingest(ctx, edgar.New(filepath.Join("testdata", "edgar-history", "before"), diffRetrieved), IngestOptions{})
	require.NoError(t, err)
	req := Request{Question: "What drove Northwind Robotics revenue growth in fiscal 2024?", AsOf: asof.MustDate("2025-05-01"),
		Filters: map[string]string{"cik": "0001234567"}, K: 3}
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{k + "item-7/1", k + "item-cover/1", k + "item-8/1"}, citedIDs(p))

	_, err = e.Ingest(ctx, edgar.New(filepath.Join("testdata", "edgar"), diffRetrieved), IngestOptions{})
	require.NoError(t, err)
	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.True(t, rep.Verify.OK(), "%v", rep.Verify.Problems)
	require.EqualValues(t, 1, rep.Generation)
	require.EqualValues(t, 2, rep.LatestGeneration)
	var want []audit.CitationDiff
	for i, item := range []string{"item-7/1", "item-cover/1", "item-8/1"} {
		name := strings.TrimSuffix(strings.Replace(item, "-", " ", 1), "/1")
		want = append(want, audit.CitationDiff{Index: i + 1, ChunkID: k + item, Status: audit.DiffSuperseded,
			Fact: superseded(k+item, "2025-04-20", ka+item), FactGeneration: 2,
			Chain: []string{ka + item}, Replacement: ka + item, ReplacementNow: i + 1,
			Source: "Northwind Robotics Inc. 10-K " + name + ", filed 2025-02-14",
			Cause: &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2}, Why: genAt(t, e, 2) + " recorded that it is superseded by " + ka + item +
				" (Northwind Robotics Inc. 10-K/A " + name + ", filed 2025-04-20) from 2025-04-20"}})
	}
	require.Equal(t, want, rep.Citations)
	at2 := committedAt(t, e, 2)
	require.Equal(t, []audit.NewCitation{
		{Index: 1, ChunkID: ka + "item-7/1", Committed: 2, Backfill: true, Source: "Northwind Robotics Inc. 10-K/A item 7, filed 2025-04-20", CommittedAt: at2},
		{Index: 2, ChunkID: ka + "item-cover/1", Committed: 2, Backfill: true, Source: "Northwind Robotics Inc. 10-K/A item cover, filed 2025-04-20", CommittedAt: at2},
		{Index: 3, ChunkID: ka + "item-8/1", Committed: 2, Backfill: true, Source: "Northwind Robotics Inc. 10-K/A item 8, filed 2025-04-20", CommittedAt: at2},
	}, rep.New)

	// The latest pack diffs as unchanged.
	latest, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, rep.LatestHash, evidence.Sum(latest.Bytes()))
	rep, err = e.Diff(ctx, latest.Bytes())
	require.NoError(t, err)
	require.True(t, rep.Unchanged())
}

// TestDiffUnchanged: with no later commit every citation is unchanged and
// nothing is new; so after a commit to another tenant.
func TestDiffUnchanged(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	p, err := e.Query(ctx, Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-01-15")})
	require.NoError(t, err)
	require.NotEmpty(t, p.Citations)
	check := func(why string) {
		t.Helper()
		rep, err := e.Diff(ctx, p.Bytes())
		require.NoError(t, err)
		require.True(t, rep.Unchanged(), why)
		require.Equal(t, rep.Generation, rep.LatestGeneration, why)
		require.Equal(t, rep.Verify.Hash, rep.LatestHash, why)
		require.Empty(t, rep.New, why)
		require.Len(t, rep.Citations, len(p.Citations), why)
		for i, c := range rep.Citations {
			require.Equal(t, audit.CitationDiff{Index: i + 1, ChunkID: p.Citations[i].ChunkID, Status: audit.DiffUnchanged, Now: i + 1, Source: c.Source}, c, why)
			require.NotEmpty(t, c.Source, why)
		}
		require.True(t, strings.HasSuffix(rep.String(), "unchanged: all "+strconv.Itoa(len(p.Citations))+" citations, nothing new\n"), why)
	}
	check("no later commit")
	other := vintage(t, "acme-note", "Records of client transactions are retained for ten years.", "2020-01-01", "", "", "2020-01-02")
	other.Chunk.Tenant = "acme"
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{other}), IngestOptions{})
	require.NoError(t, err)
	check("a commit to another tenant")
}

// TestDiffRanking: the statuses a later commit gives through the ranking
// alone (moved, outranked, a new citation the index held already) and
// through facts (ended, retracted).
func TestDiffRanking(t *testing.T) {
	ctx := context.Background()
	const q = "GDP growth 2020Q1 percent"
	a := vintage(t, "a", "GDP growth for 2020Q1: -4.8 percent.", "2020-04-29", "", "", "2020-05-15")
	b := vintage(t, "b", "Retail sales for 2020Q1 fell 6 percent.", "2020-04-15", "", "", "2020-05-15")
	c := vintage(t, "c", "GDP growth 2020Q1 percent: GDP growth for 2020Q1, in percent, was -4.8.", "2020-05-01", "", "", "2020-06-01")
	fact := func(kind evidence.FactKind, id, end, known string) connectors.Record {
		return connectors.Record{Where: "facts:1", Fact: &evidence.Fact{Kind: kind, ChunkID: id, End: asof.MustDate(end), Anchor: asof.MustDate(known).Start()}}
	}
	for _, tc := range []struct {
		name  string
		k     int
		later []connectors.Record
		cited []string // by the pack, made before the later commit
		want  []audit.CitationDiff
		new   []audit.NewCitation
	}{
		{"a better chunk arrives", 2, []connectors.Record{c}, []string{"a", "b"},
			[]audit.CitationDiff{{Index: 1, ChunkID: "a", Status: audit.DiffMoved, Now: 2, Source: "series/GDP, version 2020-04-29", Cause: &audit.DiffCause{Kind: audit.CauseNewEvidence,
				Chunks: []string{"c"}, Generations: []int64{2}, Why: "outranked by 1 chunk committed since the pack: [1] c (series/GDP, version 2020-05-01; {g2})"}},
				{Index: 2, ChunkID: "b", Status: audit.DiffOutranked, Source: "series/GDP, version 2020-04-15", Cause: &audit.DiffCause{Kind: audit.CauseNewEvidence,
					Chunks: []string{"c"}, Generations: []int64{2}, Why: "outranked by 1 chunk committed since the pack: [1] c (series/GDP, version 2020-05-01; {g2})"}}},
			// c was published on 2020-05-01, before the as-of day, and
			// committed after the pack: a backfill.
			[]audit.NewCitation{{Index: 1, ChunkID: "c", Committed: 2, Backfill: true, Source: "series/GDP, version 2020-05-01"}}},
		{"a retraction lets a held chunk in", 1, []connectors.Record{fact(evidence.FactRetracted, "a", "2020-05-01", "2020-05-10")}, []string{"a"},
			[]audit.CitationDiff{{Index: 1, ChunkID: "a", Status: audit.DiffRetracted,
				Fact:           &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: "a", End: asof.MustDate("2020-05-01"), Anchor: asof.MustDate("2020-05-10").Start()},
				FactGeneration: 2, Source: "series/GDP, version 2020-04-29", Cause: &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2},
					Why: "{g2} recorded that it is retracted from 2020-05-01, published 2020-05-10T00:00:00Z"}}},
			// b was committed with the pack's generation: the ranking, not
			// the index's holdings, changed.
			[]audit.NewCitation{{Index: 1, ChunkID: "b", Committed: 1, Source: "series/GDP, version 2020-04-15"}}},
		{"an end published later", 1, []connectors.Record{fact(evidence.FactEnded, "a", "2020-06-01", "2020-06-10")}, []string{"a"},
			[]audit.CitationDiff{{Index: 1, ChunkID: "a", Status: audit.DiffEnded,
				Fact:           &evidence.Fact{Kind: evidence.FactEnded, ChunkID: "a", End: asof.MustDate("2020-06-01"), Anchor: asof.MustDate("2020-06-10").Start()},
				FactGeneration: 2, Source: "series/GDP, version 2020-04-29", Cause: &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2},
					Why: "{g2} recorded that it is no longer in force from 2020-06-01, published 2020-06-10T00:00:00Z"}}},
			[]audit.NewCitation{{Index: 1, ChunkID: "b", Committed: 1, Source: "series/GDP, version 2020-04-15"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{a, b}), IngestOptions{})
			require.NoError(t, err)
			p, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate("2020-07-15"), K: tc.k})
			require.NoError(t, err)
			require.Equal(t, tc.cited, citedIDs(p))
			_, err = e.Ingest(ctx, connectors.Records(tc.later), IngestOptions{})
			require.NoError(t, err)
			rep, err := e.Diff(ctx, p.Bytes())
			require.NoError(t, err)
			require.True(t, rep.Verify.OK(), "%v", rep.Verify.Problems)
			for _, c := range tc.want {
				c.Cause.Why = strings.ReplaceAll(c.Cause.Why, "{g2}", genAt(t, e, 2))
			}
			for i := range tc.new {
				tc.new[i].CommittedAt = committedAt(t, e, tc.new[i].Committed)
			}
			require.Equal(t, tc.want, rep.Citations)
			require.Equal(t, tc.new, rep.New)
			require.False(t, rep.Unchanged())
		})
	}
}

// TestDiffFollowsTheChain: the current replacement of a superseded
// citation is the first chunk along the chain of supersession facts that
// is eligible as of the pack's day; a chain that loops ends.
func TestDiffFollowsTheChain(t *testing.T) {
	ctx := context.Background()
	const q = "GDP growth 2020Q1 percent"
	// Three fetches, each ending the vintage before: every end is a fact.
	fetch1 := []connectors.Record{vintage(t, "v1", "GDP growth for 2020Q1: -4.8 percent.", "2020-04-29", "", "", "2020-05-15")}
	fetch2 := []connectors.Record{
		vintage(t, "v1", "GDP growth for 2020Q1: -4.8 percent.", "2020-04-29", "2020-05-28", "v2", "2020-06-01"),
		vintage(t, "v2", "GDP growth for 2020Q1: -5.0 percent.", "2020-05-28", "", "", "2020-06-01"),
	}
	fetch3 := []connectors.Record{
		vintage(t, "v2", "GDP growth for 2020Q1: -5.0 percent.", "2020-05-28", "2020-06-25", "v3", "2020-07-01"),
		vintage(t, "v3", "GDP growth for 2020Q1: -5.1 percent.", "2020-06-25", "", "", "2020-07-01"),
	}
	// v2 and v1 supersede each other (a source's error): the walk ends.
	loop := connectors.Record{Where: "facts:1", Fact: superseded("v2", "2020-06-25", "v1")}
	for _, tc := range []struct {
		name  string
		later [][]connectors.Record
		asOf  string
		want  audit.CitationDiff
	}{
		{"two links", [][]connectors.Record{fetch2, fetch3}, "2020-07-15", audit.CitationDiff{Index: 1, ChunkID: "v1", Status: audit.DiffSuperseded,
			Fact: superseded("v1", "2020-05-28", "v2"), FactGeneration: 2, Chain: []string{"v2", "v3"}, Replacement: "v3", ReplacementNow: 1}},
		{"the first link still in force on the day", [][]connectors.Record{fetch2, fetch3}, "2020-06-10", audit.CitationDiff{Index: 1, ChunkID: "v1", Status: audit.DiffSuperseded,
			Fact: superseded("v1", "2020-05-28", "v2"), FactGeneration: 2, Chain: []string{"v2"}, Replacement: "v2", ReplacementNow: 1}},
		{"a loop", [][]connectors.Record{fetch2, {loop}}, "2020-07-15", audit.CitationDiff{Index: 1, ChunkID: "v1", Status: audit.DiffSuperseded,
			Fact: superseded("v1", "2020-05-28", "v2"), FactGeneration: 2, Chain: []string{"v2", "v1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			_, err := e.Ingest(ctx, connectors.Records(fetch1), IngestOptions{})
			require.NoError(t, err)
			p, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate(tc.asOf)})
			require.NoError(t, err)
			require.Equal(t, []string{"v1"}, citedIDs(p))
			for _, recs := range tc.later {
				_, err = e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
				require.NoError(t, err)
			}
			rep, err := e.Diff(ctx, p.Bytes())
			require.NoError(t, err)
			tc.want.Source = "series/GDP, version 2020-04-29"
			tc.want.Cause = &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2},
				Why: genAt(t, e, 2) + " recorded that it is superseded by v2 (series/GDP, version 2020-05-28) from 2020-05-28"}
			require.Equal(t, []audit.CitationDiff{tc.want}, rep.Citations)
		})
	}
}

// TestDiffTextChanged: on an index whose batch a forger re-sealed, the
// citation whose stored text no longer hashes is reported, not a panic,
// and the pack does not verify.
func TestDiffTextChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	p, err := e.Query(ctx, Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-01-15")})
	require.NoError(t, err)
	require.Equal(t, "records-act/art-2@2025", p.Citations[0].ChunkID)
	require.NoError(t, e.Close())
	require.True(t, storagetest.ForgeBatches(t, dir, func(body []byte) []byte {
		return bytes.Replace(body, []byte("for ten years from the date"), []byte("for two years from the date"), 1)
	}))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.False(t, rep.Verify.OK())
	require.False(t, rep.Unchanged())
	const detail = "stored chunk no longer hashes to its content hash (edited after ingest)"
	src := rep.Citations[0].Source
	require.Equal(t, audit.CitationDiff{Index: 1, ChunkID: "records-act/art-2@2025", Status: audit.DiffTextChanged, Detail: detail, Source: src,
		Cause: &audit.DiffCause{Kind: audit.CauseText, Why: "the index does not hold the text the pack cites (" + detail + "): a corrupted index, or a pack of another index"}},
		rep.Citations[0])
	require.Contains(t, rep.String(), "[1] records-act/art-2@2025 ("+src+"): text changed: "+detail+"\n")
}

// TestDiffBadPacks: a pack that does not parse is an error, and one of a
// generation the index has not committed a problem, exactly as Verify has
// them.
func TestDiffBadPacks(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	p, err := e.Query(ctx, Request{Question: "retain records", AsOf: asof.MustDate("2026-01-15")})
	require.NoError(t, err)
	future := *p
	future.Generation = 9
	for _, tc := range []struct {
		name    string
		raw     []byte
		wantErr error
	}{
		{"not a pack", []byte(`{"format":"nope"}`), evidence.ErrBadPack},
		{"truncated", p.Bytes()[:40], evidence.ErrBadPack},
		{"a generation not committed here", future.Bytes(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, verr := e.Verify(ctx, tc.raw)
			rep, err := e.Diff(ctx, tc.raw)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.Equal(t, verr.Error(), err.Error(), "the error Verify gives")
				return
			}
			require.NoError(t, err)
			require.Equal(t, v, rep.Verify)
			require.Equal(t, []string{"generation 9: the index has committed only 2 (a pack of another index?)"}, rep.Verify.Problems)
			require.False(t, rep.Compared)
			require.Empty(t, rep.Citations)
			require.False(t, rep.Unchanged())
		})
	}
}

// hookReranker ranks like the arithmetic reranker (same name, so packs
// verify) and runs hook on its first call.
type hookReranker struct {
	*rerank.Arithmetic
	hook func()
}

func (h *hookReranker) Rerank(ctx context.Context, q string, cands []rerank.Candidate, st rerank.Stats) ([]evidence.Scored, error) {
	if f := h.hook; f != nil {
		h.hook = nil
		f()
	}
	return h.Arithmetic.Rerank(ctx, q, cands, st)
}

// TestDiffStartsAgainWhenACommitLands: a commit that lands while Diff
// replays the pack sends it back to the start; the report reads the new
// state whole.
func TestDiffStartsAgainWhenACommitLands(t *testing.T) {
	ctx := context.Background()
	arith, err := rerank.NewArithmetic(rerank.DefaultWeights)
	require.NoError(t, err)
	rr := &hookReranker{Arithmetic: arith}
	e := memEngine(t, Options{Reranker: rr})
	first, second := gdpFetches(t)
	_, err = e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	p, err := e.Query(ctx, Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-07-15")})
	require.NoError(t, err)
	require.Equal(t, []string{"gdp@2020-04-29"}, citedIDs(p))
	fired := 0
	rr.hook = func() { // during the replay at generation 1
		fired++
		_, err := e.Ingest(ctx, connectors.Records(second), IngestOptions{})
		require.NoError(t, err)
	}
	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	require.True(t, rep.Verify.OK(), "%v", rep.Verify.Problems)
	require.EqualValues(t, 2, rep.LatestGeneration)
	require.Equal(t, []audit.CitationDiff{{Index: 1, ChunkID: "gdp@2020-04-29", Status: audit.DiffSuperseded,
		Fact: superseded("gdp@2020-04-29", "2020-05-28", "gdp@2020-05-28"), FactGeneration: 2,
		Chain: []string{"gdp@2020-05-28", "gdp@2020-06-25"}, Replacement: "gdp@2020-06-25", ReplacementNow: 1,
		Source: "series/GDP, version 2020-04-29", Cause: &audit.DiffCause{Kind: audit.CauseFact, Generations: []int64{2},
			Why: genAt(t, e, 2) + " recorded that it is superseded by gdp@2020-05-28 (series/GDP, version 2020-05-28) from 2020-05-28"}}}, rep.Citations)
	require.Equal(t, []audit.NewCitation{{Index: 1, ChunkID: "gdp@2020-06-25", Committed: 2, Backfill: true, Source: "series/GDP, version 2020-06-25",
		CommittedAt: committedAt(t, e, 2)}}, rep.New)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.Diff(cancelled, p.Bytes())
	require.ErrorIs(t, err, context.Canceled)
}
