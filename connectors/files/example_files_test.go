package files_test

import (
	"context"
	"fmt"
	"log"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors/files"
)

// A directory of documents, each with optional front matter (source_url,
// retrieved_at, anchor, validity, doc_id, tenant, meta.KEY). A document
// without a source URL is ingested but flagged, and never cited.
func ExampleNew() {
	ctx := context.Background()
	src := files.New("../../testdata/files")
	recs, err := src.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		c := r.Chunk
		fmt.Printf("%s (%s) anchor %s kind %q\n", c.ID, r.Where, c.Anchor.Day(), c.Meta["kind"])
	}

	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	rep, err := eng.Ingest(ctx, src, evpack.IngestOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range rep.Flagged {
		fmt.Printf("flagged %s: %s\n", f.ChunkID, f.Reason)
	}
	p, err := eng.Query(ctx, evpack.Request{
		Question: "How long are client transaction records kept?",
		AsOf:     asof.MustDate("2026-01-15"),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range p.Citations {
		fmt.Printf("[%d] %s (doc %s, version %s, %s)\n", c.Index, c.ChunkID, c.DocID, c.Version, c.SourceURL)
	}
	for _, d := range p.Trace.Dropped {
		fmt.Printf("dropped %s: %s\n", d.ChunkID, d.Reason)
	}
	// Output:
	// memos/retention-memo.md#1 (../../testdata/files/memos/retention-memo.md:9: chunk 1) anchor 2025-12-01 kind "memo"
	// notes.html#1 (../../testdata/files/notes.html:4: chunk 1) anchor 2026-01-10 kind ""
	// flagged notes.html#1: missing source URL
	// [1] memos/retention-memo.md#1 (doc retention-memo, version 3, https://intranet.example.org/memos/retention)
	// dropped notes.html#1: missing source URL
}
