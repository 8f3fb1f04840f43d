package evpack

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// The history property (docs/design.md, §7 "Change as facts"): ingesting a
// source's history fetch by fetch gives exactly what one ingest of the last
// fetch gives.
//
// A history is one source observed on successive days. Each fetch is the
// full state of the source at its fetch instant: every record published so
// far, with the ends the source knows by then (an ALFRED vintage's
// realtime_end, a 10-K/A restating items, a statute amendment, a JSONL
// record sent again with a valid_to, a JSONL fact line). Sources are
// realistic: an end only ever appears or moves earlier, and nothing a fetch
// held is missing from a later one. The generator keeps its own account of
// every chunk it expects the connector to make (its ground truth): when it
// was published, its anchor day, its first valid day, and each end with the
// instant the source said it.
//
// Each test generates histories from a seeded PCG and places them in
// groups (see historyGroups); each history of a group is its own tenant
// (chunk IDs are unique per history), so that engines are shared between
// tenants, which are sealed. Per group:
//
//   - engine A ingests every fetch of every history, each fetch one Ingest,
//     the histories interleaved at random (each in its own order);
//   - engine B ingests the last fetch of each history, once;
//   - engine C ingests one earlier fetch k of each history, chosen at random.
//
// A case is one (history, as-of day) check, for every day of the history's
// range (the first anchor or valid-from day to the last day any date of it
// names, one more day either side), at the latest generation:
//
//  1. the eligible set of the history's tenant is the same three ways in A
//     and in B: the lexical index's query (retrieve.Lexical.Eligible: a
//     match-all query under the clauses Search uses), the dense leg's
//     in-memory predicate (scope.admitter) and the citation gate's
//     (scope.entry with evidence.Header.Excludes); and A's equals B's;
//  2. it is exactly the generator's ground truth as of the last fetch, so in
//     particular never the future (every eligible chunk's anchor day is on or
//     before the day) and never the superseded (no eligible chunk ended, or
//     was retracted and knowably so, on or before the day).
//
// A pinned case checks the same of A read at the generation that committed
// fetch k (Request.Generation: the generation clause, the re-admitted IDs)
// against C and the ground truth as of fetch k, on every historyPinStride-th
// day. A pack pair is the packs of A and B (or of pinned A and C) for one
// generated question on one day, equal retrieval times aside: everything
// but RetrievedAt, ContentHash, the pack's generation and the fingerprint's
// corpus digest, which legitimately differ; the citations (IDs in order,
// text, document, version, source URL, anchor, the validity shown, score,
// metadata) and the trace must be the same.
//
// Out of scope by construction: chunks dated by their retrieval time (a
// JSONL record without anchor, re-stamped at every fetch). A, which saw
// such a record first, rightly dates it earlier than B can; the generated
// feeds that omit the anchor keep the record's first-seen time.
//
// The seed is printed; -evpack.seed (or EVPACK_PROPERTY_SEED) replays one,
// and every failure says how. Without either the seed is fixed, so CI is
// reproducible. Without EVPACK_LONG_TESTS=1 (which CI sets), or with
// testing.Short, a tenth of the cases is checked, and never fewer groups
// than historyGroups names (so a group of two tenants is always one).

var historySeedFlag = flag.Uint64("evpack.seed", 0, "seed of the history property tests (0: EVPACK_PROPERTY_SEED, else the fixed default)")

// historyDefaultSeed is the seed CI runs.
const historyDefaultSeed = 20260427

// historyGroups cycles through the number of histories (tenants) that
// share an engine pair. Each fetch is a segment of A's lexical index, and
// each numeric clause of an eligibility query enumerates its range's terms
// in every segment (about 70 µs a clause with one segment, more with many),
// so a history alone is the cheapest; one group in seven holds two, so that
// the tenant clause and sealed scopes are exercised too.
var historyGroups = []int{1, 1, 1, 1, 1, 1, 2}

// historyCases is the number of cases each test checks at least with
// EVPACK_LONG_TESTS=1 (a tenth without, or under testing.Short); whole
// groups of histories are generated until it is reached.
const historyCases = 10_000

// Strides of the costlier checks over a history's days: pinned cases on
// every historyPinStride-th day (per earlier fetch), pack pairs on every
// historyPackStride-th day (per question).
const (
	historyPinStride  = 6
	historyPackStride = 20
)

// historySeed returns the seed of this run and logs it.
func historySeed(t *testing.T) uint64 {
	seed := uint64(historyDefaultSeed)
	if *historySeedFlag != 0 {
		seed = *historySeedFlag
	} else if s := os.Getenv("EVPACK_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "EVPACK_PROPERTY_SEED")
		seed = v
	}
	t.Logf("seed %d", seed)
	return seed
}

// historyWords is the vocabulary of generated texts: no stop words, no word
// a connector reads as structure (item, article, section).
var historyWords = strings.Fields("revenue margin tariff harbor ledger pension quota rebate subsidy levy bond yield " +
	"credit audit lease freight cargo vessel permit license quarry timber grain cattle dairy copper nickel cobalt " +
	"lithium solar turbine reactor pipeline refinery charter notice appeal tribunal hearing verdict ruling penalty " +
	"waiver exemption rate index")

// historyBase is day 0 of every history.
var historyBase = asof.MustDate("2021-03-01").Days()

// hday returns day n of a history.
func hday(n int) asof.Date { return asof.DateFromDays(historyBase + int64(n)) }

// hinstant returns a random instant of day n.
func hinstant(rng *rand.Rand, n int) time.Time {
	return hday(n).Start().Add(time.Duration(rng.IntN(86400)) * time.Second)
}

// words returns n random words of the vocabulary.
func words(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = historyWords[rng.IntN(len(historyWords))]
	}
	return strings.Join(ws, " ")
}

// fetchTimes returns n strictly increasing fetch instants on days lo..hi.
func fetchTimes(rng *rand.Rand, n, lo, hi int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = hinstant(rng, lo+rng.IntN(hi-lo+1))
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < n; i++ {
		if !out[i].After(out[i-1]) {
			out[i] = out[i-1].Add(time.Second)
		}
	}
	return out
}

// srcHistory is one generated source history: what the connector read at
// each fetch, and the generator's ground truth.
type srcHistory struct {
	name    string // "jsonl history 12", for messages
	tenant  string
	fetches []time.Time
	raw     [][]string            // the source's files at each fetch, for failure reports
	recs    [][]connectors.Record // what the connector read at each fetch
	truth   map[string]*truthChunk
	ids     []string // the truth's IDs, sorted (eligibleAt)
	// filters are filters a question may carry, with words to add to its
	// text (a company's name under its cik filter, say).
	filters []historyFilter
}

// historyFilter is a filter for generated questions and words that go with
// it.
type historyFilter struct {
	filters map[string]string
	words   string
}

// truthChunk is the generator's account of one chunk.
type truthChunk struct {
	published time.Time // in every fetch at or after this instant
	anchor    asof.Date
	from      asof.Date // zero: no first valid day
	ends      []truthEnd
}

// truthEnd is one end of a chunk the source states from instant known on.
type truthEnd struct {
	known  time.Time
	retire asof.Date // the first day the chunk is not eligible
	why    string
}

// end adds an end to tc.
func (tc *truthChunk) end(known time.Time, retire asof.Date, why string) {
	tc.ends = append(tc.ends, truthEnd{known: known, retire: retire, why: why})
}

