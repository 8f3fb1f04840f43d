package retrieve_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"log"
	"strings"
	"unicode"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/retrieve"
)

// hashingEmbedder stands in for a text model: it hashes each lower-cased
// word into one of 64 buckets. What matters is its shape, which any model
// that takes text has too: Analyze keeps the text (as runes), Embed gets it
// back with string(features[i]) and turns the model's float32 output into
// the stored int8 form with retrieve.Quantize.
type hashingEmbedder struct{}

// Identity names the model and every setting that changes its vectors.
func (hashingEmbedder) Identity() string { return "hashing-words/v1 dims=64" }

// Dims is the vector size.
func (hashingEmbedder) Dims() int { return 64 }

// CorpusFree: the vectors do not depend on corpus counts, so a commit embeds
// only its new chunks.
func (hashingEmbedder) CorpusFree() bool { return true }

// Analyze keeps the text itself; a model with a Go tokenizer could return
// its token IDs instead and save re-tokenizing at every commit.
func (hashingEmbedder) Analyze(text string) []int32 { return []int32(text) }

// Embed calls the "model" once per batch and quantizes its output.
func (hashingEmbedder) Embed(ctx context.Context, features [][]int32, _ *retrieve.Counts, _ bool) ([][]int8, error) {
	out := make([][]int8, len(features))
	for i, f := range features {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("hashing embedder: text %d: %w", i, err)
		}
		v := make([]float32, 64)
		for _, w := range strings.FieldsFunc(strings.ToLower(string(f)), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = retrieve.Quantize(v) // nil for a text without words
	}
	return out, nil
}

// A custom embedder adds the dense leg: its ranked list is fused with BM25's
// by Reciprocal Rank Fusion, and its Identity is recorded in every pack.
func ExampleEmbedder() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2, Embedder: hashingEmbedder{}})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, connectors.NewStatute("../testdata/corpus/records-act.json"), evpack.IngestOptions{}); err != nil {
		log.Fatal(err)
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "How long must records be retained?",
		AsOf:     asof.MustDate("2026-01-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dense:", pack.Fingerprint.Get("dense"))
	for _, s := range pack.Trace.Steps {
		fmt.Println("-", s)
	}
	for _, c := range pack.Citations {
		fmt.Printf("[%d] %s\n", c.Index, c.ChunkID)
	}
	// Output:
	// dense: exact int8 scan, hashing-words/v1 dims=64
	// - lexical: kept 6 of the chunks eligible as of 2026-01-15 that match
	// - dense: exact scan of 6 chunks eligible as of 2026-01-15, kept 6
	// - fused 6 (rrf k=60 lexical=1 dense=1)
	// - pool 6
	// - reranked 6
	// - dropped 0
	// - cited 2
	// [1] records-act/art-2@2025
	// [2] records-act/art-4@2025
}
