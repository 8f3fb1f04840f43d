package rerank_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

// coverage is a custom reranker: it scores a candidate by how many distinct
// question terms it contains, and breaks equal coverage by the fused rank.
// Integer arithmetic only, so it can promise bit-stable scores.
type coverage struct{}

// Name identifies the reranker and every setting that changes its order: it
// goes into each pack's fingerprint and the cache key.
func (coverage) Name() string { return "coverage/v1" }

// BitStable tells the engine that the scores are the same on every machine,
// so packs need no ledger.
func (coverage) BitStable() bool { return true }

// Rerank scores every candidate, best first, ties by chunk ID.
func (coverage) Rerank(ctx context.Context, question string, cands []rerank.Candidate, _ rerank.Stats) ([]evidence.Scored, error) {
	want := map[string]bool{}
	for _, t := range rerank.Terms(question) {
		want[t] = true
	}
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		terms := c.Terms
		if terms == nil { // the engine fills Terms; a direct caller may not
			terms = rerank.Terms(c.Text)
		}
		seen := map[string]bool{}
		for _, t := range terms {
			if want[t] {
				seen[t] = true
			}
		}
		// Coverage decides; the fused rank (1-based, at most 1000) only
		// breaks equal coverage.
		score := int64(len(seen))*evidence.ScoreScale + int64(1000-c.Rank)
		out[i] = evidence.Scored{ChunkID: c.ID, Score: score}
	}
	slices.SortFunc(out, func(a, b evidence.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ChunkID, b.ChunkID)
	})
	return out, ctx.Err()
}

// A custom reranker is a value in Options: it orders the fused pool before
// the citation gate, and its Name is recorded in every pack it shapes.
func ExampleReranker() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 3, Reranker: coverage{}})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	for _, c := range []connectors.Connector{
		connectors.NewStatute("../testdata/corpus/records-act.json"),
		connectors.NewJSONL("../testdata/corpus/guidance.jsonl"),
	} {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "retention period for client transaction records",
		AsOf:     asof.MustDate("2026-01-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reranker:", pack.Fingerprint.Get("reranker"), "bit-stable:", pack.Fingerprint.Get("reranker_bit_stable"), "ledger:", len(pack.Ledger))
	for _, c := range pack.Citations {
		fmt.Printf("[%d] %s score %d\n", c.Index, c.ChunkID, c.Score)
	}
	// Output:
	// reranker: coverage/v1 bit-stable: true ledger: 0
	// [1] records-act/art-2@2025 score 5000999
	// [2] gn-2019-04 score 4000997
	// [3] records-act/art-5@2021 score 3000996
}

// NewExternal turns one batched scoring call (an LLM, a hosted reranker, a
// cross-encoder in another process) into a Reranker. Scores become fixed
// point (evidence.ScoreScale), best first, ties by chunk ID.
func ExampleNewExternal() {
	score := func(ctx context.Context, question string, texts []string) ([]float64, error) {
		out := make([]float64, len(texts))
		for i, t := range texts {
			out[i] = float64(len(t)) / 100 // a stand-in for a model's relevance
		}
		return out, nil
	}
	rr, err := rerank.NewExternal("length-model-v1", score)
	if err != nil {
		log.Fatal(err)
	}
	ranked, err := rr.Rerank(context.Background(), "retention period", []rerank.Candidate{
		{ID: "a", Text: "short", Rank: 1},
		{ID: "b", Text: "a longer passage", Rank: 2},
		{ID: "c", Text: "mid-sized", Rank: 3},
		{ID: "d", Text: "equal", Rank: 4}, // ties with a: broken by ID
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rr.Name())
	for _, s := range ranked {
		fmt.Println(s.ChunkID, s.Score)
	}
	// Output:
	// external/length-model-v1
	// b 160000
	// c 90000
	// a 50000
	// d 50000
}
