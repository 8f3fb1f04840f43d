package state

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// Facts are what the index learns of a chunk after committing it: a
// validity end, a supersession, a retraction (evidence.Fact). Chunks stay
// immutable; a fact is committed with a generation like a chunk, kept in the
// batch file of that generation, and read by every request at or after it.
//
// Eligibility as of day d at generation G: the chunk's own fields admit d,
// and no fact committed at or before G retires it on or before d
// (evidence.Fact.Retires). The lexical index keeps each chunk's retirement
// day at the latest generation as a field (re-indexing the chunk's document
// when a fact arrives), and a request pinned to an earlier generation
// re-admits by ID the few chunks that only later facts retired: the
// predicate stays inside the index query.

// never is the retirement day of a chunk no fact retires.
const never = math.MaxInt64

// factAt is a fact and the generation that committed it.
type factAt struct {
	Gen  int64
	Fact *evidence.Fact
}

// RetiredAt returns the first as-of day on which facts committed by
// generation g exclude chunk id, or never.
func (s *State) RetiredAt(id string, g int64) int64 {
	r := int64(never)
	for _, fa := range s.Facts[id] {
		if fa.Gen <= g {
			r = min(r, fa.Fact.Retires().Days())
		}
	}
	return r
}

// RetiredBy returns the fact committed by generation g that retires chunk
// id earliest, if one retires it on or before day d.
func (s *State) RetiredBy(id string, g int64, d asof.Date) (factAt, bool) {
	var best factAt
	for _, fa := range s.Facts[id] {
		if fa.Gen <= g && fa.Fact.Retires().Days() <= d.Days() && (best.Fact == nil || fa.Fact.Retires().Before(best.Fact.Retires())) {
			best = fa
		}
	}
	return best, best.Fact != nil
}

// knownEnd returns the earliest end after day d that facts committed by
// generation g set for chunk id and that was known on day d (the fact's
// anchor day on or before it), or zero: a pack as of d never tells its
// reader what was learned after its date. (The chunk's own valid_to is part
// of the chunk, and shown as it is.)
//
// With hindsight it follows the rule of packs made before issue 31, which
// Verify replays them under: every end that facts known at g set after d,
// whenever it became known.
func (s *State) knownEnd(id string, g int64, d asof.Date, hindsight bool) asof.Date {
	var end asof.Date
	for _, fa := range s.Facts[id] {
		f := fa.Fact
		if fa.Gen > g || !d.Before(f.End) || !hindsight && d.Before(asof.DateOf(f.Anchor)) {
			continue
		}
		if end.IsZero() || f.End.Before(end) {
			end = f.End
		}
	}
	return end
}

// LexDoc returns chunk id's lexical document at the state's generation.
func (s *State) LexDoc(id string) (retrieve.Doc, error) {
	c, ok := s.Chunks[id]
	gen := s.Committed[id]
	if !ok && s.Rows != nil { // read from its batch file, and checked
		var err error
		if c, ok, err = s.Rows.ReadUpTo(id, s.Gen, true); err != nil {
			return retrieve.Doc{}, err
		}
		gen, _ = s.committedGen(id)
	}
	if !ok {
		return retrieve.Doc{}, fmt.Errorf("%w: chunk %q is not committed", storage.ErrCorrupt, id)
	}
	return s.lexDocOf(c, gen), nil
}

// LexDocsOf returns the lexical documents the commit of next, which is s
// plus the chunks add (analyzed as an) and the facts, writes: its chunks,
// then each stored chunk whose retirement its facts change (a purged one
// has no document: its text must not come back), once, as next knows
// them; and how many of the latter there are.
func (s *State) LexDocsOf(next *State, add []*evidence.Chunk, an []Analyzed, facts []*evidence.Fact) ([]retrieve.Doc, int) {
	docs := make([]retrieve.Doc, 0, len(add)+len(facts))
	for i, ch := range add {
		d, _ := next.LexDoc(ch.ID)
		if a := an[i]; a.Freqs != nil { // bleve need not analyze the text again
			d.Analysis = &retrieve.Analysis{Terms: a.Lex, Freqs: a.Freqs, Tokens: a.Tokens}
		}
		docs = append(docs, d)
	}
	restated := map[string]bool{} // lookups only
	for _, f := range facts {
		if _, gone := s.Purged[f.ChunkID]; gone {
			continue
		}
		if _, stored := s.TenantOf(f.ChunkID); stored && !restated[f.ChunkID] { // a new chunk is indexed above
			restated[f.ChunkID] = true
			d, _ := next.LexDoc(f.ChunkID)
			docs = append(docs, d)
		}
	}
	return docs, len(restated)
}

