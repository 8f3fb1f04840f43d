package retrieve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/searcher"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/testsize"
)

var pruneSeed = flag.Uint64("prune.seed", 0, "seed of TestPrunedEqualsExhaustive (0: seeds 1 to 4 with EVPACK_LONG_TESTS=1, else 1 and 2)")

// pruneWords is the corpus vocabulary, most frequent first (drawn Zipf-like);
// a few share a Porter stem, so that distinct words make one term.
var pruneWords = strings.Fields(`records retain retained retention firm client money report
	annual authorised person regulator capital requirement requirements market conduct
	disclosure audit auditor custody asset assets fund manager trustee prospectus
	insider dealing sanction penalty breach notify notification waiver exemption
	liquidity solvency reinsurance actuary governance board director remuneration`)

// pruneStop are stop words of both analyzers; pruneAbsent occur nowhere.
var pruneStop = []string{"the", "of", "and", "to", "a", "in", "is"}
var pruneAbsent = []string{"zyzzyva", "quokka"}

// pruneCorpus is a lexical index over many tenants, dated versions, facts
// and purges, with what a test needs to draw requests over it.
type pruneCorpus struct {
	l      *Lexical
	bounds Bounds
	chunks []*evidence.Chunk // every chunk indexed, purged ones included
	last   map[string]Doc    // each chunk's document as last indexed
	gen    map[string]int64
	gone   map[string]bool // purged
	gens   int64
}

func pruneText(r *rand.Rand, words int) string {
	out := make([]string, words)
	for i := range out {
		// Zipf-like: low indices far more often
		k := int(float64(len(pruneWords)) * r.Float64() * r.Float64() * r.Float64())
		out[i] = pruneWords[k]
		if r.IntN(5) == 0 {
			out[i] = pruneStop[r.IntN(len(pruneStop))]
		}
	}
	return strings.Join(out, " ")
}

func buildPruneCorpus(t *testing.T, r *rand.Rand, analyzer string) *pruneCorpus {
	return buildPruneCorpusWith(t, r, LexicalOptions{Analyzer: analyzer})
}

func buildPruneCorpusWith(t *testing.T, r *rand.Rand, opts LexicalOptions) *pruneCorpus {
	return buildPruneCorpusAt(t, r, "", opts)
}

// buildPruneCorpusAt is buildPruneCorpusWith with the index in dir ("" in
// memory).
func buildPruneCorpusAt(t *testing.T, r *rand.Rand, dir string, opts LexicalOptions) *pruneCorpus {
	t.Helper()
	ctx := context.Background()
	l, err := OpenLexical(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	pc := &pruneCorpus{l: l, bounds: NewBounds(), gen: map[string]int64{}, gone: map[string]bool{}, last: map[string]Doc{}}
	tenants := []string{"", "acme", "globex", "initech"}
	var texts []string
	day0 := asof.MustDate("2019-01-01").Days()
	pc.gens = 4 + int64(r.IntN(3))
	for g := int64(1); g <= pc.gens; g++ {
		var docs []Doc
		for i := 0; i < 60+r.IntN(60); i++ {
			text := pruneText(r, 1+r.IntN(40))
			if len(texts) > 0 && r.IntN(5) == 0 {
				text = texts[r.IntN(len(texts))] // a duplicate: ties
			}
			texts = append(texts, text)
			anchor := day0 + int64(r.IntN(5*365))
			c := &evidence.Chunk{ID: fmt.Sprintf("c%03d-%04d", g, i), DocID: fmt.Sprintf("d%d", r.IntN(30)),
				Text: text, SourceURL: "u", Connector: "c", Tenant: tenants[r.IntN(len(tenants))],
				RetrievedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
				Anchor:      asof.Anchor{At: time.Unix(anchor*86400, 0).UTC(), Field: "published"},
				Meta:        map[string]string{"kind": []string{"rule", "guidance"}[r.IntN(2)]}}
			if r.IntN(3) == 0 {
				c.Valid.From = asof.DateFromDays(anchor + int64(r.IntN(200)))
			}
			if r.IntN(3) == 0 {
				c.Valid.To = asof.DateFromDays(anchor + 200 + int64(r.IntN(900)))
			}
			if err := c.Prepare(); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, Doc{Chunk: c, Gen: g})
			pc.chunks = append(pc.chunks, c)
			pc.gen[c.ID] = g
			pc.bounds.Add(c)
		}
		// facts of this generation: re-index some earlier chunks, retired
		for range r.IntN(12) {
			c := pc.chunks[r.IntN(len(pc.chunks))]
			if pc.gen[c.ID] == g || pc.gone[c.ID] {
				continue
			}
			day := asof.DateFromDays(day0 + int64(r.IntN(6*365)))
			docs = append(docs, Doc{Chunk: c, Gen: pc.gen[c.ID], Retired: day, FactGen: g, FirstFactGen: g})
			pc.bounds.Retire(day)
		}
		// The same chunk twice in a batch: the last wins, as in Engine.
		if err := l.Index(ctx, docs); err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			pc.last[d.Chunk.ID] = d
		}
		// purges
		var gone []*evidence.Chunk
		for range r.IntN(4) {
			c := pc.chunks[r.IntN(len(pc.chunks))]
			gone = append(gone, c)
			pc.gone[c.ID] = true
		}
		if err := l.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
	}
	return pc
}

