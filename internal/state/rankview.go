package state

import (
	"errors"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

// RankView is what the ranking stage (internal/pipeline) reads of a scope:
// its State interface, answered from the scope at its generation.
type RankView struct{ Scope Scope }

// Stats returns the scope, the statistics a reranker reads.
func (s RankView) Stats() rerank.Stats { return s.Scope }

// Place returns chunk id's place in its document.
func (s RankView) Place(id string) (rerank.DocumentPlace, bool) { return s.Scope.Place(id) }

// Terms returns the terms numbered nums.
func (s RankView) Terms(nums []uint32) []string { return s.Scope.State.TermsOf(nums) }

// Text returns chunk id's stored text as of the scope's generation.
func (s RankView) Text(id string) (string, bool, error) {
	c, _, err := s.Scope.State.ChunkUpTo(id, s.Scope.Gen)
	if err != nil && !errors.Is(err, ErrMismatch) {
		return "", false, err
	}
	if c == nil {
		return "", false, nil
	}
	return c.Text, true, nil // as stored, even when it fails its hash: the gate drops it
}

// Entry returns what the citation gate needs to know of chunk id.
func (s RankView) Entry(id string, d asof.Date, endsKnownLater bool) (evidence.Entry, bool, error) {
	return s.Scope.EntryFor(id, d, endsKnownLater)
}

// Err returns the error a checkpoint read met after it returned.
func (s RankView) Err() error {
	if rows := s.Scope.State.Rows; rows != nil {
		return rows.Err() // a block of the checkpoint failed its check, or a commit closed it: no answer from it
	}
	return nil
}
