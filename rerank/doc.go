// Package rerank reorders a fused candidate pool before the citation gate.
//
// The default, [Arithmetic], scores query-term coverage, term density, phrase
// proximity and exact-phrase presence with integer arithmetic only, so its
// order is the same on every CPU and every replay. Model rerankers (a
// cross-encoder) plug in behind the same [Reranker] interface.
//
// Entry points: [Reranker], [NewArithmetic], [Candidate].
//
// Contract for every Reranker: Rerank is deterministic and pure for a given
// identity (Name), returns every candidate exactly once, and orders by score
// descending with ties broken by chunk ID ascending.
package rerank
