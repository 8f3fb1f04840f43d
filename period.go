package evpack

import (
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/periodleg"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// The year leg is internal/periodleg's; here, the request's period and the
// leg's settings.

// PeriodNone is the Request.Period that turns a question's period off: rank
// as if the question named no period.
const PeriodNone = periodleg.None

// whileCommitted runs read, each read of the lexical index a query on st
// that admits elig makes, under the read lock and only while st is the
// committed state (else errMoved). read searches with elig and st's bounds,
// or, where bleve holds documents st does not know, with what keeps them
// out: a pending commit's by ID or by the pending state's clauses pinned to
// elig's generation (see pendingCommit); an unfinished commit's on a
// read-only index, by pinning to st's generation.
func (e *Engine) whileCommitted(st *state.State, elig retrieve.Eligibility, read func(retrieve.Eligibility, retrieve.Bounds) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.broken != nil:
		return e.broken
	case e.st != st:
		return errMoved
	}
	bounds := st.Bounds
	switch {
	case e.pending != nil && !e.pending.pinned: // the bounds count the commit's chunks, so that clauses keep out those elig does not admit
		elig.Exclude, bounds = state.Admitted(e.pending.added, elig), e.pending.next.Bounds
	case e.pending != nil:
		elig, bounds = e.pending.next.EligibilityAt(elig), e.pending.next.Bounds
	case e.readOnly != nil && (!elig.Pinned || elig.UpTo > st.Gen):
		elig.Pinned, elig.UpTo, elig.FewerAfter = true, st.Gen, true
	}
	return read(elig, bounds)
}

// fingerprintFor is fingerprint with the period entry h calls for.
func (e *Engine) fingerprintFor(h evidence.Header, sc state.Scope, rr rerank.Reranker) evidence.Fingerprint {
	fp := e.fingerprint(sc, rr)
	if s, ok := periodleg.Setting(h, e.periodSettings()); ok {
		fp = evidence.NewFingerprint(append(fp, s)...)
	}
	return fp
}

// periodSettings returns the year leg's settings.
func (e *Engine) periodSettings() periodleg.Settings {
	return periodleg.Settings{List: e.opts.PeriodList, Weight: e.opts.PeriodWeight, Boost: e.opts.PeriodBoost, RRFK: e.opts.RRFK}
}