// stats returns the scope's statistics as an engine keeps them (chunks of
// the tenant and the shared one up to generation upTo), or none.
func (pc *pruneCorpus) stats(r *rand.Rand, tenant string, upTo int64) BM25Stats {
	if r.IntN(4) == 0 {
		return BM25Stats{}
	}
	st := pc.fullStats(tenant, upTo)
	if r.IntN(3) == 0 {
		st.DocFreq = nil
	}
	return st
}

// upTo returns the generation e's statistics are taken at: a pinned
// request's, else the last.
func (pc *pruneCorpus) upTo(e Eligibility) int64 {
	if e.Pinned {
		return e.UpTo
	}
	return pc.gens
}

// fullStats returns the scope's statistics as an engine keeps them.
func (pc *pruneCorpus) fullStats(tenant string, upTo int64) BM25Stats {
	st := BM25Stats{DocFreq: map[string]uint64{}}
	for _, c := range pc.chunks {
		if pc.gone[c.ID] || pc.gen[c.ID] > upTo || (c.Tenant != tenant && c.Tenant != "") {
			continue
		}
		terms, n := pc.l.Terms(c.Text)
		st.Docs++
		st.Tokens += int64(n)
		for _, term := range terms {
			st.DocFreq[term]++
		}
	}
	return st
}

func (pc *pruneCorpus) question(r *rand.Rand) string {
	var ws []string
	for range r.IntN(22) {
		switch k := r.IntN(20); {
		case k == 0:
			ws = append(ws, pruneAbsent[r.IntN(len(pruneAbsent))])
		case k < 3:
			ws = append(ws, pruneStop[r.IntN(len(pruneStop))])
		case k < 5 && len(ws) > 0:
			ws = append(ws, ws[r.IntN(len(ws))]) // a duplicate token
		default:
			ws = append(ws, pruneWords[r.IntN(len(pruneWords))])
		}
	}
	return strings.Join(ws, " ")
}

func (pc *pruneCorpus) eligibility(r *rand.Rand) Eligibility {
	e := Eligibility{AsOf: asof.DateFromDays(asof.MustDate("2019-01-01").Days() + int64(r.IntN(7*365))),
		Tenant: []string{"", "acme", "globex", "initech", "nobody"}[r.IntN(5)]}
	if r.IntN(4) == 0 {
		e.Filters = []evidence.Filter{{Key: "kind", Value: "rule"}}
	}
	if r.IntN(3) == 0 {
		e.Pinned, e.UpTo, e.FewerAfter = true, 1+r.Int64N(pc.gens), r.IntN(2) == 0
	}
	if r.IntN(4) == 0 {
		for range 1 + r.IntN(5) {
			e.Readmit = append(e.Readmit, pc.chunks[r.IntN(len(pc.chunks))].ID)
		}
		slices.Sort(e.Readmit)
		e.Readmit = slices.Compact(e.Readmit)
	}
	if r.IntN(4) == 0 {
		for range 1 + r.IntN(5) {
			e.Exclude = append(e.Exclude, pc.chunks[r.IntN(len(pc.chunks))].ID)
		}
		slices.Sort(e.Exclude)
		e.Exclude = slices.Compact(e.Exclude)
	}
	return e
}

