package fred_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors/fred"
)

// A FRED series with all its ALFRED vintages: every chunk is anchored at the
// day its value became known (realtime_start), never at the period it
// describes. The March 2025 construction figure was published on 1 May and
// revised on 1 July, so it is not citable as of April, the first print is
// cited as of June, and the revision as of August.
func ExampleNew() {
	ctx := context.Background()
	retrieved := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC) // when the files were fetched
	src := fred.New(retrieved, "../../testdata/fred/TTLCONS")  // one directory per series
	recs, err := src.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Printf("%s valid %s", r.Chunk.ID, r.Chunk.Valid)
		if r.By != "" {
			fmt.Printf(", then %s", r.By) // the next vintage supersedes it
		}
		fmt.Println()
	}

	eng, err := evpack.OpenMemory(evpack.Options{K: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, src, evpack.IngestOptions{}); err != nil {
		log.Fatal(err)
	}
	for _, day := range []string{"2025-04-15", "2025-06-15", "2025-08-01"} {
		p, err := eng.Query(ctx, evpack.Request{
			Question: "total construction spending in March 2025",
			AsOf:     asof.MustDate(day),
			Filters:  map[string]string{"observation_date": "2025-03-01"},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("as of %s: %d citations\n", day, len(p.Citations))
		for _, c := range p.Citations {
			fmt.Printf("[%d] %s\n", c.Index, c.Text)
		}
	}
	// Output:
	// fred/TTLCONS/2025-02-01@2025-04-01 valid [2025-04-01, 2025-05-01), then fred/TTLCONS/2025-02-01@2025-05-01
	// fred/TTLCONS/2025-02-01@2025-05-01 valid [2025-05-01, …)
	// fred/TTLCONS/2025-03-01@2025-05-01 valid [2025-05-01, 2025-07-01), then fred/TTLCONS/2025-03-01@2025-07-01
	// fred/TTLCONS/2025-03-01@2025-07-01 valid [2025-07-01, …)
	// fred/TTLCONS/2025-04-01@2025-08-01 valid [2025-08-01, …)
	// as of 2025-04-15: 0 citations
	// as of 2025-06-15: 1 citations
	// [1] Total Construction Spending: Total Construction in the United States (TTLCONS), observation for 2025-03-01: 2196056 Millions of Dollars. Vintage published 2025-05-01.
	// as of 2025-08-01: 1 citations
	// [1] Total Construction Spending: Total Construction in the United States (TTLCONS), observation for 2025-03-01: 2178935 Millions of Dollars. Vintage published 2025-07-01.
}
