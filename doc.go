// Package evpack answers a question as of a date with an evidence pack: the
// passages that answer it, each with a stable citation number, rendered in one
// canonical byte form and named by its BLAKE3 hash.
//
// Its users sign what is written from those packs, so the engine keeps four
// promises: the same request gives the same bytes on every replay and every
// machine; a pack as of a date never cites what appeared after it; a chunk
// nobody can check never reaches the reasoner; and one tenant's evidence
// never appears in another's pack.
//
// Entry points: [Open] and [OpenMemory] make an [Engine]; [Engine.Ingest]
// adds a connector's chunks; [Engine.Query] answers a [Request]; [Verify]
// replays a pack and says whether it still holds; [Engine.Check] tests the
// index's invariants.
//
// The pipeline (see DESIGN.md): eligibility (as-of, tenant, filters) inside
// the index query → lexical BM25 (and later dense) legs → Reciprocal Rank
// Fusion → a pool reranked by the bit-stable arithmetic reranker → the
// citation gate → the canonical pack.
package evpack