// The pruned search returns exactly the exhaustive search's hits (IDs and
// quantized scores, in order) over random questions, scopes, as-of days,
// filters, pinned generations, facts and purges, for several n, with ties at
// the cut (duplicate texts).
func TestPrunedEqualsExhaustive(t *testing.T) {
	// Four seeds of 200 questions with EVPACK_LONG_TESTS=1 (CI); two (one
	// per analyzer) of 100 without, the same kinds of draw at a quarter of
	// the searches.
	seeds, questions := []uint64{1, 2, 3, 4}, 200
	if !testsize.Long() {
		seeds, questions = []uint64{1, 2}, 100
	}
	if *pruneSeed != 0 {
		seeds = []uint64{*pruneSeed}
	}
	ctx := context.Background()
	for _, seed := range seeds {
		t.Logf("seed %d (rerun with -prune.seed %d)", seed, seed)
		r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		analyzer := []string{"en", "standard"}[seed%2]
		pc := buildPruneCorpus(t, r, analyzer)
		// The questions take turns over three caches of decoded postings:
		// none (zapx's postings each time), the default, and one so small
		// that it turns long lists away and drops entries at every search.
		caches := []*postingsCache{nil, pc.l.postings, newPostingsCache(4 << 10)}
		const ns = 4
		var pruned, tiesAtCut, nonEmpty int
		for q := 0; q < questions; q++ {
			pc.l.postings = caches[q%len(caches)]
			text := pc.question(r)
			e := pc.eligibility(r)
			stats := pc.stats(r, e.Tenant, pc.upTo(e))
			for _, n := range []int{1, 3, 10, 50} {
				want, err := pc.l.SearchExhaustive(ctx, text, e, pc.bounds, n, stats)
				if err != nil {
					t.Fatal(err)
				}
				got, err := pc.l.Search(ctx, text, e, pc.bounds, n, stats)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Hits, want.Hits) {
					t.Fatalf("seed %d question %d %q n=%d elig=%+v stats docs=%d df=%v:\npruned     %v\nexhaustive %v",
						seed, q, text, n, e, stats.Docs, stats.DocFreq != nil, got.Hits, want.Hits)
				}
				if hits, raws, err := pc.l.searchPruned(ctx, text, e, pc.bounds, n, stats); err == nil {
					pruned++
					if _, tokens := pc.l.Terms(text); tokens <= searcher.DisjunctionHeapTakeover && exactReplay {
						pc.sameBits(t, text, e, stats, hits, raws)
					}
				} else if !errors.As(err, new(errUnprunable)) {
					t.Fatal(err)
				}
				if len(want.Hits) > 0 {
					nonEmpty++
				}
				if len(want.Hits) == n {
					more, err := pc.l.SearchExhaustive(ctx, text, e, pc.bounds, n+1, stats)
					if err != nil {
						t.Fatal(err)
					}
					if len(more.Hits) > n && more.Hits[n].Score == want.Hits[n-1].Score {
						tiesAtCut++
					}
				}
			}
		}
		searches := questions * ns
		used, entries := caches[1].stats()
		tinyUsed, tinyEntries := caches[2].stats()
		t.Logf("seed %d: %d searches, %d pruned (the rest scored near a rounding boundary), %d with hits, %d with a tie at the cut; caches %d bytes in %d entries, %d in %d",
			seed, searches, pruned, nonEmpty, tiesAtCut, used, entries, tinyUsed, tinyEntries)
		if entries == 0 || tinyEntries == 0 || tinyUsed > caches[2].max {
			t.Fatalf("seed %d: the caches held %d and %d entries (%d bytes of at most %d in the small one)", seed, entries, tinyEntries, tinyUsed, caches[2].max)
		}
		if pruned < searches*9/10 || nonEmpty < searches/2 || tiesAtCut < 10 {
			t.Fatalf("seed %d: the draw exercised too little: %d pruned, %d with hits, %d ties at the cut", seed, pruned, nonEmpty, tiesAtCut)
		}
	}
}

