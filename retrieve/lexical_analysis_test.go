package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// postings lists every posting of the text field (term, chunk ID, term
// frequency and norm), sorted: bleve numbers a batch's documents in the
// order its analysis workers finish.
func postings(t *testing.T, l *Lexical) []string {
	t.Helper()
	var out []string
	parts, err := l.allParts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		out = append(out, partPostings(t, p)...)
	}
	slices.Sort(out)
	return out
}

func partPostings(t *testing.T, p *part) []string {
	t.Helper()
	ctx := context.Background()
	adv, err := p.idx.Advanced()
	require.NoError(t, err)
	r, err := adv.Reader()
	require.NoError(t, err)
	defer r.Close()
	dict, err := r.FieldDict(fieldText)
	require.NoError(t, err)
	defer dict.Close()
	var out []string
	for {
		e, err := dict.Next()
		require.NoError(t, err)
		if e == nil {
			return out
		}
		tfr, err := r.TermFieldReader(ctx, []byte(e.Term), fieldText, true, true, false)
		require.NoError(t, err)
		for {
			p, err := tfr.Next(nil)
			require.NoError(t, err)
			if p == nil {
				break
			}
			id, err := r.ExternalID(p.ID)
			require.NoError(t, err)
			out = append(out, fmt.Sprintf("%s %s freq=%d norm=%v", e.Term, id, p.Freq, p.Norm))
		}
		require.NoError(t, tfr.Close())
	}
}

// A document indexed with its analysis made beforehand (Doc.Analysis) is
// the document bleve makes by analyzing the text itself: the same terms,
// frequencies and norms in every posting, the same search scores. Texts are
// drawn with repeated words, stop words, stems and non-ASCII (seed printed).
func TestIndexWithAnalysisIsTheSame(t *testing.T) {
	seed := uint64(20261130)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the records record recorded keep kept kept five years Jahre über naïve firm's 10-K a of to retention retained clients client's ÆSIR 2024 §12")
	var docs []Doc
	for i := range 300 {
		n := rng.IntN(40)
		ws := make([]string, n)
		for j := range ws {
			ws[j] = words[rng.IntN(len(words))]
		}
		docs = append(docs, Doc{Chunk: factsChunk(t, fmt.Sprintf("c%03d", i), strings.Join(ws, " ")+"."), Gen: 1})
	}
	ctx := context.Background()
	plain, err := OpenLexical("", LexicalOptions{})
	require.NoError(t, err)
	defer plain.Close()
	pre, err := OpenLexical("", LexicalOptions{})
	require.NoError(t, err)
	defer pre.Close()
	require.NoError(t, plain.Index(ctx, docs))
	with := make([]Doc, len(docs))
	for i, d := range docs {
		a := pre.Analyze(d.Chunk.Text)
		d.Analysis = &a
		with[i] = d
	}
	require.NoError(t, pre.Index(ctx, with))
	want := postings(t, plain)
	require.NotEmpty(t, want)
	require.Equal(t, want, postings(t, pre))

	bounds := NewBounds()
	for _, d := range docs {
		bounds.Add(d.Chunk)
	}
	for _, q := range []string{"records kept five years", "über naïve", "client retention 2024"} {
		a, err := plain.Search(ctx, q, Eligibility{AsOf: docs[0].Chunk.Anchor.Day()}, bounds, 20, BM25Stats{})
		require.NoError(t, err)
		b, err := pre.Search(ctx, q, Eligibility{AsOf: docs[0].Chunk.Anchor.Day()}, bounds, 20, BM25Stats{})
		require.NoError(t, err)
		require.NotEmpty(t, a.Hits, q)
		require.Equal(t, a, b, q)
	}
}

// Merge of an in-memory index returns at once, as its doc says (bleve's
// forced merge of in-memory segments never returns: this test would hang).
func TestMergeInMemoryReturns(t *testing.T) {
	l, err := OpenLexical("", LexicalOptions{})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.Index(context.Background(), []Doc{{Chunk: factsChunk(t, "a", "records kept"), Gen: 1}}))
	require.NoError(t, l.Merge(context.Background()))
}
