// Package denseleg is the dense leg of a query: the view of a scope's
// vectors a request reads (a corpus-free embedder's stored vectors, or a
// corpus-dependent one's built for the scope at its generation and cached),
// and the search over it (an exact int8 scan, or an HNSW walk when the
// eligible set is large, with the exact scan as its fallback).
//
// Why a package of its own: which vectors a request may see decides whether
// another tenant's ingest can move its pack (the contract's point 6), so
// the rule lives in one place with its cache.
//
// Entry points: [Views] (NewViews, View, Search, Clear), [CheckEmbeds].
//
// Invariant: a view is a function of its scope's chunks at its generation
// alone.
package denseleg