// exclusion says why the source, as fetched at instant at, makes the chunk
// ineligible as of day d ("" when eligible): a short kind and a detail.
func (tc *truthChunk) exclusion(at time.Time, d asof.Date) (kind, detail string) {
	switch {
	case tc.published.After(at):
		return "unpublished", "published " + asof.FormatInstant(tc.published)
	case d.Before(tc.anchor):
		return "future", "anchor day " + tc.anchor.String()
	case !tc.from.IsZero() && d.Before(tc.from):
		return "not in force", "valid from " + tc.from.String()
	}
	for _, e := range tc.ends {
		if !e.known.After(at) && !d.Before(e.retire) {
			return "superseded", fmt.Sprintf("%s: retired from %s, said %s", e.why, e.retire, asof.FormatInstant(e.known))
		}
	}
	return "", ""
}

// eligibleAt returns the IDs the ground truth makes eligible as of day d
// for the source fetched at instant at, sorted.
func (h *srcHistory) eligibleAt(at time.Time, d asof.Date) []string {
	if len(h.ids) != len(h.truth) {
		h.ids = slices.Sorted(maps.Keys(h.truth))
	}
	var out []string
	for _, id := range h.ids {
		if kind, _ := h.truth[id].exclusion(at, d); kind == "" {
			out = append(out, id)
		}
	}
	return out
}

// days returns the as-of days to check: from the day before the earliest
// anchor or first valid day of a chunk of the last fetch to the day after
// the latest date the history names.
func (h *srcHistory) days() []asof.Date {
	last := h.fetches[len(h.fetches)-1]
	lo, hi := asof.DateOf(h.fetches[0]).Days(), asof.DateOf(last).Days()
	for _, id := range slices.Sorted(maps.Keys(h.truth)) {
		tc := h.truth[id]
		if tc.published.After(last) {
			continue
		}
		lo, hi = min(lo, tc.anchor.Days()), max(hi, tc.anchor.Days())
		if !tc.from.IsZero() {
			lo, hi = min(lo, tc.from.Days()), max(hi, tc.from.Days())
		}
		for _, e := range tc.ends {
			if !e.known.After(last) {
				hi = max(hi, e.retire.Days())
			}
		}
	}
	var out []asof.Date
	for d := lo - 1; d <= hi+1; d++ {
		out = append(out, asof.DateFromDays(d))
	}
	return out
}

// dump renders the history's fetches for a failure report.
func (h *srcHistory) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (tenant %q), %d fetches:\n", h.name, h.tenant, len(h.fetches))
	for k, at := range h.fetches {
		fmt.Fprintf(&b, "--- fetch %d at %s\n", k, asof.FormatInstant(at))
		for _, f := range h.raw[k] {
			b.WriteString(f)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// historyGen generates history number n; dir is a directory of its own for
// connectors that read files.
type historyGen func(rng *rand.Rand, n int, dir string) (*srcHistory, error)

// historyCounts are what one test checked.
type historyCounts struct {
	histories, fetches, chunks, facts int
	cases, pinned, packs              int
	readmitted                        int // pinned cases whose query re-admitted chunks by ID
}

// runHistoryProperty runs the property over histories from gen (see the
// comment at the top of the file).
func runHistoryProperty(t *testing.T, connector string, stream uint64, gen historyGen) {
	seed := historySeed(t)
	target := historyCases
	if quick() {
		target /= 10
	}
	rerun := fmt.Sprintf("rerun: go test -count=1 -run '^%s$' . -evpack.seed=%d (or EVPACK_PROPERTY_SEED=%d)", t.Name(), seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(rerun)
		}
	})
	rng := rand.New(rand.NewPCG(seed, stream))
	dir := t.TempDir()
	var n historyCounts
	for g, first := 0, 0; n.cases < target || g < len(historyGroups); g++ {
		size := historyGroups[g%len(historyGroups)]
		var hs []*srcHistory
		for i := first; i < first+size; i++ {
			hdir := filepath.Join(dir, strconv.Itoa(i))
			require.NoError(t, os.MkdirAll(hdir, 0o755))
			h, err := gen(rng, i, hdir)
			require.NoError(t, err, "generate %s history %d; %s", connector, i, rerun)
			hs = append(hs, h)
		}
		checkHistoryGroup(t, rng, hs, &n, rerun)
		first += size
	}
	t.Logf("%s: %d histories (%d fetches, %d chunks, %d facts committed by A), %d cases (history × as-of day, latest), "+
		"%d pinned cases (history × earlier fetch × as-of day; %d re-admitting chunks by ID), %d pack pairs compared",
		connector, n.histories, n.fetches, n.chunks, n.facts, n.cases, n.pinned, n.readmitted, n.packs)
}

// historyEngine is an engine of a group and its chunk IDs, sorted.
type historyEngine struct {
	e   *Engine
	ids []string
}

func openHistoryEngine(t *testing.T) *historyEngine {
	e, err := OpenMemory(Options{})
	require.NoError(t, err)
	return &historyEngine{e: e}
}

// done records the engine's chunk IDs once its ingests are over.
func (he *historyEngine) done(t *testing.T) {
	st, err := he.e.snapshot()
	require.NoError(t, err)
	he.ids = slices.Sorted(maps.Keys(st.Chunks))
}

// close checks the engine (every stored figure recounted) and closes it.
func (he *historyEngine) close(t *testing.T) {
	require.NoError(t, he.e.Check())
	require.NoError(t, he.e.Close())
}

// checkHistoryGroup builds the engines of one group of histories and checks
// the property for each.
func checkHistoryGroup(t *testing.T, rng *rand.Rand, hs []*srcHistory, n *historyCounts, rerun string) {
	ctx := context.Background()
	a, b, c := openHistoryEngine(t), openHistoryEngine(t), openHistoryEngine(t)
	ingest := func(he *historyEngine, h *srcHistory, k int, what string) IngestReport {
		rep, err := he.e.Ingest(ctx, connectors.Records(h.recs[k]), IngestOptions{})
		if err != nil {
			t.Fatalf("%s: %s: ingest of fetch %d failed: %v\n%s\n%s", h.name, what, k, err, rerun, h.dump())
		}
		return rep
	}

	// A: every fetch, histories interleaved at random, each in order.
	gens := make([][]int64, len(hs))
	next := make([]int, len(hs))
	for left := len(hs); left > 0; {
		i := rng.IntN(len(hs))
		if next[i] == len(hs[i].fetches) {
			continue
		}
		rep := ingest(a, hs[i], next[i], "engine A (every fetch)")
		n.chunks, n.facts = n.chunks+rep.Added, n.facts+rep.Facts
		gens[i] = append(gens[i], rep.Generation)
		if next[i]++; next[i] == len(hs[i].fetches) {
			left--
		}
	}
	// B: the last fetch of each history; C: one earlier fetch of each.
	for _, i := range rng.Perm(len(hs)) {
		ingest(b, hs[i], len(hs[i].fetches)-1, "engine B (last fetch)")
	}
	earlier := make([]int, len(hs))
	for i, h := range hs {
		earlier[i] = rng.IntN(len(h.fetches) - 1)
		ingest(c, h, earlier[i], fmt.Sprintf("engine C (fetch %d alone)", earlier[i]))
	}
	for _, he := range []*historyEngine{a, b, c} {
		he.done(t)
	}

	for i, h := range hs {
		n.histories++
		n.fetches += len(h.fetches)
		checkHistory(t, rng, h, a, b, n, rerun)
		checkPinned(t, rng, h, earlier[i], gens[i][earlier[i]], a, c, n, rerun)
	}
	for _, he := range []*historyEngine{a, b, c} {
		he.close(t)
	}
}

