// Package retrieve holds evpack's recall legs. [Lexical] is BM25 over bleve,
// one bleve index per tenant and span of days ([LexicalOptions],
// parts.go), so that a request reads only what it may see; the dense leg (HNSW and exact scan) joins it behind the same [Eligibility]
// contract.
//
// Entry points: [OpenLexical], [Lexical.Search], [Eligibility] (and, to
// open each partition only when first read, [LexicalOptions].Deferred with
// [Lexical.Catalog] and [Lexical.Adopt], and [LexicalOptions].Warm to open
// a tenant's other partitions once it asked); for the
// dense leg [NewSIF], [NewHTTPEmbedder] (and package bert's ONNX embedder),
// [NewDense] and [Dense.Search] (the exact scan), [NewGraph] and
// [Graph.Search] (HNSW). To plug in a model of your own, implement
// [Embedder] (its documentation says what Analyze's features are for; the
// package example shows a text model's shape).
//
// Invariant: a leg only ever ranks eligible chunks. The as-of, tenant,
// metadata and generation restrictions are clauses of the index query itself,
// conjoined with the text query, so an ineligible chunk can neither appear in
// a result nor push an eligible one out of the top N.
//
// Invariant: how the lexical index is partitioned changes no result: scores
// come from the request scope's statistics ([BM25Stats]), and a partition is
// left unread only when its summary proves it holds no eligible chunk.
//
// Invariant: results are totally ordered: by score (quantized, see
// [ScoreQuantum]) descending, then chunk ID ascending.
package retrieve
