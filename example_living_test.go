package evpack_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// The examples of a living corpus ingest testdata/corpus/history: a
// guidance note fetched in June 2025 (fetch-1.jsonl), fetched again in July
// after it was revised (fetch-2.jsonl: version 1 ends on 1 July, version 2
// replaces it), and a retraction of another note (retract.jsonl).

// phoneQuestion is the question the examples of a living corpus ask.
const phoneQuestion = "How long must recordings of client telephone calls be kept?"

// ingestFiles ingests each JSONL file as its own batch: one generation each.
func ingestFiles(ctx context.Context, eng *evpack.Engine, paths ...string) error {
	for _, p := range paths {
		if _, err := eng.Ingest(ctx, connectors.NewJSONL(p), evpack.IngestOptions{}); err != nil {
			return fmt.Errorf("ingest %s: %w", p, err)
		}
	}
	return nil
}

// printCitations prints a pack's generation and the chunk of each citation.
func printCitations(label string, p *evidence.Pack) {
	fmt.Printf("%s: generation %d", label, p.Generation)
	for _, c := range p.Citations {
		fmt.Printf(" [%d] %s", c.Index, c.ChunkID)
	}
	fmt.Println()
}

// Every ingest (and every purge) commits a generation. History lists them,
// oldest first, with the time each was committed: what Request.Generation
// and Request.KnownAt choose from.
func ExampleEngine_History() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-1.jsonl", "testdata/corpus/history/fetch-2.jsonl"); err != nil {
		log.Fatal(err)
	}
	hist, err := eng.History()
	if err != nil {
		log.Fatal(err)
	}
	for i, c := range hist {
		// Commit times are the wall clock's (UTC, whole seconds), so only
		// their order is printed here.
		inOrder := i == 0 || !c.CommittedAt.Before(hist[i-1].CommittedAt)
		fmt.Printf("generation %d committed in order: %v\n", c.Generation, inOrder)
	}
	// Output:
	// generation 1 committed in order: true
	// generation 2 committed in order: true
}

// A pinned request reads an earlier state of the index: Generation names a
// generation, KnownAt an instant (the last generation committed by then).
// Here the second fetch supersedes version 1 of a guidance note; the same
// question as of the same day cites version 2 now, and version 1 when
// pinned to the first generation, byte for byte the pack made back then.
func ExampleRequest_pinned() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	req := evpack.Request{Question: phoneQuestion, AsOf: asof.MustDate("2025-08-01")}

	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-1.jsonl"); err != nil {
		log.Fatal(err)
	}
	then, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-2.jsonl"); err != nil {
		log.Fatal(err)
	}

	latest, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("latest", latest)

	pinned := req
	pinned.Generation = 1
	old, err := eng.Query(ctx, pinned)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("generation 1", old)
	fmt.Println("same bytes as the pack made then:", string(old.Bytes()) == string(then.Bytes()))

	// KnownAt before the first commit: no state to answer from, an error
	// rather than an empty pack.
	pinned = req
	pinned.KnownAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = eng.Query(ctx, pinned)
	fmt.Println("known at 2000-01-01:", errors.Is(err, evpack.ErrBeforeFirstCommit))

	// KnownAt the latest commit's time: the latest generation.
	hist, err := eng.History()
	if err != nil {
		log.Fatal(err)
	}
	pinned.KnownAt = hist[len(hist)-1].CommittedAt
	now, err := eng.Query(ctx, pinned)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("known at the last commit", now)

	// Both pins at once is a bad request.
	pinned.Generation = 1
	_, err = eng.Query(ctx, pinned)
	fmt.Println("both pins rejected:", errors.Is(err, evpack.ErrBadRequest))
	// Output:
	// latest: generation 2 [1] gn-2025-03-v2 [2] gn-2025-05
	// generation 1: generation 1 [1] gn-2025-03-v1 [2] gn-2025-05
	// same bytes as the pack made then: true
	// known at 2000-01-01: true
	// known at the last commit: generation 2 [1] gn-2025-03-v2 [2] gn-2025-05
	// both pins rejected: true
}

