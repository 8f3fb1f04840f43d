// Package state is what a query reads of an index besides the lexical index:
// the committed chunks (in memory, or read through a mapped checkpoint's row
// table), their facts and purges, each tenant's corpus figures over
// generations, the reranker's term numbers, document order, and a
// corpus-free embedder's vectors and graph.
//
// Why a package of its own: the state is a deterministic function of the
// log of sealed batches (LoadState builds it from them; Extend and Purge
// make the next generation's from the last), and every answer a pack gives
// about a chunk (eligible as of a day, superseded, purged, in a tenant's
// scope) is decided here, once, for the engine, Verify, Diff and Check.
//
// Entry points: [State] (NewState, LoadState, OpenState; Extend, Purge;
// Scope), [Scope] (one tenant's view at one generation: Eligibility,
// Admits, EntryFor, BM25), [Reads] (the generation a request reads).
//
// Invariant: a State is never changed once an engine holds it. A commit
// builds the next state from a copy and swaps it in, so a query that took a
// state reads it without any lock.
//
// Invariant: a Scope's statistics count only its tenant's chunks and the
// shared corpus, up to its generation: another tenant's ingest cannot move
// its packs.
package state