// checkHistory checks the cases of one history: A and B at the latest
// generation on every day of its range, their packs on some.
func checkHistory(t *testing.T, rng *rand.Rand, h *srcHistory, a, b *historyEngine, n *historyCounts, rerun string) {
	last := h.fetches[len(h.fetches)-1]
	questions := historyQuestions(rng, h)
	packOffset := rng.IntN(historyPackStride)
	for di, d := range h.days() {
		want := h.eligibleAt(last, d)
		gotA := checkEligible(t, h, a, 0, d, want, last, "engine A (every fetch) at the latest generation", rerun)
		gotB := checkEligible(t, h, b, 0, d, want, last, "engine B (last fetch)", rerun)
		if !slices.Equal(gotA, gotB) {
			t.Fatalf("%s: as of %s: A's eligible set %v, B's %v\n%s\n%s", h.name, d, gotA, gotB, rerun, h.dump())
		}
		n.cases++
		if di%historyPackStride == packOffset {
			for _, q := range questions {
				r := Request{Question: q.text, AsOf: d, Tenant: h.tenant, K: 5, Filters: q.filters}
				comparePacks(t, h, a.e, b.e, r, r, "A (every fetch) and B (last fetch)", rerun)
				n.packs++
			}
		}
	}
}

// checkPinned checks the pinned cases of one history: A read at generation
// gen, which committed its fetch k, is C's one ingest of fetch k, on every
// historyPinStride-th day, and one pack pair.
func checkPinned(t *testing.T, rng *rand.Rand, h *srcHistory, k int, gen int64, a, c *historyEngine, n *historyCounts, rerun string) {
	if gen == 0 { // A had committed nothing yet, and generation 0 reads the latest
		return
	}
	what := fmt.Sprintf("engine A pinned to generation %d (fetch %d)", gen, k)
	var days []asof.Date
	offset := rng.IntN(historyPinStride)
	for di, d := range h.days() {
		if di%historyPinStride != offset {
			continue
		}
		days = append(days, d)
		want := h.eligibleAt(h.fetches[k], d)
		gotA := checkEligible(t, h, a, gen, d, want, h.fetches[k], what, rerun)
		gotC := checkEligible(t, h, c, 0, d, want, h.fetches[k], fmt.Sprintf("engine C (fetch %d alone)", k), rerun)
		if !slices.Equal(gotA, gotC) {
			t.Fatalf("%s: as of %s: %s eligible set %v, C's %v\n%s\n%s", h.name, d, what, gotA, gotC, rerun, h.dump())
		}
		n.pinned++
		if readmitted(t, a.e, h.tenant, gen, d) > 0 {
			n.readmitted++
		}
	}
	questions := historyQuestions(rng, h)
	if len(days) == 0 || len(questions) == 0 {
		return
	}
	r := Request{Question: questions[0].text, AsOf: days[rng.IntN(len(days))], Tenant: h.tenant, K: 5, Filters: questions[0].filters}
	pinned := r
	pinned.Generation = gen
	comparePacks(t, h, a.e, c.e, pinned, r, fmt.Sprintf("A pinned to generation %d and C (fetch %d alone)", gen, k), rerun)
	n.packs++
}

// historyQuestion is a generated question.
type historyQuestion struct {
	text    string
	filters map[string]string
}

