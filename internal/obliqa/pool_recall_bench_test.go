package obliqa

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/internal/learn"
)

// BenchmarkPoolRecall is issue 32's first-stage experiment: the share of
// gold passages in the pool of 50 the reranker is handed, for the lexical
// leg as it is and for variants of its bleve query, on ObliQA dev. It
// changes nothing in the product; it prints one table:
//
//	EVPACK_OBLIQA_DIR=../shared/data/obliqa GOMAXPROCS=1 go test ./internal/obliqa -run '^$' -bench PoolRecall -benchtime 1x
//
// The engine's row is the pool evpack hands the reranker (learn.Collect);
// the others are bare bleve (BM25, en analyzer, ties by ID) over the same
// passages, so each variant is judged against bare bleve's plain match
// query by the ledger's rule (paired bootstrap over the questions of
// per-question recall@50, 10,000 resamples, seed 1). Variants:
//
//   - phrase pairs: the match query, plus (should) a phrase query for each
//     pair of question terms adjacent after analysis, so passages holding
//     the question's word pairs rise.
//   - heading field: the match query, plus (should) the same match over a
//     field holding the passage's leading heading (ObliQA passages begin
//     "HEADING. text": the part before the first ". ", when it has at most 8
//     words).
//   - neighbour field, boost 0.3: the match query, plus (should) the same
//     match over a field holding the text of the passages before and after
//     it in its document: smoothing the first stage by field weighting.
func BenchmarkPoolRecall(b *testing.B) {
	dir, ok := Dir()
	if !ok {
		b.Skip("set " + EnvDir + " to the ObliQA directory")
	}
	o, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	recs, _ := Records(o)
	ctx := context.Background()
	for range b.N {
		eng, err := evpack.OpenMemory(evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		qs := make([]learn.Question, len(o.Questions))
		for i, q := range o.Questions {
			qs[i] = learn.Question{ID: q.ID, Where: "ObliQA_dev.json", Text: q.Text, Gold: q.Gold, AsOf: AsOf}
		}
		pools, err := learn.Collect(ctx, eng, qs)
		eng.Close()
		if err != nil {
			b.Fatal(err)
		}
		enginePools := make([][]string, len(pools))
		for i, p := range pools {
			enginePools[i] = p.IDs
		}
		idx, m := poolBleve(b, recs)
		an := m.AnalyzerNamed(en.AnalyzerName)
		variants := []struct {
			name string
			q    func(text string) query.Query
		}{
			{"bare bleve: match query (baseline)", func(text string) query.Query { return fieldMatch(text, "text", 1) }},
			{"+ phrase pairs, boost 1", func(text string) query.Query {
				return withShould(fieldMatch(text, "text", 1), phrasePairs(an.Analyze([]byte(text))))
			}},
			{"+ heading field, boost 1", func(text string) query.Query {
				return withShould(fieldMatch(text, "text", 1), fieldMatch(text, "head", 1))
			}},
			{"+ neighbour field, boost 0.3", func(text string) query.Query {
				return withShould(fieldMatch(text, "text", 1), fieldMatch(text, "near", 0.3))
			}},
		}
		// Variants take turns question by question, so each sees the same
		// load on a shared machine; the baseline's search to depth 200 (for
		// recall at 100 and 200) is untimed.
		ranked := make([][][]string, len(variants))
		took := make([]time.Duration, len(variants))
		deep := make([][]string, len(o.Questions))
		search := func(q query.Query, size int) []string {
			req := bleve.NewSearchRequestOptions(q, size, 0, false)
			req.SortBy([]string{"-_score", "_id"})
			res, err := idx.SearchInContext(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			var ids []string
			for _, h := range res.Hits {
				ids = append(ids, h.ID)
			}
			return ids
		}
		for v := range variants {
			ranked[v] = make([][]string, len(o.Questions))
		}
		for i, q := range o.Questions {
			for v, vr := range variants {
				start := time.Now()
				ranked[v][i] = search(vr.q(q.Text), 50)
				took[v] += time.Since(start)
			}
			deep[i] = search(variants[0].q(q.Text), 200)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "first stage\trecall@50\tgold in pool\tΔ vs baseline [95%]\tverdict\tquery time / baseline")
		row := func(name string, ranked [][]string, base []float64, cost string) []float64 {
			per := make([]float64, len(o.Questions))
			found, gold := 0, 0
			for i, q := range o.Questions {
				per[i] = eval.Score(ranked[i], q.Gold, 50).Recall
				for _, g := range q.Gold {
					gold++
					if slices.Contains(ranked[i][:min(50, len(ranked[i]))], g) {
						found++
					}
				}
			}
			delta, verdict := "", "baseline"
			if base != nil {
				r, err := eval.Bootstrap(base, per, 10_000, 1)
				if err != nil {
					b.Fatal(err)
				}
				delta, verdict = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", r.Diff, r.Lo, r.Hi), string(r.Verdict)
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%d of %d\t%s\t%s\t%s\n", name, eval.Summarize(scoresOf(per)).Recall, found, gold, delta, verdict, cost)
			return per
		}
		row("evpack's pool of 50 (the engine)", enginePools, nil, "")
		base := row(variants[0].name, ranked[0], nil, "1.00")
		for v := 1; v < len(variants); v++ {
			row(variants[v].name, ranked[v], base, fmt.Sprintf("%.2f", took[v].Seconds()/took[0].Seconds()))
		}
		for _, k := range []int{100, 200} {
			var s []eval.Scores
			for i, q := range o.Questions {
				s = append(s, eval.Score(deep[i], q.Gold, k))
			}
			fmt.Fprintf(tw, "bare bleve, recall@%d\t%.4f\t\t\t\n", k, eval.Summarize(s).Recall)
		}
		missed, beyond := 0, 0
		for i, q := range o.Questions {
			for _, g := range q.Gold {
				if at := slices.Index(deep[i], g); at < 0 || at >= 50 {
					missed++
					if at < 0 {
						beyond++
					}
				}
			}
		}
		fmt.Fprintf(tw, "bare bleve: %d gold passages outside the top 50, %d of them (%.0f%%) beyond 200 or not indexed\n", missed, beyond, 100*float64(beyond)/float64(missed))
		fmt.Fprintf(tw, "%d questions; paired bootstrap of per-question recall@50, 10000 resamples, seed 1; query time: the variants' bleve searches taking turns question by question\n", len(o.Questions))
		tw.Flush()
		idx.Close()
	}
}

func scoresOf(recall []float64) []eval.Scores {
	out := make([]eval.Scores, len(recall))
	for i, r := range recall {
		out[i].Recall = r
	}
	return out
}

// poolBleve indexes recs in memory: text, the leading heading (head) and
// the neighbours' text (near), each with the en analyzer and term vectors.
func poolBleve(b *testing.B, recs []connectors.Record) (bleve.Index, *mapping.IndexMappingImpl) {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range []string{"text", "head", "near"} {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.Store = false
		doc.AddFieldMappingsAt(f, fm)
	}
	m.DefaultMapping = doc
	idx, err := bleve.NewMemOnly(m)
	if err != nil {
		b.Fatal(err)
	}
	batch := idx.NewBatch()
	heads := 0
	for i, r := range recs {
		var near []string
		if i > 0 && recs[i-1].Chunk.DocID == r.Chunk.DocID {
			near = append(near, recs[i-1].Chunk.Text)
		}
		if i+1 < len(recs) && recs[i+1].Chunk.DocID == r.Chunk.DocID {
			near = append(near, recs[i+1].Chunk.Text)
		}
		head := leadingHeading(r.Chunk.Text)
		if head != "" {
			heads++
		}
		if err := batch.Index(r.Chunk.ID, map[string]any{"text": r.Chunk.Text, "head": head, "near": strings.Join(near, "\n")}); err != nil {
			b.Fatal(err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("bare bleve: %d passages, %d with a leading heading\n", len(recs), heads)
	return idx, m
}

// leadingHeading is the text before the first ". " when it has 1 to 8
// words ("INTRODUCTION. This Guidance ..."), else "".
func leadingHeading(text string) string {
	head, _, ok := strings.Cut(text, ". ")
	if n := len(strings.Fields(head)); !ok || n == 0 || n > 8 {
		return ""
	}
	return head
}

func fieldMatch(text, field string, boost float64) query.Query {
	mq := bleve.NewMatchQuery(text)
	mq.SetField(field)
	mq.SetBoost(boost)
	return mq
}

// withShould scores must, adding should's score where it matches (bleve's
// boolean query: should is optional beside a must).
func withShould(must, should query.Query) query.Query {
	if should == nil {
		return must
	}
	bq := bleve.NewBooleanQuery()
	bq.AddMust(must)
	bq.AddShould(should)
	return bq
}

// phrasePairs is a disjunction of one phrase query per distinct pair of
// adjacent analysed terms (positions one apart), in sorted order; nil when
// there is none.
func phrasePairs(tokens analysis.TokenStream) query.Query {
	seen := map[string]bool{}
	var pairs [][2]string
	for i := 1; i < len(tokens); i++ {
		if tokens[i].Position != tokens[i-1].Position+1 {
			continue
		}
		p := [2]string{string(tokens[i-1].Term), string(tokens[i].Term)}
		if k := p[0] + " " + p[1]; !seen[k] {
			seen[k] = true
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	qs := make([]query.Query, len(pairs))
	for i, p := range pairs {
		qs[i] = bleve.NewPhraseQuery([]string{p[0], p[1]}, "text")
	}
	return bleve.NewDisjunctionQuery(qs...)
}
