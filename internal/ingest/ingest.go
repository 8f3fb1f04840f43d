// Package ingest is the first stage of a commit: it validates a batch of
// connector records against the committed state and says what the batch
// adds (new chunks), what it changes (facts, those a record implies among
// them) and what it leaves as it is.
//
// Why a package of its own: what counts as "the same chunk again", "a later
// end of validity" or "a conflicting duplicate" is decided here, once, for
// a writer and for any tool that wants to know what an ingest would do,
// without storage or an index.
//
// Entry point: [Prepare].
//
// Invariant: Prepare changes neither the records nor the state it reads.
package ingest

import (
	"context"
	"errors"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// Flag names a chunk that was ingested but can never be cited, and why.
type Flag struct {
	ChunkID string
	Reason  string
}

// Batch is what one ingest commits, validated: the new chunks (with the
// record each came from, for errors), the facts, how many records changed
// nothing, and the chunks that can never be cited.
type Batch struct {
	Add       []*evidence.Chunk
	AddWhere  []string
	Facts     []*evidence.Fact
	Unchanged int
	Flagged   []Flag
}

// Prepare validates recs against st, the latest committed state (its full
// form: every chunk in memory). holdsFacts says whether the index can
// record facts; progress is called every 1,024 records. A record that is
// invalid, a conflicting duplicate or a fact that cannot apply is an error
// naming its record, and then nothing of the batch is committed.
func Prepare(ctx context.Context, st *state.State, recs []connectors.Record, holdsFacts bool, progress func(done, total int)) (Batch, error) {
	var b Batch
	batch := map[string]*evidence.Chunk{}
	var add []*evidence.Chunk
	var addWhere []string // each added chunk's record, for checkArrivals
	var facts []*evidence.Fact
	var factWhere []string
	for i := range recs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return b, err
			}
			progress(i, len(recs))
		}
		if recs[i].Fact != nil {
			f := *recs[i].Fact // copy: the caller's record stays as given
			if err := f.Prepare(); err != nil {
				var ce *evidence.ChunkError
				if errors.As(err, &ce) && ce.Where == "" {
					ce.Where = recs[i].Where
				}
				return b, err
			}
			facts, factWhere = append(facts, &f), append(factWhere, recs[i].Where)
			continue
		}
		ch := recs[i].Chunk // copy: the caller's record stays as given
		if err := ch.Prepare(); err != nil {
			var ce *evidence.ChunkError
			if errors.As(err, &ce) && ce.Where == "" {
				ce.Where = recs[i].Where
			}
			return b, err
		}
		prev, ok, err := st.Stored(ch.ID)
		if err != nil {
			return b, err
		}
		if !ok {
			prev, ok = batch[ch.ID]
		}
		if ok {
			switch {
			case prev.ContentHash == ch.ContentHash || evidence.SameEvidence(prev, &ch):
				b.Unchanged++
			case evidence.SameExceptEnd(prev, &ch):
				f, err := st.EndFact(prev, &connectors.Record{Chunk: ch, By: recs[i].By, Where: recs[i].Where}, facts)
				if err != nil {
					return b, err
				}
				if f == nil {
					b.Unchanged++
				} else {
					facts, factWhere = append(facts, f), append(factWhere, recs[i].Where)
				}
			default:
				return b, &evidence.ChunkError{ChunkID: ch.ID, Where: recs[i].Where, Err: evidence.ErrDuplicateChunk}
			}
			continue
		}
		cp := ch
		batch[ch.ID] = &cp
		add, addWhere = append(add, &cp), append(addWhere, recs[i].Where)
		if recs[i].By != "" && !cp.Valid.To.IsZero() && holdsFacts {
			// Already ended, by a chunk the source names: the supersession
			// is a fact too, so an index that saw the chunk open first holds
			// the same facts, and Diff can follow the chain. (An index made
			// before facts existed goes on without it: the chunk's own end
			// keeps it out all the same.)
			f := &evidence.Fact{Kind: evidence.FactSuperseded, ChunkID: cp.ID, By: recs[i].By, End: cp.Valid.To, Anchor: cp.Valid.To.Start()}
			if err := f.Prepare(); err != nil {
				return b, &evidence.ChunkError{ChunkID: cp.ID, Where: recs[i].Where, Err: err}
			}
			facts, factWhere = append(facts, f), append(factWhere, recs[i].Where)
		}
		// Citable, but for the hash: Prepare has just computed it from
		// these fields.
		if reason := cp.MissingCitation(); reason != "" {
			b.Flagged = append(b.Flagged, Flag{ChunkID: cp.ID, Reason: reason})
		} else if cp.Anchor.At.IsZero() {
			b.Flagged = append(b.Flagged, Flag{ChunkID: cp.ID, Reason: "undated: never eligible"})
		}
	}
	facts, same, err := st.NewFacts(batch, facts, factWhere)
	if err != nil {
		return b, err
	}
	b.Unchanged += same
	if err := st.CheckArrivals(add, addWhere); err != nil {
		return b, err
	}
	b.Add, b.AddWhere, b.Facts = add, addWhere, facts
	return b, nil
}
