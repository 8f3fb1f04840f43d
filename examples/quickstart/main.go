// Quickstart: ingest a small versioned statute and some guidance notes, then
// ask the same question as of two dates and watch the answer change.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"runtime"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func main() {
	ctx := context.Background()
	corpus := corpusDir()

	eng, err := evpack.OpenMemory(evpack.Options{K: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	for _, c := range []connectors.Connector{
		connectors.NewStatute(filepath.Join(corpus, "records-act.json")),
		connectors.NewJSONL(filepath.Join(corpus, "guidance.jsonl")),
	} {
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

// corpusDir finds testdata/corpus next to this file, so the example runs
// from any working directory inside the module.
func corpusDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "corpus")
}
