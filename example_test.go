package evpack_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/rerank"
)

// ingestCorpus adds the small corpus of testdata/corpus (a statute in four
// versions and some guidance notes) to eng.
func ingestCorpus(ctx context.Context, eng *evpack.Engine) error {
	for _, c := range []connectors.Connector{
		connectors.NewStatute("testdata/corpus/records-act.json"),
		connectors.NewJSONL("testdata/corpus/guidance.jsonl"),
	} {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			return fmt.Errorf("ingest %s: %w", c.Name(), err)
		}
	}
	return nil
}

// A whole service in ten lines: an index in memory, one ingest, one question
// as of a date. The pack's text form is what a reasoner reads; its last line
// names the canonical bytes.
func ExampleOpenMemory() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, connectors.NewStatute("testdata/corpus/records-act.json"), evpack.IngestOptions{}); err != nil {
		log.Fatal(err)
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "How long must a licensed firm retain records of client transactions?",
		AsOf:     asof.MustDate("2020-06-30"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(pack.Text())
	// Output:
	// Question: How long must a licensed firm retain records of client transactions?
	// As of: 2020-06-30
	//
	// [1] records-act (version 2018; https://laws.example.org/records-act/2018; published 2018-03-01T00:00:00Z; retrieved 2026-01-10T09:00:00Z)
	// Article 2 Retention period
	// A licensed firm must retain records of each client transaction for five years from the date of the transaction.
	//
	// [2] records-act (version 2018; https://laws.example.org/records-act/2018; published 2018-03-01T00:00:00Z; retrieved 2026-01-10T09:00:00Z)
	// Article 1 Scope
	// This Act applies to every licensed firm that keeps books and records of client transactions.
	//
	// Trace:
	// - lexical: kept 5 of the chunks eligible as of 2020-06-30 that match
	// - fused 5 (rrf k=60 lexical=1)
	// - pool 5
	// - reranked 5
	// - dropped 0
	// - cited 2
	// hash: blake3:e6e6bb3dab9989483f15db517684b04efd066dcac0fb6b7946a3c07f6c798060
}

// An index on disk outlives the process: Open creates it in an empty
// directory and reopens it later, and the same request gives the same bytes.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "evpack-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	eng, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rep, err := eng.Ingest(ctx, connectors.NewJSONL("testdata/corpus/guidance.jsonl"), evpack.IngestOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("added %d chunks at generation %d; flagged %v\n", rep.Added, rep.Generation, rep.Flagged)
	req := evpack.Request{
		Question: "retention policy for client transaction records",
		AsOf:     asof.MustDate("2025-01-01"),
		Tenant:   "acme",
		K:        3,
	}
	before, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		log.Fatal(err)
	}

	eng, err = evpack.Open(dir, evpack.Options{}) // a restarted service
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	after, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	// acme sees its own policy and the shared guidance notes.
	for _, c := range after.Citations {
		fmt.Printf("[%d] %s\n", c.Index, c.ChunkID)
	}
	fmt.Println("identical after reopening:", bytes.Equal(before.Bytes(), after.Bytes()))
	// Output:
	// added 7 chunks at generation 1; flagged [{blog-retention missing source URL}]
	// [1] acme-policy-1
	// [2] gn-2019-04
	// [3] gn-2022-09
	// identical after reopening: true
}

