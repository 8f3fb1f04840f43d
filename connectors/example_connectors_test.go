package connectors_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// JSONL reads one chunk (or one fact about a chunk) per line. Fields it
// does not know are an error naming the file and line: a misspelt
// "retreived_at" would otherwise make a chunk silently uncitable.
func ExampleNewJSONL() {
	ctx := context.Background()
	recs, err := connectors.NewJSONL("../testdata/corpus/guidance.jsonl").Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		c := r.Chunk
		fmt.Printf("%s tenant %q anchor %s valid %s\n", c.ID, c.Tenant, c.Anchor.Day(), c.Valid)
	}

	bad := `{"id":"n1","doc_id":"n","text":"Keep records.","source_url":"https://example.org/n","retreived_at":"2026-01-10T09:00:00Z"}`
	_, err = connectors.NewJSONL().ReadFrom(ctx, "notes.jsonl", strings.NewReader(bad))
	fmt.Println(err)
	fmt.Println("a syntax error:", errors.Is(err, connectors.ErrSyntax))
	// Output:
	// gn-2019-04 tenant "" anchor 2019-04-02 valid […, …)
	// gn-2022-09 tenant "" anchor 2022-09-12 valid […, 2026-01-01)
	// gn-2026-01 tenant "" anchor 2026-01-20 valid […, …)
	// blog-retention tenant "" anchor 2023-05-01 valid […, …)
	// acme-policy-1 tenant "acme" anchor 2024-06-01 valid […, …)
	// globex-policy-1 tenant "globex" anchor 2024-07-01 valid […, …)
	// faq-penalty tenant "" anchor 2025-12-01 valid [2026-01-01, …)
	// notes.jsonl:1: connectors: syntax error: json: unknown field "retreived_at"
	// a syntax error: true
}

// Statute reads a law in all its versions: each version's articles become
// chunks anchored at its publication, valid from the day it came into force
// until the next version did, and each names its successor. A question as
// of a date cites the article in force on that date: the 2025 version,
// published in November 2025, only from 1 January 2026.
func ExampleNewStatute() {
	ctx := context.Background()
	src := connectors.NewStatute("../testdata/corpus/records-act.json")
	recs, err := src.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(r.Chunk.ID, "art-2") {
			fmt.Printf("%s valid %s anchor %s by %q\n", r.Chunk.ID, r.Chunk.Valid, r.Chunk.Anchor.Day(), r.By)
		}
	}

	eng, err := evpack.OpenMemory(evpack.Options{K: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, src, evpack.IngestOptions{}); err != nil {
		log.Fatal(err)
	}
	for _, day := range []string{"2019-01-01", "2023-01-01", "2025-12-15", "2026-01-15"} {
		p, err := eng.Query(ctx, evpack.Request{Question: "retention period for client transaction records", AsOf: asof.MustDate(day)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("as of %s: %s\n", day, p.Citations[0].ChunkID)
	}
	// Output:
	// records-act/art-2@2018 valid [2018-07-01, 2021-04-01) anchor 2018-03-01 by "records-act/art-2@2021"
	// records-act/art-2@2021 valid [2021-04-01, 2026-01-01) anchor 2021-02-15 by "records-act/art-2@2025"
	// records-act/art-2@2025 valid [2026-01-01, …) anchor 2025-11-20 by ""
	// as of 2019-01-01: records-act/art-2@2018
	// as of 2023-01-01: records-act/art-2@2021
	// as of 2025-12-15: records-act/art-2@2021
	// as of 2026-01-15: records-act/art-2@2025
}

// Records ingests chunks a program already holds, as any other connector's.
// Each chunk names its own connector and anchor: here the time it was
// fetched dates it (asof.ResolveAnchor with no anchor field).
func ExampleRecords() {
	ctx := context.Background()
	at := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	fetched := asof.ResolveAnchor("", time.Time{}, at)
	recs := connectors.Records{
		{Chunk: evidence.Chunk{ID: "policy-1", DocID: "policy", Text: "Client records are kept for ten years.",
			SourceURL: "https://intranet.example.org/policy", Connector: "intranet", RetrievedAt: at, Anchor: fetched, Tenant: "acme"}},
		{Chunk: evidence.Chunk{ID: "draft-1", DocID: "draft", Text: "Client records are kept for two years.",
			Connector: "intranet", RetrievedAt: at, Anchor: fetched, Tenant: "acme"}}, // no source URL: never cited
	}
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	rep, err := eng.Ingest(ctx, recs, evpack.IngestOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added", rep.Added, "flagged", rep.Flagged)
	p, err := eng.Query(ctx, evpack.Request{Question: "How long are client records kept?", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range p.Citations {
		fmt.Printf("[%d] %s (anchor %s)\n", c.Index, c.Text, c.Anchor.Field)
	}
	// Output:
	// added 2 flagged [{draft-1 missing source URL}]
	// [1] Client records are kept for ten years. (anchor retrieved_at)
}
