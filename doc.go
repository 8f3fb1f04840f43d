// Package evpack answers a question as of a date with an evidence pack: the
// passages that answer it, each with a stable citation number, rendered in one
// canonical byte form and named by its BLAKE3 hash.
//
// Its users sign what is written from those packs, so the engine keeps five
// promises: the same request gives the same bytes on every replay and every
// machine; a pack as of a date never cites what appeared after it; a chunk
// nobody can check never reaches the reasoner; one tenant's evidence never
// appears in another's pack; and nothing committed is lost or changed
// unseen. docs/design.md states the full contract, says where the code
// stands against it, and describes the stored formats and the recovery
// rules.
//
// Entry points: [Open] (or [OpenExisting], and [OpenMemory]) makes an
// [Engine]; [Engine.Ingest] adds a connector's chunks (connectors.Records
// for chunks already in memory) with [IngestOptions]; [Engine.Query] answers
// a [Request]; [Engine.Verify] replays a pack and says whether it still
// holds; [Engine.Replay] does so for a pack a model reranked, from its
// score ledger, without the model; [Engine.Check] and [Engine.CheckIndex]
// read the index back and test its invariants; [Engine.View] queries the
// same index with other query options; [Engine.Preload] reads the files
// queries read into the page cache, for a fresh machine's first requests;
// [NewMemoryCache] (or any [Cache])
// serves repeated requests; [Engine.History], [Engine.Diff] and
// [Engine.Purge] serve a living corpus. Every sentinel error a caller needs
// is reachable from this package (errors.go, errors_reexport.go). Package evpacktest pins packs in golden files
// from a user's tests; examples/service serves packs over HTTP.
//
// The pipeline: eligibility (as-of, tenant, filters) inside the index query →
// lexical BM25 and, with an embedder, dense legs → Reciprocal Rank Fusion →
// a pool reranked by the bit-stable learned reranker (integer trees; the
// arithmetic reranker is its fallback, and a model's scores go to the pack's
// ledger) → the citation gate → the canonical pack. The index directory (its lock, sealed manifest and batch
// files, and crash recovery) is package internal/storage's; the engine
// only wires the stages together.
//
// Concurrency: an Engine serves concurrent queries while one ingest runs.
// Each query reads one committed state, which no commit changes, and holds
// the engine's lock only while bleve searches; no model call or cache call
// runs under it.
package evpack
