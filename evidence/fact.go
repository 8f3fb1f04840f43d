package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evpack/evpack/asof"
)

// FactKind names what a fact says of a committed chunk.
type FactKind string

// The kinds of fact. Each ends the chunk's validity from End on; they differ
// in what an audit reports (Engine.Diff).
const (
	// FactEnded: the chunk's validity ends (an ALFRED vintage's
	// realtime_end, a record's valid_to sent later).
	FactEnded FactKind = "ended"
	// FactSuperseded: another chunk (By) replaces it (an amendment's
	// restated item, the next vintage, the next version of an article).
	FactSuperseded FactKind = "superseded"
	// FactRetracted: the source withdrew it.
	FactRetracted FactKind = "retracted"
)

// Fact is what was learned of a committed chunk after it was committed.
// Chunks are immutable: a validity that ends later, a supersession or a
// retraction is a fact of a later generation (or of the chunk's own batch),
// never an edit of the chunk.
//
// Invariant: a fact only ever narrows eligibility. As of day d at index
// generation G a fact committed at or before G excludes its chunk iff
// Anchor's day <= d and End <= d, i.e. iff d >= Retires().
type Fact struct {
	Kind    FactKind
	ChunkID string
	End     asof.Date // the first day the chunk is no longer valid
	// Anchor is when the end became knowable (UTC, whole seconds): an end
	// published after it took effect excludes the chunk only from then on.
	Anchor time.Time
	By     string // the replacing chunk, for FactSuperseded; "" otherwise
}

// Retires returns the first as-of day on which f excludes its chunk: the
// later of its end and its anchor's day.
func (f Fact) Retires() asof.Date {
	if a := asof.DateOf(f.Anchor); f.End.Before(a) {
		return a
	}
	return f.End
}

// Prepare checks a fact's own fields and normalizes its anchor; whether it
// names a committed chunk, and agrees with it, is for the index to say.
func (f *Fact) Prepare() error {
	fail := func(format string, args ...any) error {
		return &ChunkError{ChunkID: f.ChunkID, Err: fmt.Errorf("%w: "+format, append([]any{ErrBadFact}, args...)...)}
	}
	switch f.Kind {
	case FactEnded, FactRetracted:
		if f.By != "" {
			return fail("a fact of kind %q names no replacing chunk (by %q)", f.Kind, f.By)
		}
	case FactSuperseded:
		if strings.TrimSpace(f.By) == "" {
			return fail("a supersession names the replacing chunk (by)")
		}
	default:
		return fail("unknown kind %q", f.Kind)
	}
	switch {
	case strings.TrimSpace(f.ChunkID) == "":
		return fail("names no chunk")
	case !utf8.ValidString(f.ChunkID) || !utf8.ValidString(f.By):
		return &ChunkError{ChunkID: f.ChunkID, Err: fmt.Errorf("%w: fact chunk or by", ErrNotUTF8)}
	case f.End.IsZero():
		return fail("no end day")
	case f.Anchor.IsZero():
		return fail("no anchor (when the end became knowable)")
	case f.By == f.ChunkID:
		return fail("a chunk cannot supersede itself")
	}
	if err := f.End.Check(); err != nil {
		return fail("end: %w", err)
	}
	if err := asof.CheckInstant(f.Anchor); err != nil {
		return fail("anchor: %w", err)
	}
	f.Anchor = truncate(f.Anchor)
	return nil
}

// Key identifies a fact: two facts with the same key say the same thing.
func (f Fact) Key() string {
	return strconv.Quote(f.ChunkID) + " " + string(f.Kind) + " " + f.End.String() + " " +
		asof.FormatInstant(f.Anchor) + " " + strconv.Quote(f.By)
}

// String describes f for traces and reports: "superseded by X from
// 2020-05-28 (known 2020-05-28T00:00:00Z)".
func (f Fact) String() string {
	s := string(f.Kind)
	if f.By != "" {
		s += " by " + f.By
	}
	return s + " from " + f.End.String() + " (known " + asof.FormatInstant(f.Anchor) + ")"
}

// SameExceptEnd reports whether a and b are the same evidence (SameEvidence)
// but for the end of their validity: a source that now says when a stored
// chunk stopped being valid.
func SameExceptEnd(a, b *Chunk) bool {
	ca, cb := *a, *b
	ca.Valid.To, cb.Valid.To = asof.Date{}, asof.Date{}
	return SameEvidence(&ca, &cb)
}
