package evpack

import (
	"context"
	"fmt"
	"strconv"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/period"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// The year leg (issue 33): a question about one company's year ("FY2018
// capex for 3M") should prefer that year's filing. The period it asks about
// is parsed (package period) or given (Request.Period); with one, the query
// adds a list of the eligible chunks that name the year, in their text or
// metadata (retrieve.SearchNaming: one more clause of the eligibility query),
// and boosts in fusion the fused chunks whose metadata declares it
// (fuse.Boost). Without one, nothing of this runs, and a pack has the bytes
// it had before.

// The values of evidence.Header.PeriodFrom, and the Request.Period that
// turns a question's period off.
const (
	periodFromQuestion = "question"
	periodFromRequest  = "request"
	PeriodNone         = "none" // Request.Period: rank as if the question named no period
)

// requestPeriod validates r's explicit period into h.
func requestPeriod(r Request, h *evidence.Header) error {
	switch r.Period {
	case "":
		return nil
	case PeriodNone:
	default:
		if _, err := period.ParseCanonical(r.Period); err != nil {
			return fmt.Errorf("%w: period: %w", state.ErrBadRequest, err)
		}
	}
	h.Period, h.PeriodFrom = r.Period, periodFromRequest
	return nil
}

// askedPeriod completes h's period: a request's own stays; otherwise the
// question's, parsed now (so a pack's claim that its question named a
// period is checked, never trusted, on replay), unless the options ignore
// questions' periods.
func (e *Engine) askedPeriod(h *evidence.Header) {
	if h.PeriodFrom == periodFromRequest {
		return
	}
	h.Period, h.PeriodFrom = "", ""
	if !e.opts.QuestionPeriods {
		return
	}
	if p, ok := period.Parse(h.Question); ok {
		h.Period, h.PeriodFrom = p.String(), periodFromQuestion
	}
}

// periodOf returns the period h ranks for; the zero period for none.
func periodOf(h evidence.Header) period.Period {
	p, err := period.ParseCanonical(h.Period)
	if err != nil { // "", "none"
		return period.Period{}
	}
	return p
}

// periodNaming is what a chunk names the year of p with, for the lexical
// index: the analyzed words of period.TextForms, and period.MetaTerms.
func (e *Engine) periodNaming(p period.Period) retrieve.Naming {
	var n retrieve.Naming
	for _, w := range period.TextForms(p.Year) {
		terms, _ := e.lex.Terms(w)
		for _, t := range terms {
			if !contains(n.Terms, t) {
				n.Terms = append(n.Terms, t)
			}
		}
	}
	n.Meta, n.MetaPrefixes = period.MetaTerms(p.Year)
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// periodStep is the trace line that says what period the pack ranks for.
func periodStep(h evidence.Header) string {
	switch {
	case h.Period == PeriodNone:
		return "period: none (the request turned the question's off)"
	case h.PeriodFrom == periodFromRequest:
		return fmt.Sprintf("period: %s (given by the request)", h.Period)
	}
	return fmt.Sprintf("period: %s (parsed from the question)", h.Period)
}

// periodList runs the year list for p: BM25 for the ranking text over the
// chunks elig admits that name p's year, read PeriodList deep.
func (e *Engine) periodList(ctx context.Context, sc state.Scope, text string, p period.Period, elig retrieve.Eligibility, stats retrieve.BM25Stats) (fuse.List, string, error) {
	var res retrieve.Result
	err := e.whileCommitted(sc.State, func() (err error) {
		res, err = e.lex.SearchNaming(ctx, text, elig, sc.State.Bounds, e.opts.PeriodList, stats, e.periodNaming(p))
		return err
	})
	if err != nil {
		return fuse.List{}, "", err
	}
	ids := make([]string, len(res.Hits))
	for i, hit := range res.Hits {
		ids[i] = hit.ID
	}
	step := fmt.Sprintf("year list: kept %d of the chunks eligible as of %s that match and name %d (text or metadata), depth %d", len(ids), elig.AsOf, p.Year, e.opts.PeriodList)
	return fuse.List{Name: "period", Weight: e.opts.PeriodWeight, IDs: ids}, step, nil
}

// periodBoost boosts the fused items whose metadata declares p's year.
func (e *Engine) periodBoost(ctx context.Context, sc state.Scope, fused []fuse.Item, p period.Period, elig retrieve.Eligibility) (string, error) {
	ids := make([]string, len(fused))
	for i, f := range fused {
		ids[i] = f.ID
	}
	var named []string
	err := e.whileCommitted(sc.State, func() (err error) {
		named, err = e.lex.NamedIn(ctx, ids, elig, sc.State.Bounds, e.periodNaming(p).MetaOnly())
		return err
	})
	if err != nil {
		return "", err
	}
	set := make(map[string]bool, len(named))
	for _, id := range named {
		set[id] = true
	}
	n, err := fuse.Boost(fused, e.opts.RRFK, e.opts.PeriodBoost, func(id string) bool { return set[id] })
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("year boost: +%d%% of a first place to %d of %d fused chunks whose metadata declares %d", e.opts.PeriodBoost, n, len(fused), p.Year), nil
}

// whileCommitted runs fn, a read of the lexical index, under the read lock
// and only while st is the committed state (else errMoved), as
// searchLexical does.
func (e *Engine) whileCommitted(st *state.State, fn func() error) error {
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
	return fn()
}

// periodSetting is the fingerprint's "period" entry of a pack ranked for a
// period: the parser's version and how the year shaped the ranking. A pack
// without a period has no such entry.
func (e *Engine) periodSetting(h evidence.Header) (evidence.Setting, bool) {
	if periodOf(h).IsZero() {
		return evidence.Setting{}, false
	}
	list := "off"
	if e.opts.PeriodList > 0 {
		list = "bm25 over eligible chunks naming the year (text or metadata " + fmt.Sprint(period.MetaKeys) + ") depth=" + strconv.Itoa(e.opts.PeriodList) +
			" weight=" + strconv.FormatFloat(e.opts.PeriodWeight, 'g', -1, 64)
	}
	boost := "off"
	if e.opts.PeriodBoost > 0 {
		boost = strconv.Itoa(e.opts.PeriodBoost) + "% of a first place to fused chunks whose metadata declares the year"
	}
	return evidence.Setting{Key: "period", Value: period.Version + "; year list: " + list + "; year boost: " + boost}, true
}

// fingerprintFor is fingerprint with the period entry h calls for.
func (e *Engine) fingerprintFor(h evidence.Header, sc state.Scope, rr rerank.Reranker) evidence.Fingerprint {
	fp := e.fingerprint(sc, rr)
	if s, ok := e.periodSetting(h); ok {
		fp = evidence.NewFingerprint(append(fp, s)...)
	}
	return fp
}
