// Package evidence defines what a reasoner is allowed to read: the [Chunk]
// as stored at ingest, the [Pack] of numbered [Citation]s handed to it, the
// [Trace] that says how the pack came to be, and the one canonical byte form
// ([Pack.Bytes]) whose BLAKE3 hash ([Pack.Hash]) names the pack.
//
// Entry points: [Assemble] (the citation gate), [Pack.Bytes], [Pack.Text],
// [Parse], [ContentHash], [Normalize].
//
// Invariant: Parse(p.Bytes()).Bytes() == p.Bytes() for every pack p.
// Invariant: the canonical form holds no floating-point values; every score is
// a fixed-point integer, so no CPU can render it differently.
// Invariant: Assemble never emits a citation whose chunk lacks a source URL, a
// connector or a retrieval time, or whose text no longer hashes to its stored
// content hash; each such chunk is named in Trace.Dropped with its reason.
package evidence
