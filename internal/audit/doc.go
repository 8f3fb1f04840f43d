// Package audit answers what an auditor asks of a stored pack and of an
// index: does the pack still hold (Verify: every citation against the
// stored chunk, the fingerprint, a byte-for-byte replay), what became of
// each citation since and why (Compare, the Diff report), and is the index
// itself whole (CheckState: every stored file, every corpus figure against
// a recount, every lexical document).
//
// Why a package of its own: these reports are read by people who sign
// briefs; what they say is decided here, from the state (internal/state)
// and a Ranker the engine supplies, and tested without the engine's
// locking.
//
// Entry points: [Verify], [Compare], [CheckState], and the report types
// the root package names (DiffReport, VerifyReport, CheckReport, ...).
package audit