// historyQuestions makes three questions from words of the history's
// texts: two plain, one under a filter the generator offers.
func historyQuestions(rng *rand.Rand, h *srcHistory) []historyQuestion {
	var texts []string
	for _, r := range h.recs[len(h.recs)-1] {
		if r.Fact == nil {
			texts = append(texts, r.Chunk.Text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	pick := func() string {
		var ws []string
		for range 2 + rng.IntN(2) {
			f := strings.FieldsFunc(texts[rng.IntN(len(texts))], func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
			})
			if len(f) > 0 {
				ws = append(ws, f[rng.IntN(len(f))])
			}
		}
		return strings.Join(append(ws, historyWords[rng.IntN(len(historyWords))]), " ")
	}
	qs := []historyQuestion{{text: pick()}, {text: pick()}}
	if len(h.filters) > 0 {
		f := h.filters[rng.IntN(len(h.filters))]
		qs = append(qs, historyQuestion{text: strings.TrimSpace(f.words + " " + pick()), filters: f.filters})
	}
	return qs
}

// eligibleSets returns the eligible set of a request of tenant as of day d
// reading index generation gen (0: the latest) three ways: the lexical
// index's query, the dense leg's in-memory predicate and the citation
// gate's. ids are the engine's chunk IDs, sorted.
func eligibleSets(e *Engine, ids []string, tenant string, gen int64, d asof.Date) (lex, mem, gate []string, err error) {
	st, err := e.snapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	h := evidence.Header{Question: "eligible", AsOf: d, Tenant: tenant}
	sc, err := st.ScopeOf(&h, state.Reads{Gen: gen})
	if err != nil {
		return nil, nil, nil, err
	}
	elig := sc.Eligibility(h)
	if lex, err = e.lex.Eligible(context.Background(), elig, st.Bounds); err != nil {
		return nil, nil, nil, err
	}
	admit := sc.Admitter(elig, d)
	for _, id := range ids {
		c, err := st.ChunkOf(id) // read from its batch file when Open read a checkpoint
		if err != nil {
			return nil, nil, nil, err
		}
		if admit(c) {
			mem = append(mem, id)
		}
		if en, ok, err := sc.Entry(id, d); err == nil && ok && h.Excludes(c) == "" && en.Excluded == "" {
			gate = append(gate, id)
		}
	}
	return lex, mem, gate, nil
}

// readmitted returns how many chunks a request of tenant as of day d
// reading generation gen re-admits by ID (retrieve.Eligibility.Readmit).
func readmitted(t *testing.T, e *Engine, tenant string, gen int64, d asof.Date) int {
	st, err := e.snapshot()
	require.NoError(t, err)
	h := evidence.Header{Question: "readmitted", AsOf: d, Tenant: tenant}
	sc, err := st.ScopeOf(&h, state.Reads{Gen: gen})
	require.NoError(t, err)
	return len(sc.Eligibility(h).Readmit)
}

// checkEligible checks the eligible set of h's tenant in he as of day d at
// generation gen: the three ways agree, and equal the ground truth want for
// the source fetched at instant at. It returns the set.
func checkEligible(t *testing.T, h *srcHistory, he *historyEngine, gen int64, d asof.Date, want []string, at time.Time, what, rerun string) []string {
	lex, mem, gate, err := eligibleSets(he.e, he.ids, h.tenant, gen, d)
	require.NoError(t, err)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s, as of %s: %s\n%s\n%s", h.name, what, d, fmt.Sprintf(format, args...), rerun, h.dump())
	}
	if !slices.Equal(lex, mem) || !slices.Equal(lex, gate) {
		fail("the lexical index's eligible set %v, the dense leg's predicate %v, the citation gate's %v", lex, mem, gate)
	}
	for _, id := range lex {
		tc, ok := h.truth[id]
		if !ok {
			fail("eligible chunk %q is none the generator made", id)
		}
		switch kind, detail := tc.exclusion(at, d); kind {
		case "future":
			fail("cites the future: %q (%s)", id, detail)
		case "superseded":
			fail("cites the superseded: %q (%s)", id, detail)
		case "":
		default:
			fail("chunk %q is eligible, but %s (%s)", id, kind, detail)
		}
	}
	if !slices.Equal(lex, want) {
		fail("eligible set %v, the ground truth's %v", lex, want)
	}
	return lex
}

// comparePacks compares the packs of ra in x and rb in y, retrieval times
// aside.
func comparePacks(t *testing.T, h *srcHistory, x, y *Engine, ra, rb Request, what, rerun string) {
	pa, err := x.Query(context.Background(), ra)
	require.NoError(t, err)
	pb, err := y.Query(context.Background(), rb)
	require.NoError(t, err)
	if diff := cmp.Diff(packForComparison(pa), packForComparison(pb), cmp.Comparer(func(a, b asof.Date) bool { return a == b })); diff != "" {
		t.Fatalf("%s: packs of %s differ for %q as of %s (filters %v) (-%s +%s):\n%s\n%s\n%s",
			h.name, what, ra.Question, ra.AsOf, ra.Filters, "first", "second", diff, rerun, h.dump())
	}
}

// packForComparison is p without what legitimately differs between an
// index that ingested a history fetch by fetch and one that ingested its
// last fetch: retrieval times, content hashes (they hash the retrieval
// time and the chunk's own validity end), the pack's generation and the
// fingerprint's corpus digest; and the validity end shown: fetch by fetch,
// an end a later fetch set is a fact, shown only as of its anchor day or
// later, while a chunk that arrived already ended shows its own (issue 31,
// item 10).
func packForComparison(p *evidence.Pack) *evidence.Pack {
	cp := *p
	cp.Generation = 0
	cp.Citations = slices.Clone(p.Citations)
	for i := range cp.Citations {
		cp.Citations[i].RetrievedAt, cp.Citations[i].ContentHash = time.Time{}, ""
		cp.Citations[i].Valid.To = asof.Date{}
	}
	cp.Fingerprint = slices.Clone(p.Fingerprint)
	for i := range cp.Fingerprint {
		if cp.Fingerprint[i].Key == "corpus" {
			cp.Fingerprint[i].Value = ""
		}
	}
	return &cp
}

// newHistory starts history n of a connector with its tenant and fetches.
func newHistory(rng *rand.Rand, connector string, n, fetchLo, fetchHi int) *srcHistory {
	return &srcHistory{name: fmt.Sprintf("%s history %d", connector, n), tenant: fmt.Sprintf("t%03d", n),
		fetches: fetchTimes(rng, 2+rng.IntN(5), fetchLo, fetchHi), truth: map[string]*truthChunk{}}
}

// TestHistoryPropertyJSONL: JSONL records published over a month, some
// sent again with a valid_to that appears and moves earlier, some retracted
// or ended by fact lines (see the comment at the top of the file).
func TestHistoryPropertyJSONL(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	runHistoryProperty(t, "jsonl", 1, genJSONL)
}

// jsonlLine is a chunk line of a generated JSONL feed.
type jsonlLine struct {
	ID          string            `json:"id"`
	DocID       string            `json:"doc_id"`
	Version     string            `json:"version"`
	Text        string            `json:"text"`
	SourceURL   string            `json:"source_url"`
	RetrievedAt string            `json:"retrieved_at"`
	Anchor      string            `json:"anchor,omitempty"`
	ValidFrom   string            `json:"valid_from,omitempty"`
	ValidTo     string            `json:"valid_to,omitempty"`
	Tenant      string            `json:"tenant"`
	Meta        map[string]string `json:"meta"`
}

// jsonlFactLine is a fact line of a generated JSONL feed.
type jsonlFactLine struct {
	Fact   string `json:"fact"`
	ID     string `json:"id"`
	End    string `json:"end"`
	Anchor string `json:"anchor"`
	By     string `json:"by,omitempty"`
}

// genJSONL generates a JSONL feed's history. Each record is published (its
// line appears) at or after its anchor; some feeds stamp no anchor and keep
// each record's first-seen time as its retrieved_at, which then dates it.
// The record's valid_to may be set from the start, and later fetches may
// set it or move it earlier. Fact lines: a retraction (any end, said
// whenever), an end said after it took effect, a supersession by another
// record of the feed; an end a fact line states caps every later valid_to
// of the record (a realistic source does not contradict itself), a
// retraction does not.
func genJSONL(rng *rand.Rand, n int, _ string) (*srcHistory, error) {
	h := newHistory(rng, "jsonl", n, 3, 40)
	type toEvent struct {
		at time.Time
		to int // day offset
	}
	type rec struct {
		line     jsonlLine
		pub      time.Time
		noAnchor bool
		tos      []toEvent
	}
	type fact struct {
		at   time.Time
		line jsonlFactLine
	}
	const never = 1 << 30
	var recs []*rec
	var facts []fact
	topics := []string{"energy", "transport", "finance"}
	for i := range 4 + rng.IntN(10) {
		id := fmt.Sprintf("h%03d/r%02d", n, i)
		ad := rng.IntN(30)
		anchor := hinstant(rng, ad)
		r := &rec{pub: anchor.Add(time.Duration(rng.IntN(3*86400)) * time.Second)}
		r.line = jsonlLine{ID: id, DocID: fmt.Sprintf("h%03d/d%d", n, rng.IntN(3)), Version: "1",
			Text: words(rng, 4+rng.IntN(10)) + ".", SourceURL: "https://feed.example/" + id, Tenant: h.tenant,
			Meta: map[string]string{"topic": topics[rng.IntN(len(topics))]}}
		if rng.IntN(7) == 0 { // dated by the first-seen time the feed keeps
			r.noAnchor = true
			anchor = r.pub.Truncate(time.Second)
			ad = int(asof.DateOf(anchor).Days() - historyBase)
		} else {
			r.line.Anchor = asof.FormatInstant(anchor)
		}
		from := -never
		if rng.IntN(2) == 0 {
			from = ad - 5 + rng.IntN(11)
			r.line.ValidFrom = hday(from).String()
		}
		tc := &truthChunk{published: r.pub, anchor: asof.DateOf(anchor)}
		if from != -never {
			tc.from = hday(from)
		}
		h.truth[id] = tc
		recTo, capTo := never, never // the record's valid_to; the least end the source stated
		lo := max(from+1, ad-3)
		if rng.IntN(4) == 0 {
			recTo = lo + rng.IntN(30)
			capTo = recTo
			r.tos = append(r.tos, toEvent{at: r.pub, to: recTo})
			tc.end(r.pub, hday(recTo), "valid_to "+hday(recTo).String()+" from the start")
		}
		// Later events on the record, in time order.
		var ats []time.Time
		for range rng.IntN(4) {
			ats = append(ats, r.pub.Add(time.Duration(1+rng.IntN(20*86400))*time.Second))
		}
		slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
		for _, at := range ats {
			atDay := int(asof.DateOf(at).Days() - historyBase)
			switch k := rng.IntN(10); {
			case k < 4: // the record sent again with a valid_to, set or moved earlier
				hi := min(recTo-1, capTo, atDay+15)
				if hi < lo {
					continue
				}
				recTo = lo + rng.IntN(hi-lo+1)
				capTo = min(capTo, recTo)
				r.tos = append(r.tos, toEvent{at: at, to: recTo})
				tc.end(at, hday(recTo), "valid_to "+hday(recTo).String())
			case k < 7: // retracted: any end, said at at
				end := lo + rng.IntN(max(1, atDay+6-lo))
				facts = append(facts, fact{at: at, line: jsonlFactLine{Fact: "retracted", ID: id, End: hday(end).String(), Anchor: asof.FormatInstant(at)}})
				tc.end(at, hday(max(end, atDay)), "retracted from "+hday(end).String())
			default: // ended (or superseded) from a day before it was said
				hi := min(capTo, atDay)
				if hi < lo {
					continue
				}
				end := lo + rng.IntN(hi-lo+1)
				capTo = end
				fl := jsonlFactLine{Fact: "ended", ID: id, End: hday(end).String(), Anchor: asof.FormatInstant(at)}
				var others []string
				for _, o := range recs {
					if !o.pub.After(at) {
						others = append(others, o.line.ID)
					}
				}
				if len(others) > 0 && rng.IntN(2) == 0 {
					fl.Fact, fl.By = "superseded", others[rng.IntN(len(others))]
				}
				facts = append(facts, fact{at: at, line: fl})
				tc.end(at, hday(max(end, atDay)), fl.Fact+" from "+fl.End)
			}
		}
		recs = append(recs, r)
	}
	for k, at := range h.fetches {
		type line struct {
			at  time.Time
			key string
			raw []byte
		}
		var lines []line
		for _, r := range recs {
			if r.pub.After(at) {
				continue
			}
			l := r.line
			l.RetrievedAt = asof.FormatInstant(at)
			if r.noAnchor {
				l.RetrievedAt = asof.FormatInstant(r.pub)
			}
			for _, e := range r.tos {
				if !e.at.After(at) {
					l.ValidTo = hday(e.to).String()
				}
			}
			raw, err := json.Marshal(l)
			if err != nil {
				return nil, err
			}
			lines = append(lines, line{at: r.pub, key: "0" + l.ID, raw: raw})
		}
		for i, f := range facts {
			if f.at.After(at) {
				continue
			}
			raw, err := json.Marshal(f.line)
			if err != nil {
				return nil, err
			}
			lines = append(lines, line{at: f.at, key: fmt.Sprintf("1%s %04d", f.line.ID, i), raw: raw})
		}
		slices.SortFunc(lines, func(a, b line) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return strings.Compare(a.key, b.key)
		})
		var file strings.Builder
		for _, l := range lines {
			file.Write(l.raw)
			file.WriteByte('\n')
		}
		path := fmt.Sprintf("feed-%d.jsonl", k)
		got, err := connectors.NewJSONL().ReadFrom(context.Background(), path, strings.NewReader(file.String()))
		if err != nil {
			return nil, fmt.Errorf("%s: fetch %d: %w\n%s", h.name, k, err, file.String())
		}
		h.raw = append(h.raw, []string{path + ":\n" + file.String()})
		h.recs = append(h.recs, got)
	}
	for _, t := range topics {
		h.filters = append(h.filters, historyFilter{filters: map[string]string{"topic": t}})
	}
	return h, nil
}

