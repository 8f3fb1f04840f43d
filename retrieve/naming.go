package retrieve

import (
	"context"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Naming is what a chunk must name to be read by a naming search: one of
// Terms among its analyzed text terms, one of Meta among its metadata
// ("key=value", as filters name them), or a metadata entry that starts with
// one of MetaPrefixes. The year leg names an asked-about year this way
// (period.TextForms analyzed, period.MetaTerms). A Naming with nothing in it
// names nothing: every search restricted by it is empty.
type Naming struct {
	Terms        []string
	Meta         []string
	MetaPrefixes []string
}

// IsZero reports whether n names nothing.
func (n Naming) IsZero() bool {
	return len(n.Terms) == 0 && len(n.Meta) == 0 && len(n.MetaPrefixes) == 0
}

// MetaOnly returns n without its text terms.
func (n Naming) MetaOnly() Naming { return Naming{Meta: n.Meta, MetaPrefixes: n.MetaPrefixes} }

// query is n as one boost-0 clause: a disjunction of its terms and prefixes.
func (n Naming) query() query.Query {
	var qs []query.Query
	for _, t := range n.Terms {
		q := bleve.NewTermQuery(t)
		q.SetField(fieldText)
		qs = append(qs, q)
	}
	for _, t := range n.Meta {
		q := bleve.NewTermQuery(t)
		q.SetField(fieldMeta)
		qs = append(qs, q)
	}
	for _, p := range n.MetaPrefixes {
		q := bleve.NewPrefixQuery(p)
		q.SetField(fieldMeta)
		qs = append(qs, q)
	}
	if len(qs) == 0 { // names nothing: a disjunction of no clause matches nothing
		return bleve.NewDisjunctionQuery()
	}
	for _, q := range qs {
		q.(query.BoostableQuery).SetBoost(0)
	}
	d := bleve.NewDisjunctionQuery(qs...)
	d.SetBoost(0)
	return d
}

// SearchNaming is Search over the chunks elig admits that also name what n
// names: the restriction is one more clause of the index query (Eligibility
// compiled with it), never a filter over a ranked list, so a chunk that does
// not name it can neither appear nor push one that does out of the n best.
// Scores are Search's: the clause adds nothing to them.
func (l *Lexical) SearchNaming(ctx context.Context, text string, elig Eligibility, b Bounds, depth int, stats BM25Stats, n Naming) (Result, error) {
	elig.naming = &n
	return l.Search(ctx, text, elig, b, depth, stats)
}

// NamedIn returns, sorted, those of ids that elig admits and that name what
// n names, by one index query (the IDs, elig's clauses and n's clause). The
// year leg's boost reads which fused candidates declare the asked year with
// it, without reading their chunks.
func (l *Lexical) NamedIn(ctx context.Context, ids []string, elig Eligibility, b Bounds, n Naming) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := l.usable(); err != nil {
		return nil, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	parts, err := l.partsFor(elig, b)
	if err != nil {
		return nil, err
	}
	elig.naming = &n
	var out []string
	for _, sp := range parts {
		got, err := eligibleIn(ctx, sp.p.idx, elig.restrict(bleve.NewDocIDQuery(slices.Clone(ids)), sp.bounds))
		if err != nil {
			return nil, err // ErrLexical already, or the context's error
		}
		out = append(out, got...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
