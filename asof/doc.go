// Package asof decides which evidence existed on a given day.
//
// A brief written as of 15 January must never cite what appeared on the 20th.
// This package fixes the vocabulary for that promise: a [Date] is a civil day
// in UTC, an [Interval] is a half-open validity window [From, To), and an
// [Anchor] is the instant a connector declares as "when this became knowable"
// (an EDGAR acceptance time, an ALFRED vintage start, a statute's publication
// date), falling back to the retrieval time when a connector declares none.
//
// Entry points: [ParseDate], [ParseInstant], [ResolveAnchor], [Eligible].
//
// Invariant: Eligible(a, iv, d) holds iff a.Day() <= d and iv.Contains(d).
// The retrieval layer compiles exactly this predicate into its index query;
// it is never applied to a ranked list after the fact.
package asof