// TestHistoryPropertyStatute: a statute published as versions in full and
// amendments, each in force from a day that may follow its publication (or,
// retroactively, precede it); a unit's chunk ends where a later version in
// force changes or drops it.
func TestHistoryPropertyStatute(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	runHistoryProperty(t, "statute", 2, genStatute)
}

// stArticle is a generated article: a lead-in and clauses (a), (b), ...
type stArticle struct {
	num     int
	lead    string
	clauses []string
}

func (a stArticle) label(i int) string { return string(rune('a' + i)) }

// text renders the article as the statute's text has it.
func (a stArticle) text() string {
	s := fmt.Sprintf("Article %d\n%s", a.num, a.lead)
	for i, c := range a.clauses {
		s += fmt.Sprintf("\n(%s) %s", a.label(i), c)
	}
	return s
}

// clauseLine is clause i as its line reads.
func (a stArticle) clauseLine(i int) string { return fmt.Sprintf("(%s) %s", a.label(i), a.clauses[i]) }

// units returns the article's units by key, as the generator expects the
// connector to chunk it: the lead-in (with the heading), then each clause
// prefixed with the heading line.
func (a stArticle) units() map[string]string {
	base := fmt.Sprintf("art-%d", a.num)
	heading := fmt.Sprintf("Article %d", a.num)
	if len(a.clauses) == 0 {
		return map[string]string{base: heading + "\n" + a.lead}
	}
	out := map[string]string{base: heading + "\n" + a.lead}
	for i := range a.clauses {
		out[base+"/"+a.label(i)] = heading + "\n" + a.clauseLine(i)
	}
	return out
}

// stVersion is one generated version of a statute.
type stVersion struct {
	label     string
	published time.Time
	inForce   int // day offset
	articles  []stArticle
	amendment bool            // published as an amendment of the version before it
	changes   []statuteChange // the amendment's changes
}

// mutate returns a copy of arts with one to three changes: a lead-in or a
// clause reworded, a clause added or removed (later clauses move up a
// label), an article repealed or added.
func mutateArticles(rng *rand.Rand, arts []stArticle) []stArticle {
	out := make([]stArticle, len(arts))
	for i, a := range arts {
		out[i] = stArticle{num: a.num, lead: a.lead, clauses: slices.Clone(a.clauses)}
	}
	for range 1 + rng.IntN(3) {
		i := rng.IntN(len(out))
		a := &out[i]
		switch rng.IntN(6) {
		case 0:
			a.lead = words(rng, 3+rng.IntN(5)) + "."
		case 1:
			if len(a.clauses) > 0 {
				a.clauses[rng.IntN(len(a.clauses))] = words(rng, 3+rng.IntN(6)) + "."
			}
		case 2:
			if len(a.clauses) < 4 {
				a.clauses = append(a.clauses, words(rng, 3+rng.IntN(6))+".")
			}
		case 3:
			if len(a.clauses) > 0 {
				j := rng.IntN(len(a.clauses))
				a.clauses = slices.Delete(a.clauses, j, j+1)
			}
		case 4:
			if len(out) > 1 {
				out = slices.Delete(out, i, i+1)
			}
		case 5:
			num := 0
			for _, b := range out {
				num = max(num, b.num)
			}
			out = append(out, newArticle(rng, num+1))
		}
	}
	return out
}

func newArticle(rng *rand.Rand, num int) stArticle {
	a := stArticle{num: num, lead: words(rng, 3+rng.IntN(5)) + "."}
	if rng.IntN(3) > 0 {
		for range 1 + rng.IntN(3) {
			a.clauses = append(a.clauses, words(rng, 3+rng.IntN(6))+".")
		}
	}
	return a
}

// statuteJSON is the statute connector's file form.
type statuteJSON struct {
	DocID       string            `json:"doc_id"`
	Title       string            `json:"title"`
	SourceURL   string            `json:"source_url"`
	RetrievedAt string            `json:"retrieved_at"`
	Tenant      string            `json:"tenant"`
	Meta        map[string]string `json:"meta"`
	Versions    []statuteVersion  `json:"versions"`
	Amendments  []statuteAmend    `json:"amendments,omitempty"`
}

type statuteVersion struct {
	Version   string `json:"version"`
	Published string `json:"published"`
	InForce   string `json:"in_force"`
	Text      string `json:"text"`
}

type statuteAmend struct {
	Version   string          `json:"version"`
	Published string          `json:"published"`
	InForce   string          `json:"in_force"`
	Changes   []statuteChange `json:"changes"`
}

type statuteChange struct {
	Article string `json:"article"`
	Replace string `json:"replace,omitempty"`
	With    string `json:"with,omitempty"`
	Text    string `json:"text,omitempty"`
	Repeal  bool   `json:"repeal,omitempty"`
}