// WrittenChunks returns the chunks whose lexical documents a commit of add
// and facts onto s writes (LexDocsOf), each as far as the lexical
// partitions need it: its tenant and days (retrieve.Lexical.Ready). A
// stored chunk comes from memory or from its row (chunkOfDays), reading no
// batch file; a fact on a chunk s does not hold adds none.
func (s *State) WrittenChunks(add []*evidence.Chunk, facts []*evidence.Fact) []*evidence.Chunk {
	out := slices.Clip(add)
	for _, f := range facts {
		if c, ok := s.Chunks[f.ChunkID]; ok {
			out = append(out, c)
		} else if s.Rows != nil {
			if t, _, w, ok := s.Rows.find(f.ChunkID); ok {
				out = append(out, chunkOfDays(new(evidence.Chunk), f.ChunkID, t.Tenant(w), w.AnchorDay, w.From, w.To))
			}
		}
	}
	return out
}

// lexDocOf returns the lexical document of chunk c, committed at
// generation gen, at the state's generation.
func (s *State) lexDocOf(c *evidence.Chunk, gen int64) retrieve.Doc {
	id := c.ID
	d := retrieve.Doc{Chunk: c, Gen: gen}
	if r := s.RetiredAt(id, s.Gen); r != never {
		d.Retired = asof.DateFromDays(r)
	}
	for i, fa := range s.Facts[id] { // oldest first
		if i == 0 {
			d.FirstFactGen = fa.Gen
		}
		d.FactGen = max(d.FactGen, fa.Gen)
	}
	return d
}

// Entry is what the citation gate sees of chunk id for a request as of day
// d in scope sc. A stored chunk that reads back as another (errMismatch)
// is there without its Chunk, excluded for a content hash mismatch (as
// Citable says of one edited in memory); a failure to read it at all is
// err, and the request fails rather than cite around a missing file.
func (sc Scope) Entry(id string, d asof.Date) (e evidence.Entry, ok bool, err error) {
	return sc.EntryFor(id, d, false)
}

// EntryFor is entry; with hindsight the citation's end follows the rule of
// packs made before issue 31 (see knownEnd), for Verify to replay them.
func (sc Scope) EntryFor(id string, d asof.Date, hindsight bool) (e evidence.Entry, ok bool, err error) {
	c, held, err := sc.State.ChunkUpTo(id, sc.Gen) // admits and reads in one lookup
	switch {
	case errors.Is(err, ErrMismatch):
		return evidence.Entry{Excluded: "content hash mismatch"}, true, nil
	case err != nil:
		return evidence.Entry{}, false, err
	case !held || c == nil:
		return evidence.Entry{}, false, nil
	}
	e = evidence.Entry{Chunk: c, End: sc.State.knownEnd(id, sc.Gen, d, hindsight), Verified: sc.State.fromRows(id)} // the rows checked what they read
	if fa, ok := sc.State.RetiredBy(id, sc.Gen, d); ok {
		e.Excluded = fmt.Sprintf("%s (fact of generation %d)", fa.Fact, fa.Gen)
	}
	if why := sc.State.purgedWhy(id); why != "" { // at every generation: its text is gone
		e.Excluded = why
	}
	return e, true, nil
}