// Verify replays a saved pack against the index: a pack that still holds
// has no problems; one whose text was edited after it left the engine is
// caught, and the report says where.
func ExampleEngine_Verify() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestCorpus(ctx, eng); err != nil {
		log.Fatal(err)
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "What is the maximum fine for failing to retain records?",
		AsOf:     asof.MustDate("2025-12-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	saved := pack.Bytes() // what a service stores next to the brief

	rep, err := eng.Verify(ctx, saved)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("saved pack holds:", rep.OK(), rep.Hash == pack.Hash())

	forged := bytes.Replace(saved, []byte("50,000 dirhams"), []byte("5,000 dirhams"), 1)
	rep, err = eng.Verify(ctx, forged)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("forged pack holds:", rep.OK())
	for _, p := range rep.Problems {
		fmt.Println("-", p)
	}
	// Output:
	// saved pack holds: true true
	// forged pack holds: false
	// - citation [1] records-act/art-4@2018: pack text differs from the stored text
	// - replay differs: citation [1] records-act/art-4@2018 differs in its fields
}

// A model reranker (an LLM, a hosted reranker, a cross-encoder) is not
// bit-stable, so its pack records every deciding score in a ledger. Replay
// rebuilds the pack from the ledger without calling the model, so a pack
// still verifies when the model is gone; with checkModel it also asks a
// running model whether a fresh run would keep the order.
func ExampleEngine_Replay() {
	ctx := context.Background()
	// A stand-in for a model: it prefers passages that mention "fine".
	model := func(ctx context.Context, question string, texts []string) ([]float64, error) {
		scores := make([]float64, len(texts))
		for i, t := range texts {
			scores[i] = float64(strings.Count(strings.ToLower(t), "fine")) + 1/float64(len(t))
		}
		return scores, nil
	}
	rr, err := rerank.NewExternal("toy-model-v1", model)
	if err != nil {
		log.Fatal(err)
	}
	eng, err := evpack.OpenMemory(evpack.Options{K: 3, Reranker: rr})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestCorpus(ctx, eng); err != nil {
		log.Fatal(err)
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "What is the maximum fine for failing to retain records?",
		AsOf:     asof.MustDate("2026-01-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reranker %s, %d scores in the ledger\n", pack.Fingerprint.Get("reranker"), len(pack.Ledger))
	for _, c := range pack.Citations {
		fmt.Printf("[%d] %s score %d\n", c.Index, c.ChunkID, c.Score)
	}

	rep, err := eng.Replay(ctx, pack.Bytes(), true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replays:", rep.OK(), "model checked:", rep.ModelChecked, "model agrees:", rep.ModelAgrees)

	// The model's service is down: the same name, but every call fails.
	down, err := rerank.NewExternal("toy-model-v1", func(context.Context, string, []string) ([]float64, error) {
		return nil, errors.New("connection refused")
	})
	if err != nil {
		log.Fatal(err)
	}
	view, err := eng.View(evpack.Options{K: 3, Reranker: down})
	if err != nil {
		log.Fatal(err)
	}
	rep, err = view.Replay(ctx, pack.Bytes(), false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replays without the model:", rep.OK())
	// Output:
	// reranker external/toy-model-v1, 9 scores in the ledger
	// [1] records-act/art-4@2025 score 1007634
	// [2] faq-penalty score 1006711
	// [3] records-act/art-0@2018 score 32258
	// replays: true model checked: true model agrees: true
	// replays without the model: true
}

// A cache serves a repeated request without running the pipeline. The key
// (Engine.CacheKey) names the ranking: the canonical request, tenant
// included, every option, and the index state, so an ingest moves every key
// and no tenant can ever be served another's pack.
func ExampleNewMemoryCache() {
	ctx := context.Background()
	cache, err := evpack.NewMemoryCache(1000, 64<<20) // 1,000 packs, 64 MiB
	if err != nil {
		log.Fatal(err)
	}
	eng, err := evpack.OpenMemory(evpack.Options{Cache: cache})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestCorpus(ctx, eng); err != nil {
		log.Fatal(err)
	}
	req := evpack.Request{Question: "retention period", AsOf: asof.MustDate("2026-01-15"), Tenant: "acme"}
	first, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	second, err := eng.Query(ctx, req) // served from the cache
	if err != nil {
		log.Fatal(err)
	}
	entries, size := cache.Len()
	fmt.Println("cached packs:", entries, "same bytes:", bytes.Equal(first.Bytes(), second.Bytes()), "size matches:", size == int64(len(first.Bytes())))

	other := req
	other.Tenant = "globex"
	k1, err := eng.CacheKey(req)
	if err != nil {
		log.Fatal(err)
	}
	k2, err := eng.CacheKey(other)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tenants share a key:", k1 == k2)
	// Output:
	// cached packs: 1 same bytes: true size matches: true
	// tenants share a key: false
}