// amendmentChanges expresses the step from articles before to after as an
// amendment's changes: a repeal, a clause line replaced, or an article's
// text in full.
func amendmentChanges(rng *rand.Rand, before, after []stArticle) []statuteChange {
	byNum := func(arts []stArticle) map[int]stArticle {
		m := map[int]stArticle{}
		for _, a := range arts {
			m[a.num] = a
		}
		return m
	}
	b, a := byNum(before), byNum(after)
	nums := slices.Sorted(maps.Keys(b))
	for _, num := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[num]; !ok {
			nums = append(nums, num)
		}
	}
	var out []statuteChange
	for _, num := range nums {
		old, had := b[num]
		cur, has := a[num]
		art := strconv.Itoa(num)
		switch {
		case !has:
			out = append(out, statuteChange{Article: art, Repeal: true})
		case had && old.text() == cur.text():
		case had && old.lead == cur.lead && len(old.clauses) == len(cur.clauses) && rng.IntN(2) == 0:
			changed := -1
			for i := range cur.clauses {
				if old.clauses[i] != cur.clauses[i] {
					if changed >= 0 {
						changed = -2
						break
					}
					changed = i
				}
			}
			if changed >= 0 {
				out = append(out, statuteChange{Article: art, Replace: old.clauseLine(changed), With: cur.clauseLine(changed)})
				continue
			}
			out = append(out, statuteChange{Article: art, Text: cur.text()})
		default:
			out = append(out, statuteChange{Article: art, Text: cur.text()})
		}
	}
	return out
}

// genStatute generates a statute's history: a first version in full, then
// versions in full, or amendments, or full versions then amendments, each
// published after the one before and in force after it.
func genStatute(rng *rand.Rand, n int, _ string) (*srcHistory, error) {
	h := newHistory(rng, "statute", n, 2, 40)
	doc := fmt.Sprintf("h%03d-act", n)
	var arts []stArticle
	for i := range 2 + rng.IntN(3) {
		arts = append(arts, newArticle(rng, i+1))
	}
	nv := 2 + rng.IntN(4)
	full := 1 // versions given in full; the rest are amendments
	switch rng.IntN(3) {
	case 0:
		full = nv
	case 1:
		full = 1 + rng.IntN(nv)
	}
	published := hinstant(rng, rng.IntN(5))
	inForce := int(asof.DateOf(published).Days()-historyBase) + rng.IntN(4)
	var versions []stVersion
	for j := range nv {
		if j > 0 {
			arts = mutateArticles(rng, arts)
			published = published.Add(time.Duration(86400+rng.IntN(8*86400)) * time.Second)
			pday := int(asof.DateOf(published).Days() - historyBase)
			next := pday + rng.IntN(11)
			if rng.IntN(5) == 0 { // retroactive: in force before it was published
				next = pday - 1 - rng.IntN(4)
			}
			inForce = max(next, inForce+1)
		}
		v := stVersion{label: fmt.Sprintf("v%d", j), published: published, inForce: inForce, articles: arts, amendment: j >= full}
		if v.amendment {
			v.changes = amendmentChanges(rng, versions[j-1].articles, arts)
		}
		versions = append(versions, v)
	}

	// The ground truth: walk the versions in force order (which is their
	// order); a unit opens a chunk where its text first appears and ends it
	// where a later version changes or drops it.
	type open struct{ id, text string }
	live := map[string]open{}
	for _, v := range versions {
		units := map[string]string{}
		for _, a := range v.articles {
			maps.Copy(units, a.units())
		}
		for _, key := range slices.Sorted(maps.Keys(units)) {
			o, ok := live[key]
			if ok && o.text == units[key] {
				continue
			}
			id := fmt.Sprintf("%s/%s@%s", doc, key, v.label)
			if ok {
				h.truth[o.id].end(v.published, hday(v.inForce), "changed by "+v.label)
			}
			h.truth[id] = &truthChunk{published: v.published, anchor: asof.DateOf(v.published), from: hday(v.inForce)}
			live[key] = open{id: id, text: units[key]}
		}
		for _, key := range slices.Sorted(maps.Keys(live)) {
			if _, ok := units[key]; !ok {
				h.truth[live[key].id].end(v.published, hday(v.inForce), "dropped by "+v.label)
				delete(live, key)
			}
		}
	}

	for k, at := range h.fetches {
		f := statuteJSON{DocID: doc, Title: "Act " + doc, SourceURL: "https://laws.example/" + doc,
			RetrievedAt: asof.FormatInstant(at), Tenant: h.tenant, Meta: map[string]string{"jurisdiction": "xx"}}
		for _, v := range versions {
			if v.published.After(at) {
				break
			}
			if !v.amendment {
				texts := make([]string, len(v.articles))
				for i, a := range v.articles {
					texts[i] = a.text()
				}
				f.Versions = append(f.Versions, statuteVersion{Version: v.label, Published: asof.FormatInstant(v.published),
					InForce: hday(v.inForce).String(), Text: strings.Join(texts, "\n\n")})
				continue
			}
			f.Amendments = append(f.Amendments, statuteAmend{Version: v.label, Published: asof.FormatInstant(v.published),
				InForce: hday(v.inForce).String(), Changes: v.changes})
		}
		raw, err := json.MarshalIndent(f, "", " ")
		if err != nil {
			return nil, err
		}
		path := doc + ".json"
		got, err := connectors.NewStatute().Parse(path, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: fetch %d: %w\n%s", h.name, k, err, raw)
		}
		h.raw = append(h.raw, []string{path + ":\n" + string(raw)})
		h.recs = append(h.recs, got)
	}
	for i := range 3 {
		h.filters = append(h.filters, historyFilter{filters: map[string]string{"article": strconv.Itoa(i + 1)}})
	}
	return h, nil
}

// TestHistoryPropertyFRED: an ALFRED series whose releases publish new
// observations and revise earlier ones; a revision ends the vintage before
// it (its realtime_end appears in the fetches after the release).
func TestHistoryPropertyFRED(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	runHistoryProperty(t, "fred", 3, genFRED)
}