// Diff says what became of a saved pack's evidence since it was made: it
// verifies the pack at its own generation, asks its request again of the
// latest one, and reports each citation's fate and what is cited now that
// was not.
func ExampleEngine_Diff() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-1.jsonl"); err != nil {
		log.Fatal(err)
	}
	pack, err := eng.Query(ctx, evpack.Request{Question: phoneQuestion, AsOf: asof.MustDate("2025-09-15")})
	if err != nil {
		log.Fatal(err)
	}
	saved := pack.Bytes()

	// Later fetches: the note is revised, another one retracted.
	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-2.jsonl", "testdata/corpus/history/retract.jsonl"); err != nil {
		log.Fatal(err)
	}
	rep, err := eng.Diff(ctx, saved)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("generation %d, latest %d, still verifies: %v\n", rep.Generation, rep.LatestGeneration, rep.Verify.OK())
	for _, c := range rep.Citations {
		fmt.Printf("[%d] %s: %s", c.Index, c.ChunkID, c.Status)
		switch c.Status {
		case evpack.DiffEnded, evpack.DiffRetracted, evpack.DiffSuperseded:
			fmt.Printf(" from %s (a fact of generation %d)", c.Fact.End, c.FactGeneration)
		case evpack.DiffMoved:
			fmt.Printf(" to [%d]", c.Now)
		}
		fmt.Println()
	}
	for _, n := range rep.New {
		fmt.Printf("new [%d] %s (generation %d)\n", n.Index, n.ChunkID, n.Committed)
	}
	fmt.Println("unchanged:", rep.Unchanged())
	// Output:
	// generation 1, latest 3, still verifies: true
	// [1] gn-2025-03-v1: ended from 2025-07-01 (a fact of generation 2)
	// [2] gn-2025-05: unchanged
	// [3] gn-2025-06: retracted from 2025-09-01 (a fact of generation 3)
	// new [1] gn-2025-03-v2 (generation 2)
	// unchanged: false
}

// Purge deletes chunks' text for good (an erasure request, a court order)
// and records why as a generation of its own. The chunk is never cited
// again, at any generation, and a saved pack that cites it verifies as
// "purged", never as "differs".
func ExampleEngine_Purge() {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := ingestFiles(ctx, eng, "testdata/corpus/history/fetch-1.jsonl"); err != nil {
		log.Fatal(err)
	}
	req := evpack.Request{Question: phoneQuestion, AsOf: asof.MustDate("2025-08-01")}
	pack, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("before", pack)

	rep, err := eng.Purge(ctx, []string{"gn-2025-03-v1"}, "erasure request ER-17")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("purged %v at generation %d\n", rep.Purged, rep.Generation)

	after, err := eng.Query(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("after", after)
	pinned := req
	pinned.Generation = 1 // the generation the chunk was cited at
	old, err := eng.Query(ctx, pinned)
	if err != nil {
		log.Fatal(err)
	}
	printCitations("pinned to generation 1", old)

	v, err := eng.Verify(ctx, pack.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range v.Purged {
		fmt.Printf("saved pack: citation [%d] %s purged at generation %d: %s\n", p.Index, p.ChunkID, p.Generation, p.Reason)
	}

	_, err = eng.Purge(ctx, []string{"gn-2025-03-v1"}, "again")
	fmt.Println("purging it twice is a bad request:", errors.Is(err, evpack.ErrBadRequest))
	// Output:
	// before: generation 1 [1] gn-2025-03-v1 [2] gn-2025-05
	// purged [gn-2025-03-v1] at generation 2
	// after: generation 2 [1] gn-2025-05 [2] gn-2025-06
	// pinned to generation 1: generation 1 [1] gn-2025-05 [2] gn-2025-06
	// saved pack: citation [1] gn-2025-03-v1 purged at generation 2: erasure request ER-17
	// purging it twice is a bad request: true
}
