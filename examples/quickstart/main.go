// Quickstart: ingest a small versioned statute and some guidance notes, then
// ask the same question as of two dates and watch the answer change.
//
//	go run ./examples/quickstart                      # from the repository root
//	quickstart -corpus /path/to/evpack/testdata/corpus # a built binary, from anywhere
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
	corpus := flag.String("corpus", filepath.Join("testdata", "corpus"), "the directory holding records-act.json and guidance.jsonl")
	flag.Parse()
	ctx := context.Background()
	sources, err := corpusSources(*corpus)
	if err != nil {
		log.Fatal(err)
	}

	eng, err := evpack.OpenMemory(evpack.Options{K: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	for _, c := range sources {
		rep, err := eng.Ingest(ctx, c, evpack.IngestOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("ingested %s: %d chunks, %d flagged\n", c.Name(), rep.Added, len(rep.Flagged))
	}

	for _, day := range []string{"2020-06-30", "2026-01-15"} {
		pack, err := eng.Query(ctx, evpack.Request{
			Question: "How long must a licensed firm retain records of client transactions?",
			AsOf:     asof.MustDate(day),
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\n=== as of %s ===\n%s", day, pack.Text())
	}
}

// corpusSources returns the connectors over the demo corpus in dir. The
// files are found from the working directory (or -corpus), never from where
// the binary was built, so a binary built elsewhere (or with -trimpath) runs.
func corpusSources(dir string) ([]connectors.Connector, error) {
	statute, guidance := filepath.Join(dir, "records-act.json"), filepath.Join(dir, "guidance.jsonl")
	for _, f := range []string{statute, guidance} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("corpus: %w (run from the repository root, or pass -corpus DIR)", err)
		}
	}
	return []connectors.Connector{connectors.NewStatute(statute), connectors.NewJSONL(guidance)}, nil
}