// genFRED generates an ALFRED series' history: releases on successive days,
// each publishing the first value of some observation dates and revisions
// of others; a value may be missing (".").
func genFRED(rng *rand.Rand, n int, _ string) (*srcHistory, error) {
	h := newHistory(rng, "fred", n, 2, 40)
	series := fmt.Sprintf("H%03dSER", n)
	type vintage struct {
		release int // index into releases
		value   string
	}
	var releases []time.Time
	d := rng.IntN(5)
	for range 2 + rng.IntN(5) {
		releases = append(releases, hinstant(rng, d))
		d += 1 + rng.IntN(9)
	}
	type obs struct {
		date     asof.Date
		vintages []vintage
	}
	var observations []obs
	for m := range 2 + rng.IntN(5) {
		o := obs{date: asof.MustDate(fmt.Sprintf("2020-%02d-01", m+1))}
		for r := rng.IntN(len(releases)); r < len(releases); r++ {
			if len(o.vintages) > 0 && rng.IntN(5) >= 2 {
				continue
			}
			v := vintage{release: r, value: fmt.Sprintf("%d.%d", 100+rng.IntN(900), rng.IntN(10))}
			if rng.IntN(10) == 0 {
				v.value = "."
			}
			o.vintages = append(o.vintages, v)
		}
		observations = append(observations, o)
	}
	for _, o := range observations {
		for i, v := range o.vintages {
			if v.value == "." {
				continue
			}
			start := asof.DateOf(releases[v.release])
			tc := &truthChunk{published: releases[v.release], anchor: start, from: start}
			if i+1 < len(o.vintages) {
				next := releases[o.vintages[i+1].release]
				tc.end(next, asof.DateOf(next), "revised "+asof.DateOf(next).String())
			}
			h.truth[fmt.Sprintf("fred/%s/%s@%s", series, o.date, start)] = tc
		}
	}
	seriesJSON := fmt.Sprintf(`{"seriess":[{"id":%q,"title":"Test series %d","units":"Percent","frequency":"Monthly"}]}`, series, n)
	for k, at := range h.fetches {
		var out fred.Observations
		for _, o := range observations {
			var seen []vintage
			for _, v := range o.vintages {
				if !releases[v.release].After(at) {
					seen = append(seen, v)
				}
			}
			for i, v := range seen {
				ob := fred.Observation{RealtimeStart: asof.DateOf(releases[v.release]).String(), RealtimeEnd: "9999-12-31",
					Date: o.date.String(), Value: v.value}
				if i+1 < len(seen) {
					ob.RealtimeEnd = asof.DateFromDays(asof.DateOf(releases[seen[i+1].release]).Days() - 1).String()
				}
				out.Observations = append(out.Observations, ob)
			}
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		got, err := fred.Parse("series.json", []byte(seriesJSON), "observations.json", raw, at)
		if err != nil {
			return nil, fmt.Errorf("%s: fetch %d: %w\n%s", h.name, k, err, raw)
		}
		for i := range got {
			got[i].Chunk.Tenant = h.tenant
		}
		h.raw = append(h.raw, []string{"series.json: " + seriesJSON, "observations.json: " + string(raw)})
		h.recs = append(h.recs, got)
	}
	for _, o := range observations {
		h.filters = append(h.filters, historyFilter{filters: map[string]string{"observation_date": o.date.String()}})
	}
	return h, nil
}

// TestHistoryPropertyEDGAR: an EDGAR mirror whose submissions file lists
// more filings at each fetch: a 10-K and its amendments (each restating some
// items, its cover included), perhaps a 10-Q and an 8-K, each perhaps
// amended, and a form the connector does not read.
func TestHistoryPropertyEDGAR(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	runHistoryProperty(t, "edgar", 4, genEDGAR)
}

// edgarFiling is a generated filing.
type edgarFiling struct {
	accession string
	form      string
	report    asof.Date
	accepted  time.Time
	doc       string   // primary document's name
	items     []string // items in document order, "cover" first
	texts     map[string][]string
}

// edgarItemHeadings are the heading lines of the items generated filings
// use.
var edgarItemHeadings = map[string]string{
	"1": "Item 1. Business", "1a": "Item 1A. Risk Factors", "7": "Item 7. Management Discussion and Analysis",
	"7a": "Item 7A. Market Risk Disclosures", "8": "Item 8. Financial Statements",
	"2": "Item 2. Management Discussion", "2.02": "Item 2.02 Results of Operations", "9.01": "Item 9.01 Financial Statements and Exhibits",
}

// genEDGAR generates an EDGAR mirror's history in dir: every document is
// written once; each fetch writes the submissions file listing the filings
// accepted by then, newest first, and reads the mirror with the connector.
func genEDGAR(rng *rand.Rand, n int, dir string) (*srcHistory, error) {
	h := newHistory(rng, "edgar", n, 3, 40)
	cikNum := 1_000_000 + n
	cik := fmt.Sprintf("%010d", cikNum)
	name := strings.ToUpper(historyWords[n%len(historyWords)][:1]) + historyWords[n%len(historyWords)][1:] + fmt.Sprintf(" %d", n)
	company := name + " Holdings Inc."
	ticker := fmt.Sprintf("Q%c%c", 'A'+n/26%26, 'A'+n%26)
	seq := 0
	var filings []*edgarFiling
	add := func(form string, report asof.Date, accepted time.Time, items []string) *edgarFiling {
		seq++
		f := &edgarFiling{accession: fmt.Sprintf("%010d-21-%06d", cikNum, seq), form: form, report: report,
			accepted: accepted, items: append([]string{"cover"}, items...), texts: map[string][]string{}}
		ext := ".htm"
		if strings.HasPrefix(form, "8-K") && rng.IntN(2) == 0 {
			ext = ".txt"
		}
		f.doc = fmt.Sprintf("h%03d-%d%s", n, seq, ext)
		cover := fmt.Sprintf("%s %s report cover %s.", company, form, words(rng, 4))
		f.texts["cover"] = []string{"FORM " + form, cover}
		for _, it := range items {
			paras := []string{edgarItemHeadings[it]}
			for range 1 + rng.IntN(2) {
				w := words(rng, 5+rng.IntN(10))
				paras = append(paras, strings.ToUpper(w[:1])+w[1:]+".")
			}
			f.texts[it] = paras
		}
		filings = append(filings, f)
		return f
	}
	// amend adds amendments of f, each accepted after the one before and
	// restating a non-empty subset of f's items.
	amend := func(f *edgarFiling, count int) {
		at := f.accepted
		for range count {
			at = at.Add(time.Duration(3600+rng.IntN(10*86400)) * time.Second)
			var items []string
			for _, it := range f.items[1:] {
				if rng.IntN(2) == 0 {
					items = append(items, it)
				}
			}
			if len(items) == 0 {
				items = f.items[1:2]
			}
			add(f.form+"/A", f.report, at, items)
		}
	}
	items := []string{"1", "1a", "7", "7a", "8"}
	lo := rng.IntN(3)
	tenK := add("10-K", asof.MustDate("2020-12-31"), hinstant(rng, rng.IntN(10)), items[lo:lo+2+rng.IntN(2)])
	amend(tenK, rng.IntN(3))
	if rng.IntN(2) == 0 {
		tenQ := add("10-Q", asof.MustDate("2021-03-31"), hinstant(rng, 5+rng.IntN(20)), []string{"1", "2"})
		amend(tenQ, rng.IntN(2))
	}
	if rng.IntN(2) == 0 {
		event := hday(rng.IntN(25))
		eightK := add("8-K", event, event.Start().Add(time.Duration(rng.IntN(5*86400))*time.Second), []string{"2.02", "9.01"})
		amend(eightK, rng.IntN(2))
	}

	// Documents, written once.
	for _, f := range filings {
		var doc strings.Builder
		if strings.HasSuffix(f.doc, ".txt") {
			for _, it := range f.items {
				for _, p := range f.texts[it] {
					doc.WriteString(p + "\n\n")
				}
			}
		} else {
			doc.WriteString("<html><body>\n")
			for _, it := range f.items {
				for _, p := range f.texts[it] {
					doc.WriteString("<p>" + p + "</p>\n")
				}
			}
			doc.WriteString("</body></html>\n")
		}
		p := filepath.Join(dir, "Archives", "edgar", "data", strconv.Itoa(cikNum), strings.ReplaceAll(f.accession, "-", ""), f.doc)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(doc.String()), 0o644); err != nil {
			return nil, err
		}
	}

	// The ground truth: an item of a filing ends where the earliest later
	// amendment of the same report that restates it was accepted.
	base := func(f *edgarFiling) string { return strings.TrimSuffix(f.form, "/A") + " " + f.report.String() }
	for _, f := range filings {
		for _, it := range f.items {
			tc := &truthChunk{published: f.accepted, anchor: asof.DateOf(f.accepted)}
			for _, g := range filings {
				if strings.HasSuffix(g.form, "/A") && base(g) == base(f) && g.accepted.After(f.accepted) && slices.Contains(g.items, it) {
					tc.end(g.accepted, asof.DateOf(g.accepted), "restated by "+g.accession)
				}
			}
			h.truth[fmt.Sprintf("edgar/%s/%s/item-%s/1", cik, f.accession, it)] = tc
		}
	}

	type recent struct {
		AccessionNumber    []string `json:"accessionNumber"`
		FilingDate         []string `json:"filingDate"`
		ReportDate         []string `json:"reportDate"`
		AcceptanceDateTime []string `json:"acceptanceDateTime"`
		Form               []string `json:"form"`
		PrimaryDocument    []string `json:"primaryDocument"`
	}
	type submissions struct {
		CIK     string   `json:"cik"`
		Name    string   `json:"name"`
		Tickers []string `json:"tickers"`
		Filings struct {
			Recent recent `json:"recent"`
		} `json:"filings"`
	}
	// A form the connector does not read, listed from a random instant.
	form4 := hinstant(rng, rng.IntN(30))
	listed := slices.Clone(filings)
	slices.SortFunc(listed, func(a, b *edgarFiling) int {
		if c := b.accepted.Compare(a.accepted); c != 0 { // newest first, as EDGAR lists them
			return c
		}
		return strings.Compare(a.accession, b.accession)
	})
	for k, at := range h.fetches {
		s := submissions{CIK: cik, Name: company, Tickers: []string{ticker}}
		r := &s.Filings.Recent
		for _, f := range listed {
			if f.accepted.After(at) {
				continue
			}
			r.AccessionNumber = append(r.AccessionNumber, f.accession)
			r.FilingDate = append(r.FilingDate, asof.DateOf(f.accepted).String())
			r.ReportDate = append(r.ReportDate, f.report.String())
			r.AcceptanceDateTime = append(r.AcceptanceDateTime, f.accepted.Format("2006-01-02T15:04:05.000Z"))
			r.Form = append(r.Form, f.form)
			r.PrimaryDocument = append(r.PrimaryDocument, f.doc)
		}
		if !form4.After(at) {
			r.AccessionNumber = append(r.AccessionNumber, fmt.Sprintf("%010d-21-%06d", cikNum, 999))
			r.FilingDate = append(r.FilingDate, asof.DateOf(form4).String())
			r.ReportDate = append(r.ReportDate, "")
			r.AcceptanceDateTime = append(r.AcceptanceDateTime, form4.Format("2006-01-02T15:04:05.000Z"))
			r.Form = append(r.Form, "4")
			r.PrimaryDocument = append(r.PrimaryDocument, "xslF345X05/form4.xml")
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		subs := filepath.Join(dir, "submissions", "CIK"+cik+".json")
		if err := os.MkdirAll(filepath.Dir(subs), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(subs, raw, 0o644); err != nil {
			return nil, err
		}
		got, err := edgar.New(dir, at).Read(context.Background())
		if err != nil {
			return nil, fmt.Errorf("%s: fetch %d: %w\n%s", h.name, k, err, raw)
		}
		for i := range got {
			got[i].Chunk.Tenant = h.tenant
		}
		h.raw = append(h.raw, []string{"submissions/CIK" + cik + ".json: " + string(raw)})
		h.recs = append(h.recs, got)
	}
	h.filters = []historyFilter{
		{filters: map[string]string{"cik": cik}, words: name},
		{filters: map[string]string{"cik": cik, "form": "10-K"}, words: company},
	}
	return h, nil
}

// TestHistoryPropertyRegressions are histories the property found failing, each
// minimized to its fetches: engine A ingests them in order, engine B the
// last one, and both must agree (the eligible set three ways on every day,
// and a pack on each).
func TestHistoryPropertyRegressions(t *testing.T) {
	const r1 = `{"id":"r1","doc_id":"d","version":"1","text":"copper tariff levy notice.","source_url":"https://feed.example/r1",` +
		`"retrieved_at":"2021-03-25T00:00:00Z","anchor":"2021-03-01T09:00:00Z","tenant":"t"`
	line := func(validTo string) string {
		if validTo == "" {
			return r1 + "}"
		}
		return r1 + `,"valid_to":"` + validTo + `"}`
	}
	for _, tc := range []struct {
		name, why string
		fetches   [][]string
	}{
		{"valid_to after a retraction",
			"a retraction withdraws a chunk but ends no validity: the record's own valid_to, sent after it and later than its end, is news " +
				"(it retires the chunk from its end day, before the retraction was said), not an extension (was ErrValidityExtended)",
			[][]string{
				{line("")},
				{line(""), `{"fact":"retracted","id":"r1","end":"2021-03-10","anchor":"2021-03-20T08:00:00Z"}`},
				{line("2021-03-15"), `{"fact":"retracted","id":"r1","end":"2021-03-10","anchor":"2021-03-20T08:00:00Z"}`},
			}},
		{"valid_to kept after a stricter end",
			"a record line that keeps the valid_to it had while a fact line ends the chunk earlier says nothing new (was ErrValidityExtended)",
			[][]string{
				{line("")},
				{line("2021-03-18"), `{"fact":"ended","id":"r1","end":"2021-03-11","anchor":"2021-03-11T01:55:35Z"}`},
				{line("2021-03-18"), `{"fact":"ended","id":"r1","end":"2021-03-11","anchor":"2021-03-11T01:55:35Z"}`},
			}},
		{"valid_to equal to an end said late",
			"an end said after it took effect retires the chunk only from the day it was said; the record's valid_to of the same day " +
				"retires it from that day, as one ingest of the record does (was taken as already known, and A cited the chunk on days B did not)",
			[][]string{
				{line("")},
				{line(""), `{"fact":"ended","id":"r1","end":"2021-03-10","anchor":"2021-03-20T08:00:00Z"}`},
				{line("2021-03-10"), `{"fact":"ended","id":"r1","end":"2021-03-10","anchor":"2021-03-20T08:00:00Z"}`},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			a, b := openHistoryEngine(t), openHistoryEngine(t)
			var last []connectors.Record
			for k, lines := range tc.fetches {
				recs, err := connectors.NewJSONL().ReadFrom(ctx, fmt.Sprintf("fetch-%d.jsonl", k), strings.NewReader(strings.Join(lines, "\n")))
				require.NoError(t, err)
				_, err = a.e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
				require.NoError(t, err, "fetch %d: %s", k, tc.why)
				last = recs
			}
			_, err := b.e.Ingest(ctx, connectors.Records(last), IngestOptions{})
			require.NoError(t, err)
			a.done(t)
			b.done(t)
			for day := asof.MustDate("2021-02-28"); !asof.MustDate("2021-03-25").Before(day); day = asof.DateFromDays(day.Days() + 1) {
				var sets [2][]string
				for i, he := range []*historyEngine{a, b} {
					lex, mem, gate, err := eligibleSets(he.e, he.ids, "t", 0, day)
					require.NoError(t, err)
					require.Equal(t, lex, mem, "as of %s: the lexical index and the dense leg's predicate", day)
					require.Equal(t, lex, gate, "as of %s: the lexical index and the citation gate", day)
					sets[i] = lex
				}
				require.Equal(t, sets[1], sets[0], "as of %s, A (every fetch) and B (last fetch): %s", day, tc.why)
				r := Request{Question: "copper tariff", AsOf: day, Tenant: "t", K: 5}
				pa, err := a.e.Query(ctx, r)
				require.NoError(t, err)
				pb, err := b.e.Query(ctx, r)
				require.NoError(t, err)
				require.Empty(t, cmp.Diff(packForComparison(pb), packForComparison(pa), cmp.Comparer(func(a, b asof.Date) bool { return a == b })),
					"as of %s: %s", day, tc.why)
			}
			a.close(t)
			b.close(t)
		})
	}
}
