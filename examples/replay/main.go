// Replay: persist an index, save a pack, reopen the index as a later process
// would, and verify that the pack still replays byte for byte.
//
//	go run ./examples/replay                      # from the repository root
//	replay -corpus /path/to/evpack/testdata/corpus # a built binary, from anywhere
//
// replay_test.go beside this file is the golden test a service copies to pin
// the citation indices of its own requests.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func main() {
	corpusDir := flag.String("corpus", filepath.Join("testdata", "corpus"), "the directory holding records-act.json and guidance.jsonl")
	flag.Parse()
	ctx := context.Background()
	sources, err := corpus(*corpusDir)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "evpack-replay-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	eng, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range sources {
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

// corpus returns the connectors over the demo corpus in dir. The files are
// found from the working directory (or -corpus), never from where the binary
// was built, so a binary built elsewhere (or with -trimpath) runs.
func corpus(dir string) ([]connectors.Connector, error) {
	statute, guidance := filepath.Join(dir, "records-act.json"), filepath.Join(dir, "guidance.jsonl")
	for _, f := range []string{statute, guidance} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("corpus: %w (run from the repository root, or pass -corpus DIR)", err)
		}
	}
	return []connectors.Connector{connectors.NewStatute(statute), connectors.NewJSONL(guidance)}, nil
}
