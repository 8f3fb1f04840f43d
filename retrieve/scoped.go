package retrieve

import (
	"context"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// scopedMatch is a match query whose term statistics are the caller's. bleve
// takes a term's document frequency from the whole index (the term reader's
// Count), so another tenant's chunks, or chunks committed after the state a
// request reads, would move every idf. evpack keeps document frequencies per
// tenant and generation and hands bleve the ones of the request's scope by
// wrapping the index reader its term searchers read, much as Lucene's
// distributed search passes aggregated term statistics to each shard.
type scopedMatch struct {
	*query.MatchQuery
	df map[string]uint64
}

// Searcher implements query.Query.
func (q *scopedMatch) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, o search.SearcherOptions) (search.Searcher, error) {
	return q.MatchQuery.Searcher(ctx, &dfReader{IndexReader: i, df: q.df}, m, o)
}

// dfReader answers the text field's term readers with the scope's document
// frequencies; everything else is the index's.
type dfReader struct {
	index.IndexReader
	df map[string]uint64
}

func (r *dfReader) TermFieldReader(ctx context.Context, term []byte, field string, freq, norm, vectors bool) (index.TermFieldReader, error) {
	tfr, err := r.IndexReader.TermFieldReader(ctx, term, field, freq, norm, vectors)
	if err != nil || field != fieldText {
		return tfr, err
	}
	return &dfTermReader{TermFieldReader: tfr, df: r.df[string(term)]}, nil
}

// dfTermReader is a term reader whose Count, the document frequency BM25's
// idf is computed from, is the scope's.
type dfTermReader struct {
	index.TermFieldReader
	df uint64
}

func (r *dfTermReader) Count() uint64 { return r.df }
