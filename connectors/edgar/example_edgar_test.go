package edgar_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors/edgar"
)

// An EDGAR mirror: submissions files and the filings' documents, under
// EDGAR's own paths. Every chunk is anchored at its filing's acceptance
// time. Northwind's 10-K/A of 20 April 2025 restates the cover page and
// Items 7 and 8 of its 10-K, so the same question cites the 10-K as of
// 1 April and the amendment as of 1 May; a filter on the ticker keeps the
// other company out.
func ExampleNew() {
	ctx := context.Background()
	retrieved := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC) // when the mirror was fetched
	src := edgar.New("../../testdata/edgar", retrieved)
	recs, err := src.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d chunks; first %s, anchored at %s\n", len(recs), recs[0].Chunk.ID, recs[0].Chunk.Anchor.At.Format(time.RFC3339))
	for _, r := range recs {
		if r.By != "" { // an item the amendment restates
			fmt.Printf("%s superseded by %s\n", r.Chunk.ID, r.By)
		}
	}

	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, src, evpack.IngestOptions{}); err != nil {
		log.Fatal(err)
	}
	for _, day := range []string{"2025-04-01", "2025-05-01"} {
		p, err := eng.Query(ctx, evpack.Request{
			Question: "What was revenue in fiscal 2024?",
			AsOf:     asof.MustDate(day),
			Filters:  map[string]string{"ticker": "NWRB"},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("as of %s:\n", day)
		for _, c := range p.Citations {
			fmt.Printf("[%d] %s (%s, item %s)\n", c.Index, c.ChunkID, c.Meta["form"], c.Meta["item"])
		}
	}
	// Output:
	// 15 chunks; first edgar/0001234567/0001234567-25-000021/item-cover/1, anchored at 2025-04-20T16:05:44Z
	// edgar/0001234567/0001234567-25-000010/item-cover/1 superseded by edgar/0001234567/0001234567-25-000021/item-cover/1
	// edgar/0001234567/0001234567-25-000010/item-7/1 superseded by edgar/0001234567/0001234567-25-000021/item-7/1
	// edgar/0001234567/0001234567-25-000010/item-8/1 superseded by edgar/0001234567/0001234567-25-000021/item-8/1
	// as of 2025-04-01:
	// [1] edgar/0001234567/0001234567-25-000010/item-7/1 (10-K, item 7)
	// [2] edgar/0001234567/0001234567-25-000010/item-cover/1 (10-K, item cover)
	// as of 2025-05-01:
	// [1] edgar/0001234567/0001234567-25-000021/item-cover/1 (10-K/A, item cover)
	// [2] edgar/0001234567/0001234567-25-000021/item-7/1 (10-K/A, item 7)
}
