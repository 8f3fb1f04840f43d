package obliqa

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search/searcher"

	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/internal/testsize"
	"github.com/evpack/evpack/retrieve"
)

// lexicalCorpus is the ObliQA corpus in a bare retrieve.Lexical (one
// generation, the shared tenant) with its statistics, as the engine keeps
// them.
type lexicalCorpus struct {
	l      *retrieve.Lexical
	bounds retrieve.Bounds
	docs   int64
	tokens int64
	df     map[string]uint64
}

// stats returns the scope's statistics for question q, as Engine hands them
// to the lexical leg (document frequencies of the question's terms).
func (c *lexicalCorpus) stats(q string) retrieve.BM25Stats {
	terms, _ := c.l.Terms(q)
	df := make(map[string]uint64, len(terms))
	for _, t := range terms {
		df[t] = c.df[t]
	}
	return retrieve.BM25Stats{Docs: c.docs, Tokens: c.tokens, DocFreq: df}
}

// buildLexical indexes o's corpus in dir ("" for memory), merged to one
// segment on disk.
func buildLexical(tb testing.TB, o *eval.ObliQA, dir string) *lexicalCorpus {
	tb.Helper()
	ctx := context.Background()
	l, err := retrieve.OpenLexical(dir, retrieve.LexicalOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	recs, _ := Records(o)
	c := &lexicalCorpus{l: l, bounds: retrieve.NewBounds(), df: map[string]uint64{}}
	docs := make([]retrieve.Doc, len(recs))
	for i := range recs {
		ch := &recs[i].Chunk
		if err := ch.Prepare(); err != nil {
			tb.Fatal(err)
		}
		docs[i] = retrieve.Doc{Chunk: ch, Gen: 1}
		c.bounds.Add(ch)
		terms, n := l.Terms(ch.Text)
		c.docs++
		c.tokens += int64(n)
		for _, t := range terms {
			c.df[t]++
		}
	}
	if err := l.Index(ctx, docs); err != nil {
		tb.Fatal(err)
	}
	if dir != "" {
		if err := l.Merge(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// Every ObliQA dev question gets the same lexical hits, IDs and quantized
// scores in order, from the pruned search as from bleve's exhaustive match
// query: with the scope's statistics at the engine's pool (50) and at 10,
// and with bleve's own statistics.
func TestPrunedEqualsExhaustiveObliQA(t *testing.T) {
	if testing.Short() {
		t.Skip("searches 2,788 questions four times each way")
	}
	o := dataset(t)
	c := buildLexical(t, o, "")
	ctx := context.Background()
	e := retrieve.Eligibility{AsOf: AsOf}
	heap, checked := 0, 0
	// Every question with EVPACK_LONG_TESTS=1 (CI); every tenth without,
	// each still searched the four ways.
	stride := 10
	if testsize.Long() {
		stride = 1
	}
	for i, q := range o.Questions {
		if i%stride != 0 {
			continue
		}
		checked++
		if _, n := c.l.Terms(q.Text); n > searcher.DisjunctionHeapTakeover {
			heap++
		}
		for _, tc := range []struct {
			n     int
			stats retrieve.BM25Stats
		}{{50, c.stats(q.Text)}, {10, c.stats(q.Text)}, {1, c.stats(q.Text)}, {50, retrieve.BM25Stats{}}} {
			got, err := c.l.Search(ctx, q.Text, e, c.bounds, tc.n, tc.stats)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.l.SearchExhaustive(ctx, q.Text, e, c.bounds, tc.n, tc.stats)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Hits, want.Hits) {
				t.Fatalf("question %d %q n=%d scope stats %v:\npruned     %v\nexhaustive %v",
					i, q.Text, tc.n, tc.stats.Docs > 0, got.Hits, want.Hits)
			}
		}
	}
	t.Logf("%d of %d questions checked, identical; %d of them of more than %d tokens (bleve's heap disjunction)",
		checked, len(o.Questions), heap, searcher.DisjunctionHeapTakeover)
}

// BenchmarkLexicalTurns times the lexical leg alone, pruned against
// exhaustive (bleve's match query through evpack's restrictions and
// statistics), top 50 as the engine asks, on the on-disk merged corpus, the
// two taking turns question by question. One op is one question each way.
//
//	EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench LexicalTurns -benchtime 2788x -count 3
func BenchmarkLexicalTurns(b *testing.B) {
	o := dataset(b)
	c := buildLexical(b, o, filepath.Join(b.TempDir(), "lexical"))
	ctx := context.Background()
	e := retrieve.Eligibility{AsOf: AsOf}
	var pr, ex []time.Duration
	i := 0
	for b.Loop() {
		q := o.Questions[i%len(o.Questions)].Text
		st := c.stats(q)
		start := time.Now()
		if _, err := c.l.Search(ctx, q, e, c.bounds, 50, st); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := c.l.SearchExhaustive(ctx, q, e, c.bounds, 50, st); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		pr, ex = append(pr, mid.Sub(start)), append(ex, end.Sub(mid))
		i++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(Percentile(pr, 0.5)), "pruned-p50-ms")
	b.ReportMetric(ms(Percentile(ex, 0.5)), "exhaustive-p50-ms")
	b.ReportMetric(ms(Percentile(pr, 0.5))/ms(Percentile(ex, 0.5)), "p50-ratio")
	b.ReportMetric(ms(Percentile(pr, 0.99))/ms(Percentile(ex, 0.99)), "p99-ratio")
}
