// Replay: persist an index, save a pack, reopen the index as a later process
// would, and verify that the pack still replays byte for byte.
//
//	go run ./examples/replay
//
// replay_test.go beside this file is the golden test a service copies to pin
// the citation indices of its own requests.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "evpack-replay-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	eng, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range corpus() {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	pack, err := eng.Query(ctx, evpack.Request{
		Question: "What is the maximum fine for failing to retain records?",
		AsOf:     asof.MustDate("2025-12-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	saved := pack.Bytes() // what a service stores next to the brief
	fmt.Printf("saved pack %s with %d citations\n", pack.Hash(), len(pack.Citations))
	if err := eng.Close(); err != nil {
		log.Fatal(err)
	}

	eng, err = evpack.Open(dir, evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	rep, err := eng.Verify(ctx, saved)
	if err != nil {
		log.Fatal(err)
	}
	if !rep.OK() {
		log.Fatalf("pack does not replay: %v", rep.Problems)
	}
	fmt.Printf("replayed %s: identical\n", rep.ReplayHash)
}

func corpus() []connectors.Connector {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "corpus")
	return []connectors.Connector{
		connectors.NewStatute(filepath.Join(dir, "records-act.json")),
		connectors.NewJSONL(filepath.Join(dir, "guidance.jsonl")),
	}
}