// sameBits checks that the pruned search's raw scores are bleve's, bit for
// bit (for a question bleve takes by its slice disjunction, whose order of
// summation the pruned search replays).
func (pc *pruneCorpus) sameBits(t *testing.T, text string, e Eligibility, stats BM25Stats, hits []Hit, raws []float64) {
	t.Helper()
	if len(hits) == 0 {
		return
	}
	stats, err := pc.l.wholeStats(context.Background(), text, stats)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]float64{}
	parts, err := pc.l.partsFor(e, pc.bounds)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range parts {
		q, pre := exhaustiveQuery(text, e, sp.bounds, stats)
		req := bleve.NewSearchRequestOptions(q, len(pc.chunks), 0, false)
		req.PreSearchData = pre
		res, err := sp.p.idx.Search(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			raw[h.ID] = h.Score
		}
	}
	for i, h := range hits {
		if want, ok := raw[h.ID]; !ok || math.Float64bits(want) != math.Float64bits(raws[i]) {
			t.Fatalf("%q %+v: %s scores %v (%#x) pruned, %v (%#x) in bleve", text, e, h.ID,
				raws[i], math.Float64bits(raws[i]), want, math.Float64bits(want))
		}
	}
}

func TestNearBoundary(t *testing.T) {
	for _, tc := range []struct {
		raw  float64
		m    int
		want bool
	}{
		{0.5e-9, 3, true}, // exactly half a quantum
		{(12345 + 0.5) * 1e-9, 3, true},
		{0.25e-9, 3, false},
		{12345.25e-9, 20, false},
		{0.123456789, 12, false},
		{math.Nextafter(0.5e-9, 1), 3, true},
	} {
		if got := nearBoundary(tc.raw, tc.m); got != tc.want {
			t.Errorf("nearBoundary(%v, %d) = %v, want %v", tc.raw, tc.m, got, tc.want)
		}
	}
}

