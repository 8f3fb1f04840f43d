package evpack

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/periodleg"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/period"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// periodRequest is one golden request of testdata/periods/requests.json.
type periodRequest struct {
	goldenRequest
	Period string `json:"period"`
}

func loadPeriodRequests(t testing.TB) []periodRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "periods", "requests.json"))
	require.NoError(t, err)
	var rs []periodRequest
	require.NoError(t, json.Unmarshal(raw, &rs))
	return rs
}

func (r periodRequest) request() Request {
	q := r.goldenRequest.request()
	q.Period = r.Period
	return q
}

// periodEngine holds testdata/periods/filings.jsonl: two companies' 10-K
// pages for fiscal 2020 to 2022 and a 10-Q declaring FY2021-Q2.
func periodEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e := memEngine(t, opts)
	_, err := e.Ingest(context.Background(), connectors.NewJSONL(filepath.Join("testdata", "periods", "filings.jsonl")), IngestOptions{})
	require.NoError(t, err)
	return e
}

// TestGoldenPacksPeriod pins the year leg's packs (questions' periods read,
// otherwise the default configuration: learned reranker, the default year
// list and boost), the same bytes on amd64 and arm64 (.ci/run).
func TestGoldenPacksPeriod(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true})
	for _, r := range loadPeriodRequests(t) {
		t.Run(r.Name, func(t *testing.T) {
			p, err := e.Query(context.Background(), r.request())
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden-period", r.Name+".json")
			got := p.Bytes()
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
				require.NoError(t, os.WriteFile(strings.TrimSuffix(path, ".json")+".txt", []byte(p.Text()), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestGoldenPacksPeriod -update to create it")
			require.Equal(t, string(want), string(got), "%s: %s", r.Name, r.Reason)
			wantText, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".txt")
			require.NoError(t, err)
			require.Equal(t, string(wantText), p.Text())
			v, err := e.Verify(context.Background(), got)
			require.NoError(t, err)
			require.True(t, v.OK(), "%v", v.Problems)
		})
	}
}

// TestGoldenPeriodContents states what the year leg's golden packs must
// say, so that an -update cannot bless a wrong answer.
func TestGoldenPeriodContents(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true})
	off, err := e.View(Options{}) // questions' periods unread: the default
	require.NoError(t, err)
	ctx := context.Background()
	packs := map[string]*evidence.Pack{}
	for _, r := range loadPeriodRequests(t) {
		p, err := e.Query(ctx, r.request())
		require.NoError(t, err, r.Name)
		packs[r.Name] = p
	}
	steps := func(p *evidence.Pack) string { return strings.Join(p.Trace.Steps, "\n") }

	p := packs["capex-fy2021"]
	require.Equal(t, "FY2021", p.Period)
	require.Equal(t, "question", p.PeriodFrom)
	require.Equal(t, "northwind-10k-fy2021#p1", p.Citations[0].ChunkID, "the asked year's capex page first")
	require.Contains(t, steps(p), "period: FY2021 (parsed from the question)")
	require.Contains(t, steps(p), "year list: kept ")
	require.Contains(t, steps(p), "year boost: +100% of a first place to ")
	require.Contains(t, p.Fingerprint.Get("period"), period.Version)

	p = packs["capex-fy2021-given-2020"]
	require.Equal(t, "FY2020", p.Period)
	require.Equal(t, "request", p.PeriodFrom)
	require.Equal(t, "northwind-10k-fy2020#p1", p.Citations[0].ChunkID, "the given period overrides the question's")

	// Turned off by the request, and not named at all: no year list, no
	// boost, no period setting; the latter has no period field and is the
	// pack the engine makes with periods ignored, byte for byte.
	for _, name := range []string{"capex-fy2021-none", "capex-no-period"} {
		p := packs[name]
		require.NotContains(t, steps(p), "year list", name)
		require.NotContains(t, steps(p), "year boost", name)
		require.Empty(t, p.Fingerprint.Get("period"), name)
	}
	require.Equal(t, "none", packs["capex-fy2021-none"].Period)
	require.Equal(t, "request", packs["capex-fy2021-none"].PeriodFrom)
	require.Empty(t, packs["capex-no-period"].Period)
	require.NotContains(t, string(packs["capex-no-period"].Bytes()), `"period_from"`)
	require.NotContains(t, string(packs["capex-no-period"].Bytes()), `"period":`)
	for _, r := range loadPeriodRequests(t) {
		if r.Name == "capex-no-period" {
			q, err := off.Query(ctx, r.request())
			require.NoError(t, err)
			require.Equal(t, string(q.Bytes()), string(packs[r.Name].Bytes()))
		}
	}

	// As of the last day of 2022 the FY2022 10-K is not filed: the year
	// leg reads inside the eligibility and cannot bring it in.
	p = packs["revenue-dec-2022-before-filing"]
	require.Equal(t, "2022-12-31", p.Period)
	require.NotEmpty(t, p.Citations)
	for _, c := range p.Citations {
		require.NotEqual(t, "2022", c.Meta["fiscal_year"], c.ChunkID)
	}
	require.Equal(t, "FY2021-Q2", packs["capex-q2-2021"].Period)
	require.Contains(t, citedIDs(packs["capex-q2-2021"]), "northwind-10q-2021q2#p1")
}