// readmit lists the chunks of the scope that facts committed after its
// generation retire on or before day d but that its generation still held
// valid, and that already had a fact by then (the others are kept by the
// first-fact clause: see retrieve.Eligibility.Readmit), sorted.
func (sc Scope) readmit(d asof.Date) []string {
	st := sc.State
	i := sort.Search(len(st.FactLog), func(i int) bool { return st.FactLog[i].Gen > sc.Gen })
	var ids []string
	for _, fa := range st.FactLog[i:] {
		id := fa.Fact.ChunkID
		tenant, _ := st.TenantOf(id)
		if fa.Fact.Retires().Days() > d.Days() || !sc.Admits(id) || !slices.Contains(sc.Names, tenant) ||
			st.Facts[id][0].Gen > sc.Gen {
			continue
		}
		if st.RetiredAt(id, sc.Gen) > d.Days() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// NewFacts checks the facts one ingest brings against the committed state
// st and the chunks of the batch, and returns those to commit (a fact
// already committed, or earlier in the batch, is left out and counted in
// unchanged). A fact that names no chunk of either, whose replacing chunk
// is of another tenant, whose end falls on or before its chunk's first
// valid day, or (a new fact on a chunk committed before the batch, and not
// a retraction, which ends no validity) after its chunk's own end, which
// would extend the validity (evidence.ErrBadFact and
// evidence.ErrValidityExtended), is an error naming its record; nothing of
// the batch is then applied.
func (st *State) NewFacts(batch map[string]*evidence.Chunk, facts []*evidence.Fact, where []string) (out []*evidence.Fact, unchanged int, err error) {
	lookup := func(id string) (*evidence.Chunk, bool, error) {
		// In memory, or read from its batch file and checked (a state Open
		// read from a checkpoint: Engine.writableFor).
		if c, ok, err := st.ChunkUpTo(id, st.Gen); err != nil || (ok && c != nil) {
			return c, err == nil, err
		}
		c, ok := batch[id]
		return c, ok, nil
	}
	seen := map[string]bool{}
	for i, f := range facts {
		fail := func(format string, args ...any) error {
			return &evidence.ChunkError{ChunkID: f.ChunkID, Where: where[i], Err: fmt.Errorf("%w: "+format, append([]any{evidence.ErrBadFact}, args...)...)}
		}
		c, ok, err := lookup(f.ChunkID)
		switch {
		case err != nil:
			return nil, 0, err
		case !ok:
			return nil, 0, fail("names no committed chunk")
		case !c.Valid.From.IsZero() && !c.Valid.From.Before(f.End):
			return nil, 0, fail("ends on %s, on or before the chunk's first valid day %s", f.End, c.Valid.From)
		}
		// A fact's tenant is its chunk's: tenants are sealed, so the
		// replacement must be the same tenant's. It may not be fetched yet
		// (a source names it before it arrives, or ingest order splits
		// them): checkArrivals holds it to the rule when it comes.
		by, ok, err := lookup(f.By)
		if err != nil {
			return nil, 0, err
		}
		if ok && by.Tenant != c.Tenant {
			return nil, 0, fail("replacing chunk %q belongs to another tenant (%q; the chunk's is %q)", f.By, by.Tenant, c.Tenant)
		}
		key := f.Key()
		if seen[key] || slices.ContainsFunc(st.Facts[f.ChunkID], func(fa factAt) bool { return fa.Fact.Key() == key }) {
			unchanged++
			continue
		}
		// An end after the committed chunk's own would say it was valid
		// past it (and let a later record "repeat" that end: endFact). In
		// the chunk's own batch the record is the source's newer word (an
		// end said, then moved earlier), so the fact stands there, inert.
		if _, committed := st.committedGen(f.ChunkID); committed && f.Kind != evidence.FactRetracted &&
			!c.Valid.To.IsZero() && c.Valid.To.Before(f.End) {
			return nil, 0, &evidence.ChunkError{ChunkID: f.ChunkID, Where: where[i], Err: fmt.Errorf("%w (%w): ends on %s, after the chunk's own end %s",
				evidence.ErrBadFact, evidence.ErrValidityExtended, f.End, c.Valid.To)}
		}
		seen[key] = true
		out = append(out, f)
	}
	return out, unchanged, nil
}

// CheckArrivals checks the chunks a batch adds (add, read from where)
// against the supersessions committed before they arrived: a chunk that a
// committed fact names as the replacement must belong to that fact's tenant
// (its chunk's), else the batch fails with evidence.ErrBadFact naming the
// chunk's record. Without it another tenant's chunk, arriving under the
// announced ID, would become the replacement a tenant's Diff shows.
func (st *State) CheckArrivals(add []*evidence.Chunk, where []string) error {
	if len(add) == 0 || len(st.FactLog) == 0 {
		return nil
	}
	pos := make(map[string]int, len(add)) // lookups only
	for i, c := range add {
		pos[c.ID] = i
	}
	for _, fa := range st.FactLog { // commit order: the first offending fact is named
		f := fa.Fact
		if f.Kind != evidence.FactSuperseded {
			continue
		}
		i, ok := pos[f.By]
		if !ok {
			continue
		}
		tenant, ok := st.TenantOf(f.ChunkID)
		if !ok || add[i].Tenant == tenant {
			continue
		}
		return &evidence.ChunkError{ChunkID: add[i].ID, Where: where[i], Err: fmt.Errorf(
			"%w: chunk of tenant %q arrives as the replacement that a fact of generation %d names for chunk %q of tenant %q",
			evidence.ErrBadFact, add[i].Tenant, fa.Gen, f.ChunkID, tenant)}
	}
	return nil
}

// MayName reports whether a report of scope sc may show chunk ID id: a
// committed chunk of a tenant of the scope, or an ID not committed at all
// (a replacement the scope's own fact announced). Another tenant's ID never
// leaves its tenant, even through a fact an older index let in.
func (sc Scope) MayName(id string) bool {
	tenant, ok := sc.State.TenantOf(id)
	return !ok || slices.Contains(sc.Names, tenant)
}

// EndFact turns a record that repeats stored chunk prev but for an earlier
// (or newly set) validity end into the fact that says so, anchored at the
// end day (the source could not say it earlier). pending are the facts the
// batch brings so far. It returns nil when the end is already known, and
// ErrValidityExtended when the record would extend or reopen the validity.
//
// The ends a record is compared with are the validity ends said so far: the
// chunk's own and those of the facts that end it as a record's end would
// (endsValidity). An end said before is no news, even when a stricter one
// was said since (a source whose record lines keep the end they had while a
// fact line ends the chunk earlier); a later end never said is an
// extension. A retraction, or an end said after it took effect, ends no
// validity: a record that ends the chunk at or after such a fact's end still
// says something (it retires the chunk from its own end day, which the fact
// may not), and one ingest of that record with the fact would hold both.
func (st *State) EndFact(prev *evidence.Chunk, rec *connectors.Record, pending []*evidence.Fact) (*evidence.Fact, error) {
	var ends []asof.Date
	if !prev.Valid.To.IsZero() {
		ends = append(ends, prev.Valid.To)
	}
	for _, fa := range st.Facts[prev.ID] {
		// A fact ending the chunk after its own end (which newFacts now
		// refuses; an older index may hold one) is not an end said before.
		if endsValidity(fa.Fact) && (prev.Valid.To.IsZero() || !prev.Valid.To.Before(fa.Fact.End)) {
			ends = append(ends, fa.Fact.End)
		}
	}
	for _, f := range pending {
		if f.ChunkID == prev.ID && endsValidity(f) {
			ends = append(ends, f.End)
		}
	}
	to := rec.Chunk.Valid.To
	if slices.Contains(ends, to) {
		return nil, nil
	}
	if len(ends) > 0 {
		end := slices.MinFunc(ends, func(a, b asof.Date) int { return int(a.Days() - b.Days()) })
		if to.IsZero() || end.Before(to) {
			return nil, &evidence.ChunkError{ChunkID: prev.ID, Where: rec.Where,
				Err: fmt.Errorf("%w: the index ends it on %s, the record on %q", evidence.ErrValidityExtended, end, to.String())}
		}
	}
	f := &evidence.Fact{Kind: evidence.FactEnded, ChunkID: prev.ID, End: to, Anchor: to.Start()}
	if rec.By != "" {
		f.Kind, f.By = evidence.FactSuperseded, rec.By
	}
	if err := f.Prepare(); err != nil {
		var ce *evidence.ChunkError
		if errors.As(err, &ce) {
			ce.Where = rec.Where
		}
		return nil, err
	}
	return f, nil
}

// endsValidity reports whether f ends its chunk exactly as a record's valid_to
// would: an end or a supersession that retires the chunk from its end day
// (known by then). A retraction withdraws the chunk rather than ending its
// validity, and an end said after it took effect retires it only from the
// day it was said; neither is a validity a later record could extend.
func endsValidity(f *evidence.Fact) bool {
	return f.Kind != evidence.FactRetracted && f.Retires() == f.End
}

// DocsOfFactsAfter returns the lexical documents of the chunks that facts of
// generations after gen name, each once, in ID order: what those
// generations indexed again (retrieve.Lexical.Adopt).
func (s *State) DocsOfFactsAfter(gen int64) ([]retrieve.Doc, error) {
	ids := map[string]bool{}
	for i := len(s.FactLog) - 1; i >= 0 && s.FactLog[i].Gen > gen; i-- {
		ids[s.FactLog[i].Fact.ChunkID] = true
	}
	docs := make([]retrieve.Doc, 0, len(ids))
	for _, id := range evidence.SortedKeys(ids) {
		d, err := s.LexDoc(id)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// HoldsFactsOf returns an error wrapping storage.ErrCorrupt when a fact
// names a chunk that is neither committed in s nor among add: a log entry
// (which ingest did not check) is held to this much before it is applied.
func (s *State) HoldsFactsOf(gen int64, add []*evidence.Chunk, facts []*evidence.Fact) error {
	if len(facts) == 0 {
		return nil
	}
	inBatch := make(map[string]bool, len(add)) // lookups only
	for _, c := range add {
		inBatch[c.ID] = true
	}
	for _, f := range facts {
		if _, ok := s.TenantOf(f.ChunkID); !ok && !inBatch[f.ChunkID] {
			return fmt.Errorf("%w: generation %d: a fact on chunk %q, which is not committed", storage.ErrCorrupt, gen, f.ChunkID)
		}
	}
	return nil
}
