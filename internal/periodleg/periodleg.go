// Package periodleg is the year leg of a query (issue 33): a question about
// one company's year ("FY2018 capex for 3M") should prefer that year's
// filing. The period it asks about is parsed (package period) or given
// (Request.Period); with one, the query adds a list of the eligible chunks
// that name the year, in their text or metadata (List: one more clause of
// the eligibility query), and boosts in fusion the fused chunks whose
// metadata declares it (Boost). Without one, nothing of this runs, and a
// pack has the bytes it had before.
//
// Why a package of its own: the leg's settings are part of a pack's
// fingerprint (Setting), so what it does and what it says it did are kept
// side by side.
//
// Entry points: [List], [Boost], [Setting], [Of], [Step].
package periodleg

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/period"
	"github.com/evpack/evpack/retrieve"
)

// The values of evidence.Header.PeriodFrom, and the Request.Period that
// turns a question's period off.
const (
	FromQuestion = "question"
	FromRequest  = "request"
	None         = "none"
)

// Settings are the leg's options: the year list's depth (0: off) and its
// weight in fusion, the boost (percent of a first place; 0: off) and
// fusion's k.
type Settings struct {
	List   int
	Weight float64
	Boost  int
	RRFK   int
}

// Of returns the period h ranks for; the zero period for none.
func Of(h evidence.Header) period.Period {
	p, err := period.ParseCanonical(h.Period)
	if err != nil { // "", "none"
		return period.Period{}
	}
	return p
}

// Step is the trace line that says what period the pack ranks for.
func Step(h evidence.Header) string {
	switch {
	case h.Period == None:
		return "period: none (the request turned the question's off)"
	case h.PeriodFrom == FromRequest:
		return fmt.Sprintf("period: %s (given by the request)", h.Period)
	}
	return fmt.Sprintf("period: %s (parsed from the question)", h.Period)
}

// naming is what a chunk names the year of p with, for the lexical index:
// the analyzed words of period.TextForms, and period.MetaTerms.
func naming(lex *retrieve.Lexical, p period.Period) retrieve.Naming {
	var n retrieve.Naming
	for _, w := range period.TextForms(p.Year) {
		terms, _ := lex.Terms(w)
		for _, t := range terms {
			if !slices.Contains(n.Terms, t) {
				n.Terms = append(n.Terms, t)
			}
		}
	}
	n.Meta, n.MetaPrefixes = period.MetaTerms(p.Year)
	return n
}

// Search runs read, one read of the lexical index, under the guard that
// keeps it on the request's committed state, with the eligibility (the
// chunks the request admits) and the bounds read must search with there.
type Search func(read func(elig retrieve.Eligibility, bounds retrieve.Bounds) error) error

// List runs the year list for p: BM25 for the ranking text over the chunks
// the request admits that name p's year, read s.List deep.
func List(ctx context.Context, lex *retrieve.Lexical, guard Search, text string, p period.Period, stats retrieve.BM25Stats, s Settings) (fuse.List, string, error) {
	var res retrieve.Result
	var asOf asof.Date
	err := guard(func(elig retrieve.Eligibility, bounds retrieve.Bounds) (err error) {
		asOf = elig.AsOf
		res, err = lex.SearchNaming(ctx, text, elig, bounds, s.List, stats, naming(lex, p))
		return err
	})
	if err != nil {
		return fuse.List{}, "", err
	}
	ids := make([]string, len(res.Hits))
	for i, hit := range res.Hits {
		ids[i] = hit.ID
	}
	step := fmt.Sprintf("year list: kept %d of the chunks eligible as of %s that match and name %d (text or metadata), depth %d", len(ids), asOf, p.Year, s.List)
	return fuse.List{Name: "period", Weight: s.Weight, IDs: ids}, step, nil
}

// Boost boosts the fused items whose metadata declares p's year.
func Boost(ctx context.Context, lex *retrieve.Lexical, guard Search, fused []fuse.Item, p period.Period, s Settings) (string, error) {
	ids := make([]string, len(fused))
	for i, f := range fused {
		ids[i] = f.ID
	}
	var named []string
	err := guard(func(elig retrieve.Eligibility, bounds retrieve.Bounds) (err error) {
		named, err = lex.NamedIn(ctx, ids, elig, bounds, naming(lex, p).MetaOnly())
		return err
	})
	if err != nil {
		return "", err
	}
	set := make(map[string]bool, len(named))
	for _, id := range named {
		set[id] = true
	}
	n, err := fuse.Boost(fused, s.RRFK, s.Boost, func(id string) bool { return set[id] })
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("year boost: +%d%% of a first place to %d of %d fused chunks whose metadata declares %d", s.Boost, n, len(fused), p.Year), nil
}

// FromRequestPeriod sets h's period to p, a request's explicit one ("":
// none given; None: turn the question's off), once p is valid.
func FromRequestPeriod(p string, h *evidence.Header) error {
	switch p {
	case "":
		return nil
	case None:
	default:
		if _, err := period.ParseCanonical(p); err != nil {
			return err
		}
	}
	h.Period, h.PeriodFrom = p, FromRequest
	return nil
}

// Asked completes h's period: a request's own stays, when a request can
// give it (a canonical period or None); otherwise the question's, parsed
// now (so that a pack's claim that its question, or its request, named a
// period is checked, never trusted, on replay), unless fromQuestions is
// false (the options ignore questions' periods).
func Asked(h *evidence.Header, fromQuestions bool) {
	if h.PeriodFrom == FromRequest && h.Period != "" && FromRequestPeriod(h.Period, &evidence.Header{}) == nil {
		return
	}
	h.Period, h.PeriodFrom = "", ""
	if !fromQuestions {
		return
	}
	if p, ok := period.Parse(h.Question); ok {
		h.Period, h.PeriodFrom = p.String(), FromQuestion
	}
}

// Setting is the fingerprint's "period" entry of a pack ranked for a
// period: the parser's version and how the year shaped the ranking. A pack
// without a period has no such entry.
func Setting(h evidence.Header, s Settings) (evidence.Setting, bool) {
	if Of(h).IsZero() {
		return evidence.Setting{}, false
	}
	list := "off"
	if s.List > 0 {
		list = "bm25 over eligible chunks naming the year (text or metadata " + fmt.Sprint(period.MetaKeys) + ") depth=" + strconv.Itoa(s.List) +
			" weight=" + strconv.FormatFloat(s.Weight, 'g', -1, 64)
	}
	boost := "off"
	if s.Boost > 0 {
		boost = strconv.Itoa(s.Boost) + "% of a first place to fused chunks whose metadata declares the year"
	}
	return evidence.Setting{Key: "period", Value: period.Version + "; year list: " + list + "; year boost: " + boost}, true
}