// Without a period the year leg's options change nothing: every golden
// pack of the standard corpus is the same bytes whatever they are set to.
func TestPeriodOptionsLeaveOtherPacksAlone(t *testing.T) {
	base := packsFor(t, func() *Engine { e := memEngine(t, Options{}); ingestCorpus(t, e); return e }())
	e := memEngine(t, Options{QuestionPeriods: true, PeriodList: 7, PeriodBoost: 100, PeriodWeight: 3})
	ingestCorpus(t, e)
	require.Equal(t, base, packsFor(t, e))
}

// Bad periods in a request are refused by name.
func TestBadPeriodRequests(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true})
	for _, bad := range []string{"fy2021", "2021-Q5", "FY21", "2021-02-30", "None"} {
		_, err := e.Query(context.Background(), Request{Question: "capex", AsOf: asof.MustDate("2025-01-01"), Period: bad})
		require.ErrorIs(t, err, ErrBadRequest, bad)
		require.ErrorIs(t, err, period.ErrBadPeriod, bad)
	}
	for _, o := range []Options{{PeriodList: -2}, {PeriodList: MaxPeriodList + 1}, {PeriodBoost: 101}, {PeriodBoost: -2}, {PeriodWeight: -1}} {
		_, err := OpenMemory(o)
		require.ErrorIs(t, err, ErrBadOptions, "%+v", o)
	}
}

// A pack whose header claims its question named another period than the
// question does is caught on replay: the question's period is parsed again,
// never taken from the pack.
func TestForgedQuestionPeriodFailsVerify(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true})
	ctx := context.Background()
	p, err := e.Query(ctx, Request{Question: "What were Northwind's capital expenditures in FY2021?", AsOf: asof.MustDate("2025-06-30"), Filters: map[string]string{"cik": "northwind"}})
	require.NoError(t, err)
	raw := strings.Replace(string(p.Bytes()), `"period":"FY2021"`, `"period":"FY2020"`, 1)
	require.NotEqual(t, string(p.Bytes()), raw)
	v, err := e.Verify(ctx, []byte(raw))
	require.NoError(t, err)
	require.False(t, v.OK())
}