func TestPrunedEdgeCases(t *testing.T) {
	ctx := context.Background()
	l, err := OpenLexical("", LexicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := factsChunk(t, "a", "records retained five years by the firm")
	b := factsChunk(t, "b", "records retained seven years")
	c := factsChunk(t, "c", "client money held in trust")
	d := factsChunk(t, "d", "records retained five years by the firm") // a's text: a tie
	bounds := NewBounds()
	for _, x := range []*evidence.Chunk{a, b, c, d} {
		bounds.Add(x)
	}
	if err := l.Index(ctx, []Doc{{Chunk: a, Gen: 1}, {Chunk: b, Gen: 1}, {Chunk: c, Gen: 1}, {Chunk: d, Gen: 1}}); err != nil {
		t.Fatal(err)
	}
	e := Eligibility{AsOf: asof.MustDate("2025-01-01")}
	check := func(name, text string, n int, want ...string) {
		t.Helper()
		got, err := l.Search(ctx, text, e, bounds, n, BM25Stats{})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := l.SearchExhaustive(ctx, text, e, bounds, n, BM25Stats{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Hits, ex.Hits) {
			t.Errorf("%s: pruned %v, exhaustive %v", name, got.Hits, ex.Hits)
		}
		var ids []string
		for _, h := range got.Hits {
			ids = append(ids, h.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: got %v, want %v", name, ids, want)
		}
	}
	check("empty question", "", 10)
	check("stop words only", "the of and by", 10)
	check("absent term", "zyzzyva", 10)
	check("absent term beside a present one", "zyzzyva client", 10, "c")
	check("n larger than the matches", "records", 50, "b", "a", "d")
	check("tie at the cut, broken by ID", "records five", 1, "a")
	check("n zero", "records", 0)

	// A fact re-indexes b (replaced: one document, not two); a purge takes
	// a out. Neither the old b nor a may be seen.
	if err := l.Index(ctx, []Doc{{Chunk: b, Gen: 1, Retired: asof.MustDate("2030-01-01"), FactGen: 2, FirstFactGen: 2}}); err != nil {
		t.Fatal(err)
	}
	bounds.Retire(asof.MustDate("2030-01-01"))
	if err := l.Delete(ctx, []*evidence.Chunk{a}); err != nil {
		t.Fatal(err)
	}
	check("replaced and purged", "records", 10, "b", "d")
	check("purged tie", "records five", 1, "d")
	e.AsOf = asof.MustDate("2030-01-01")
	check("retired by the replacing document", "records", 10, "d")
}

// Partitions change no ranking: the same corpus in one bleve index and in
// partitions of 30 days gives the same hits (IDs, quantized scores, order)
// and the same eligible set for every request drawn, while the partitioned
// index reads fewer partitions than it holds (seed printed).
func TestPartitionsChangeNoRanking(t *testing.T) {
	seeds := []uint64{5, 6}
	if *pruneSeed != 0 {
		seeds = []uint64{*pruneSeed}
	}
	ctx := context.Background()
	for _, seed := range seeds {
		t.Logf("seed %d (rerun with -prune.seed %d)", seed, seed)
		analyzer := []string{"en", "standard"}[seed%2]
		one := buildPruneCorpusWith(t, rand.New(rand.NewPCG(seed, 1)), LexicalOptions{Analyzer: analyzer, Unpartitioned: true})
		parts := buildPruneCorpusWith(t, rand.New(rand.NewPCG(seed, 1)), LexicalOptions{Analyzer: analyzer, PartitionDays: 30})
		r := rand.New(rand.NewPCG(seed, 2))
		var skipped, hits int
		all, _, err := parts.l.Partitions(Eligibility{}, parts.bounds)
		if err != nil {
			t.Fatal(err)
		}
		if n, _, err := one.l.Partitions(Eligibility{}, one.bounds); err != nil || n != 1 || all < 50 {
			t.Fatalf("seed %d: %d partitions unpartitioned, %d partitioned", seed, n, all)
		}
		for q := range 150 {
			text := parts.question(r)
			e := parts.eligibility(r)
			// what the engine always passes: without it each layout takes
			// bleve's own statistics, which differ
			stats := parts.fullStats(e.Tenant, parts.upTo(e))
			if stats.Docs == 0 {
				continue
			}
			for _, n := range []int{1, 10, 50} {
				want, err := one.l.Search(ctx, text, e, one.bounds, n, stats)
				if err != nil {
					t.Fatal(err)
				}
				got, err := parts.l.Search(ctx, text, e, parts.bounds, n, stats)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Hits, want.Hits) {
					t.Fatalf("seed %d question %d %q n=%d elig=%+v:\npartitioned %v\none index   %v", seed, q, text, n, e, got.Hits, want.Hits)
				}
				hits += len(got.Hits)
			}
			want, err := one.l.Eligible(ctx, e, one.bounds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parts.l.Eligible(ctx, e, parts.bounds)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d request %d elig=%+v: partitioned index admits %d chunks, one index %d", seed, q, e, len(got), len(want))
			}
			if _, read, err := parts.l.Partitions(e, parts.bounds); err != nil || read < all/2 {
				skipped++
			}
		}
		t.Logf("seed %d: %d partitions, %d of 150 requests read fewer than half, %d hits", seed, all, skipped, hits)
		if skipped < 100 || hits < 1000 {
			t.Fatalf("seed %d: the draw exercised too little: %d requests skipped partitions, %d hits", seed, skipped, hits)
		}
	}
}
