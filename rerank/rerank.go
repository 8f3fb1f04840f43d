package rerank

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/terms"
)

// Candidate is one chunk in the pool handed to a reranker.
type Candidate struct {
	ID   string
	Text string
	Rank int // 1-based rank in the fused list
	// Terms, when not nil, must equal Terms(Text): the engine computes them
	// once per chunk at ingest so that queries do not stem the pool again.
	Terms []string
	// Doc, when not nil, must be what the Stats the candidate is reranked
	// with returns for its ID (TermNumbers.DocumentNumbers, or
	// Documents.Document with Nums nil): the engine hands it over with
	// the pool so that a reranker reading document context does not look
	// the chunk up again. A candidate handed with its Doc is analysed from
	// the document's own terms at Pos (the same as Terms, by the two rules
	// above).
	Doc *DocumentPlace
}

// DocumentPlace is a chunk's document: its chunks' IDs in document order,
// their Terms, the terms' numbers (TermNumbers; nil when not known) and the
// chunk's position among them. Terms may be nil when Nums is not (the
// engine holds its chunks' terms as numbers alone). The slices must not be
// changed, nor read once the Rerank call that was handed them returns (the
// engine's Nums point into its mapped checkpoint, which it unmaps once no
// request reads it): a reranker that keeps them copies them.
//
// The slices may instead be a window of the document, when Len is not
// zero: they then hold the chunks at positions Start to Start+len(IDs)-1
// of a document of Len chunks whose first chunk's ID is First, and Pos is
// the chunk's position in the whole document. A window holds at least the
// WindowBefore chunks before Pos and the WindowAfter after it (as many as
// the document has), all this package's rerankers read; one that does not
// is no document to them (its features are zero). The engine hands
// windows: the rest of a long document is never read from its checkpoint.
type DocumentPlace struct {
	IDs   []string
	Terms [][]string
	Nums  [][]uint32
	Pos   int
	Start int
	Len   int
	First string
}

// Terms returns the stemmed non-stop terms of text in order, as the
// Arithmetic reranker sees them.
func Terms(text string) []string { return terms.Split(text) }

// Stats gives corpus statistics for weighting terms. Terms are those of
// package internal/terms.
type Stats interface {
	DocCount() int
	DocFreq(term string) int
}

// ErrNotPermutation reports a reranker whose output is not a permutation of
// the candidates it was given: an ID it was not handed, one it repeated, or
// one it left out. The engine refuses such an output; the wrapping error names
// the reranker and the chunk ID.
var ErrNotPermutation = errors.New("rerank: output is not a permutation of the candidates")

// CheckPermutation returns nil when out holds every candidate's ID exactly
// once and nothing else; otherwise an error wrapping ErrNotPermutation that
// names the first offending chunk ID (in output order, then candidate order).
func CheckPermutation(cands []Candidate, out []evidence.Scored) error {
	given := make(map[string]bool, len(cands))
	for _, c := range cands {
		given[c.ID] = true
	}
	returned := make(map[string]bool, len(out))
	for _, s := range out {
		switch {
		case !given[s.ChunkID]:
			return fmt.Errorf("%w: returned %q, which was not a candidate", ErrNotPermutation, s.ChunkID)
		case returned[s.ChunkID]:
			return fmt.Errorf("%w: returned %q twice", ErrNotPermutation, s.ChunkID)
		}
		returned[s.ChunkID] = true
	}
	for _, c := range cands {
		if !returned[c.ID] {
			return fmt.Errorf("%w: left out candidate %q", ErrNotPermutation, c.ID)
		}
	}
	return nil
}

// ErrNotOrdered reports a reranker whose output is not best first, ties by
// chunk ID, as Reranker asks: a pack cites in that order, and a model's
// ledger replays it sorted, so the engine refuses such an output rather than
// serve a pack that would never verify.
var ErrNotOrdered = errors.New("rerank: output is not ordered best first, ties by chunk ID")

// CheckOrder returns nil when out is ordered by score descending, then chunk
// ID ascending; otherwise an error wrapping ErrNotOrdered naming the first
// pair out of order.
func CheckOrder(out []evidence.Scored) error {
	for i := 1; i < len(out); i++ {
		a, b := out[i-1], out[i]
		if a.Score < b.Score || a.Score == b.Score && a.ChunkID >= b.ChunkID {
			return fmt.Errorf("%w: %q (%d) before %q (%d) at %d", ErrNotOrdered, a.ChunkID, a.Score, b.ChunkID, b.Score, i)
		}
	}
	return nil
}

// Reranker orders a candidate pool for a question.
type Reranker interface {
	// Name identifies the reranker and every setting that changes its order;
	// it is written into each pack's fingerprint.
	Name() string
	// Rerank returns all candidates scored (evidence.ScoreScale fixed point),
	// best first, ties by chunk ID (CheckOrder): a permutation of cands
	// (CheckPermutation, against the pool as the engine handed it, whatever
	// Rerank writes to cands). The engine checks both.
	Rerank(ctx context.Context, question string, cands []Candidate, stats Stats) ([]evidence.Scored, error)
}

// sortScored orders by score descending, then chunk ID ascending.
func sortScored(s []evidence.Scored) {
	slices.SortFunc(s, func(a, b evidence.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ChunkID, b.ChunkID)
	})
}

// None keeps the fused order; its score is the fused rank's reciprocal
// prior. It is the baseline the other rerankers are measured against.
type None struct{}

// Name implements Reranker.
func (None) Name() string { return "none" }

// Rerank implements Reranker.
func (None) Rerank(ctx context.Context, _ string, cands []Candidate, _ Stats) ([]evidence.Scored, error) {
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: prior(c.Rank)}
	}
	sortScored(out)
	return out, ctx.Err()
}

// prior maps a 1-based fused rank to 60/(60+rank) in fixed point: the RRF
// shape, so that rank 1 is worth little more than rank 2. A rank below 1,
// which no engine passes, counts as 1 (at -60 it divided by zero).
func prior(rank int) int64 {
	return int64(evidence.ScoreScale) * 60 / int64(60+max(rank, 1))
}