// The year leg never admits an ineligible chunk: over random corpora of
// dated, versioned, tenanted and filtered chunks naming random years in
// their text or metadata, every chunk of the year list, for random requests
// (as-of day, tenant, filters, pinned generation, asked year), is eligible
// by evidence.Header's own predicate and committed by the pack's
// generation; and no pack's gate ever drops a chunk as ineligible.
func TestYearLegNeverAdmitsAnIneligibleChunk(t *testing.T) {
	seed := propertySeed(t)
	rng := rand.New(rand.NewPCG(seed, 33))
	ctx := context.Background()
	var listed, asked int
	for round := 0; round < 2; round++ {
		e := memEngine(t, Options{QuestionPeriods: true, Pool: 1 + rng.IntN(20), PeriodList: 1 + rng.IntN(60)})
		byID := map[string]evidence.Chunk{}
		gen := map[string]int64{}
		for g := int64(1); g <= 3; g++ {
			recs := randomCorpus(rng)
			for i := range recs {
				c := &recs[i].Chunk
				c.ID = fmt.Sprintf("g%d-%s", g, c.ID)
				c.Meta = map[string]string{"kind": []string{"rule", "guidance"}[rng.IntN(2)]}
				y := strconv.Itoa(2018 + rng.IntN(5))
				switch rng.IntN(4) {
				case 0:
					c.Text += " fiscal " + y
				case 1:
					c.Meta["fiscal_year"] = y
				case 2:
					c.Meta["period"] = "FY" + y + "-Q" + strconv.Itoa(1+rng.IntN(4))
				}
				byID[c.ID], gen[c.ID] = *c, g
			}
			_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
			require.NoError(t, err)
		}
		st, err := e.snapshot()
		require.NoError(t, err)
		for q := 0; q < 40; q++ {
			var ws []string
			for range 1 + rng.IntN(3) {
				ws = append(ws, propertyWords[rng.IntN(len(propertyWords))])
			}
			r := Request{Question: strings.Join(ws, " ") + " in " + strconv.Itoa(2018+rng.IntN(5)),
				AsOf:   day(asof.MustDate("2019-06-01").Days() + int64(rng.IntN(2600))),
				Tenant: []string{"", "acme", "globex"}[rng.IntN(3)], K: 1 + rng.IntN(10)}
			if rng.IntN(3) == 0 {
				r.Filters = map[string]string{"kind": "rule"}
			}
			if rng.IntN(3) == 0 {
				r.Generation = 1 + rng.Int64N(3)
			}
			h, err := r.canonical(e.opts.K)
			require.NoError(t, err)
			periodleg.Asked(&h, e.opts.QuestionPeriods)
			require.Equal(t, "question", h.PeriodFrom, "seed %d: %q", seed, r.Question)
			sc, err := st.ScopeOf(&h, state.Reads{Gen: r.Generation})
			require.NoError(t, err)
			text, _ := sc.RankingText(h.Question, h.Filters)
			terms, _ := e.lex.Terms(text)
			guard := func(read func(retrieve.Eligibility, retrieve.Bounds) error) error {
				return e.whileCommitted(sc.State, sc.Eligibility(h), read)
			}
			l, _, err := periodleg.List(ctx, e.lex, guard, text, periodleg.Of(h), sc.BM25(terms), e.periodSettings())
			require.NoError(t, err)
			asked++
			for _, id := range l.IDs {
				c := byID[id]
				require.Empty(t, h.Excludes(&c), "seed %d: %s in the year list of %+v", seed, id, r)
				require.LessOrEqual(t, gen[id], h.Generation, "seed %d: %s committed after generation %d", seed, id, h.Generation)
				listed++
			}
			p, err := e.Query(ctx, r)
			require.NoError(t, err)
			require.Empty(t, p.Trace.Dropped, "seed %d: the gate had to drop %v", seed, p.Trace.Dropped)
		}
	}
	t.Logf("%d year lists, %d chunks listed", asked, listed)
	require.Greater(t, listed, 60, "seed %d: the draw exercised too little", seed)
}

// The pipeline reads a period only where one is named: a question without
// one gives the same pack whatever the year leg's options, and one with a
// period puts the asked year's pages first in the fused order.
func TestPeriodOptionsOnlyMatterWithAPeriod(t *testing.T) {
	e := periodEngine(t, Options{QuestionPeriods: true, Reranker: rerank.None{}})
	ctx := context.Background()
	r := Request{Question: "What were Northwind's capital expenditures?", AsOf: asof.MustDate("2025-06-30"), Filters: map[string]string{"cik": "northwind"}}
	want, err := e.Query(ctx, r)
	require.NoError(t, err)
	for _, o := range []Options{{QuestionPeriods: true, PeriodList: -1, PeriodBoost: -1}, {QuestionPeriods: true, PeriodList: 5, PeriodBoost: 100}, {}} {
		o.Reranker = rerank.None{}
		v, err := e.View(o)
		require.NoError(t, err)
		got, err := v.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, string(want.Bytes()), string(got.Bytes()), "%+v", o)
	}
	// With a period and no reranker the fused order shows the leg: the
	// asked year's pages lead.
	r.Question = "What were Northwind's capital expenditures in FY2022?"
	p, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.True(t, slices.Contains([]string{"northwind-10k-fy2022#p1", "northwind-10k-fy2022#p0"}, p.Citations[0].ChunkID), "%v", citedIDs(p))
}

// A request's explicit period is read even when the options leave
// questions' periods unread (the default), and replays.
func TestExplicitPeriodWithoutQuestionPeriods(t *testing.T) {
	e := periodEngine(t, Options{})
	ctx := context.Background()
	r := Request{Question: "What were Northwind's capital expenditures in FY2021?", AsOf: asof.MustDate("2025-06-30"), Filters: map[string]string{"cik": "northwind"}, K: 3}
	p, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.Empty(t, p.Period, "the question's period is unread by default")
	r.Period = "FY2020"
	p, err = e.Query(ctx, r)
	require.NoError(t, err)
	require.Equal(t, "FY2020", p.Period)
	require.Equal(t, "request", p.PeriodFrom)
	require.Equal(t, "northwind-10k-fy2020#p1", p.Citations[0].ChunkID)
	v, err := e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
}
