package audit

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// VerifyReport is the outcome of replaying a pack.
type VerifyReport struct {
	Hash       string   // hash of the pack as given
	ReplayHash string   // hash of the pack the index gives now
	Problems   []string // empty iff the pack holds
	// Purged lists the citations whose chunk's text a purge deleted, in
	// citation order: such a pack cannot be replayed, and says so, rather
	// than "differs".
	Purged []PurgedCitation
	// Format is the pack's form (evidence.FormatVersion or an older one).
	Format string
	// Replayed says the pack's request was run again at its generation and
	// compared byte for byte. A pack of a form that names no generation
	// (evidence.FormatV1) cannot be: Holds then lists what still holds of
	// it, and Problems what does not.
	Replayed bool
	// Holds lists, for a pack that could not be replayed or does not
	// replay, each check that passed: its bytes are canonical and hash to
	// Hash, and each citation's text (for an unreplayable form, its fields
	// too) and content hash are the stored chunk's.
	Holds []string
	// EndsKnownLater says the pack replays only under the valid_to rule of
	// packs made before issue 31 (a citation showed an end that a fact set
	// after the as-of day, even one learned after it): it is what that
	// evpack made, and this index still gives it.
	EndsKnownLater bool
}

// PurgedCitation is a citation of a chunk whose text was purged.
type PurgedCitation struct {
	Index      int
	ChunkID    string
	Generation int64 // the purge's
	Reason     string
}

// OK reports whether the pack replays byte-identically and every cited chunk
// still hashes to its stored content hash; for a pack that cannot be
// replayed (Replayed false, see Holds), whether everything that can still
// be checked holds.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// showsEnds reports whether a citation of p shows a validity end.
func ShowsEnds(p *evidence.Pack) bool {
	return slices.ContainsFunc(p.Citations, func(c evidence.Citation) bool { return !c.Valid.To.IsZero() })
}

// verifyUnreplayable checks what still holds of pack p, which names no
// generation to replay at (evidence.FormatV1: its scope and statistics were
// the whole index's when it was made): Parse has checked its bytes are
// canonical, so they hash to rep.Hash; each citation must still be the
// stored chunk (its text, fields and content hash). Each check that passes
// is a line of rep.Holds, each that fails a Problem.
func VerifyUnreplayable(st *state.State, rep *VerifyReport, p *evidence.Pack) *VerifyReport {
	rep.Holds = append(rep.Holds, fmt.Sprintf("the bytes are a canonical %s pack and hash to %s", rep.Format, rep.Hash))
	for _, c := range p.Citations {
		held := fmt.Sprintf("citation [%d] %s: its text and fields are the stored chunk's, which hashes to %s", c.Index, c.ChunkID, c.ContentHash)
		textOnly := c.ContentHash == evidence.Sum([]byte(evidence.Normalize(c.Text)))
		if stored, err := st.ChunkOf(c.ChunkID); textOnly && err == nil && stored != nil && stored.ContentHash != c.ContentHash {
			// The first packs' content hash covered the text alone
			// (before evidence.ChunkHashVersion): compare the text, and
			// check the stored chunk against its own hash.
			c.ContentHash = stored.ContentHash
			held = fmt.Sprintf("citation [%d] %s: its content hash is of its text alone (the first %s packs), that text and the fields are the stored chunk's, which hashes to %s",
				c.Index, c.ChunkID, rep.Format, stored.ContentHash)
		}
		why := CitedTextProblem(st, c)
		if why == "" {
			why = citedFieldsProblem(st, c)
		}
		if why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: %s", c.Index, c.ChunkID, why))
			continue
		}
		rep.Holds = append(rep.Holds, held)
	}
	rep.Holds = append(rep.Holds, fmt.Sprintf("not replayed: %s names no generation, and its tenant scope and corpus statistics were the whole index's when it was made", rep.Format))
	return rep
}

// citedFieldsProblem says how citation c's fields other than its text
// differ from the stored chunk's (which citedTextProblem found), or "".
// The validity end may be earlier than the chunk's own: a fact set it.
func citedFieldsProblem(st *state.State, c evidence.Citation) string {
	stored, err := st.ChunkOf(c.ChunkID)
	if err != nil || stored == nil {
		return "stored chunk cannot be read"
	}
	switch {
	case c.DocID != stored.DocID, c.Version != stored.Version, c.SourceURL != stored.SourceURL, c.Connector != stored.Connector:
		return "its document, version, source or connector differs from the stored chunk's"
	case !c.Anchor.At.Equal(stored.Anchor.At), c.Anchor.Field != stored.Anchor.Field, !c.RetrievedAt.Equal(stored.RetrievedAt):
		return "its anchor or retrieval time differs from the stored chunk's"
	case c.Valid.From != stored.Valid.From, !stored.Valid.To.IsZero() && (c.Valid.To.IsZero() || stored.Valid.To.Before(c.Valid.To)):
		return "its validity differs from the stored chunk's"
	case !maps.Equal(c.Meta, stored.Meta):
		return "its metadata differs from the stored chunk's"
	}
	return ""
}

// citedTextProblem says how the index fails to hold the text citation c
// cites, or "" when it holds it: the chunk is missing, stored under another
// content hash, no longer hashes to its own (edited after ingest), or holds
// other text.
func CitedTextProblem(st *state.State, c evidence.Citation) string {
	stored, err := st.ChunkOf(c.ChunkID)
	switch {
	case errors.Is(err, state.ErrMismatch): // read from its batch file: as an edit held in memory would be
		return "stored chunk no longer hashes to its content hash (edited after ingest)"
	case err != nil:
		return "stored chunk cannot be read: " + err.Error()
	case stored == nil:
		return "chunk not in the index"
	case stored.ContentHash != c.ContentHash:
		return fmt.Sprintf("stored content hash %s differs from the pack's %s", stored.ContentHash, c.ContentHash)
	case stored.ComputeHash() != stored.ContentHash:
		return "stored chunk no longer hashes to its content hash (edited after ingest)"
	case stored.Text != c.Text:
		return "pack text differs from the stored text"
	}
	return ""
}

// ReplayReport is the outcome of Replay.
type ReplayReport struct {
	*VerifyReport
	// ModelChecked is true when the engine's reranker was run again to see
	// whether a fresh model run would keep the order; ModelAgrees says so.
	ModelChecked bool
	ModelAgrees  bool
	ModelOrder   []string // the chunk IDs a fresh run would cite, when checked
}

// firstDifference describes where two packs part, for a person.
func FirstDifference(want, got *evidence.Pack) string {
	for i := 0; i < len(want.Citations) || i < len(got.Citations); i++ {
		switch {
		case i >= len(got.Citations):
			return fmt.Sprintf("citation [%d] %s is missing from the replay", i+1, want.Citations[i].ChunkID)
		case i >= len(want.Citations):
			return fmt.Sprintf("the replay has an extra citation [%d] %s", i+1, got.Citations[i].ChunkID)
		case want.Citations[i].ChunkID != got.Citations[i].ChunkID:
			return fmt.Sprintf("citation [%d] was %s, replay cites %s", i+1, want.Citations[i].ChunkID, got.Citations[i].ChunkID)
		case !bytes.Equal(citationBytes(want, i), citationBytes(got, i)):
			return fmt.Sprintf("citation [%d] %s differs in its fields", i+1, want.Citations[i].ChunkID)
		}
	}
	return "same citations; trace or fingerprint differ"
}

func citationBytes(p *evidence.Pack, i int) []byte {
	one := &evidence.Pack{Citations: p.Citations[i : i+1]}
	return one.Bytes()
}
