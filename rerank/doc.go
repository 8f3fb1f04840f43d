// Package rerank reorders a fused candidate pool before the citation gate.
//
// The engine's default is [Learned] with [DefaultModel]; [Arithmetic]
// ([DefaultArithmetic], one option away) scores query-term coverage, term
// density, phrase proximity and exact-phrase presence with integer
// arithmetic only. Both give the same order on every CPU and every replay.
// Model rerankers (a cross-encoder) plug in behind the same [Reranker]
// interface.
//
// [Learned] reranks with a [Model]: gradient-boosted regression trees with
// integer thresholds and integer leaves over 24 integer features of each
// candidate and its context ([FeatureNames]: the arithmetic features, BM25,
// exact runs, the BM25 of its neighbours in its document, its document's
// share and rank in the pool, its position, its heading path), read through
// [Documents] (and [TermNumbers], to match terms by number), which the
// engine's Stats implements. Models are sealed,
// versioned files (LoadModel, Model.Save); [DefaultModel] is embedded,
// trained on ObliQA dev; [Train] is the deterministic LambdaMART trainer;
// [LearnedOrFallback] falls back to the Arithmetic reranker, visibly, when a
// model cannot be loaded. [Smoothed] orders by neighbour-smoothed BM25 alone.
//
// Entry points: [Reranker], [NewLearned], [DefaultModel], [NewArithmetic],
// [DefaultArithmetic], [LoadModel], [Train], [Candidate].
//
// Contract for every Reranker: Rerank is deterministic and pure for a given
// identity (Name), returns every candidate exactly once, and orders by score
// descending with ties broken by chunk ID ascending.
package rerank
