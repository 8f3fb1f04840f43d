package evidence

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
)

// FormatVersion names the canonical pack form. It changes whenever the bytes
// of an otherwise identical pack would change.
const FormatVersion = "evpack-pack/2"

// FormatV1 is the first pack form (evpack before scoped statistics): the
// same keys as FormatVersion's but no "generation". Parse reads it (Pack.Format
// then says so) and Bytes renders it back byte for byte; its request cannot
// be replayed, for it names no generation and its tenant scope and corpus
// statistics were the whole index's at the time.
const FormatV1 = "evpack-pack/1"

// ScoreScale is the fixed-point scale of Citation.Score: a score of 1_000_000
// means 1.0.
const ScoreScale = 1_000_000

// Filter is one metadata restriction of a request: Meta[Key] == Value.
type Filter struct {
	Key   string
	Value string
}

// FiltersOf returns the restrictions m asks for, sorted by key (nil for
// none), after checking each key and value by the rules metadata is stored
// under (CheckMetaKey, CheckMetaValue): a request can filter on anything
// stored, and its pack always parses back. The error is the first pair's,
// in key order.
func FiltersOf(m map[string]string) ([]Filter, error) {
	var fs []Filter
	for _, k := range SortedKeys(m) {
		err := CheckMetaKey(k)
		if err == nil {
			err = CheckMetaValue(k, m[k])
		}
		if err != nil {
			return nil, err
		}
		fs = append(fs, Filter{Key: k, Value: m[k]})
	}
	return fs, nil
}

// Setting is one named configuration value that shaped a pack.
type Setting struct {
	Key   string
	Value string
}

// Fingerprint lists every setting that shaped a pack, sorted by key.
type Fingerprint []Setting

// Get returns the value of key, or "".
func (f Fingerprint) Get(key string) string {
	for _, s := range f {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// NewFingerprint sorts the settings by key. Keys must be unique.
func NewFingerprint(settings ...Setting) Fingerprint {
	fp := slices.Clone(settings)
	slices.SortFunc(fp, func(a, b Setting) int { return strings.Compare(a.Key, b.Key) })
	return fp
}

// Citation is one numbered piece of evidence in a pack.
type Citation struct {
	Index       int // 1-based, in final rank order
	ChunkID     string
	DocID       string
	Version     string
	Text        string
	SourceURL   string
	Connector   string
	RetrievedAt time.Time
	Anchor      asof.Anchor
	Valid       asof.Interval
	ContentHash string
	Score       int64 // the deciding score, fixed point (ScoreScale)
	Meta        map[string]string
}

// Drop records a chunk the citation gate kept out of a pack.
type Drop struct {
	ChunkID string
	Reason  string
}

// Trace says, in words a person reads, how the pack was made.
type Trace struct {
	Steps   []string // one line per stage, in pipeline order
	Dropped []Drop   // gated chunks, in rank order
}

// Pack is an evidence pack: the request it answers, its citations, its trace
// and the fingerprint of the settings that shaped it.
type Pack struct {
	// Format is the form the pack was read in when older than
	// FormatVersion (FormatV1); "" for FormatVersion, which every new pack
	// has. Bytes renders the pack in its own form.
	Format   string
	Question string
	AsOf     asof.Date
	Tenant   string
	// Generation is the state of the request's scope (its tenant and the
	// shared corpus) the pack was made from: the last commit at or before
	// the index generation asked for that added to the scope. Replaying the
	// request at it gives the same pack after any later commit.
	Generation int64
	Filters    []Filter // sorted by key, then value
	K          int
	// Period is the period the pack was ranked for (period.Period's
	// canonical form, or "none" when the request turned the question's
	// off), and PeriodFrom where it came from: "question" (parsed from it)
	// or "request" (given). Both are "" when no period was used, and then
	// neither is rendered, so a pack without one has the bytes it had before
	// periods existed.
	Period      string
	PeriodFrom  string
	Citations   []Citation
	Trace       Trace
	Fingerprint Fingerprint
	// Ledger records every reranker score that decided the order, when the
	// reranker is not bit-stable (a model): the pack replays from it without
	// the model. Empty for bit-stable rerankers.
	Ledger []Scored
}

// Scored is a ranked candidate handed to Assemble.
type Scored struct {
	ChunkID string
	Score   int64
}

// Header is the request part of a pack.
type Header struct {
	Question   string
	AsOf       asof.Date
	Tenant     string
	Filters    []Filter
	K          int
	Generation int64  // the scope's generation the pack reads (see Pack)
	Period     string // the period ranked for (see Pack)
	PeriodFrom string // "question" or "request" (see Pack)
	// EndsKnownLater replays the valid_to rule of packs made before issue
	// 31: a citation shows every end that facts known at the generation set
	// after the as-of day, even one learned after it. Verify sets it to
	// verify such a pack; a new pack never has it.
	EndsKnownLater bool
}

// Excludes says why a request with header h may not see chunk c, or "" when
// it may. It is the one definition of eligibility: the retrieval legs compile
// the same predicate into their index queries (retrieve.Eligibility), and
// Assemble re-checks it whatever it is handed. A chunk is eligible when it is
// in the request's scope (owned by its tenant, or by the shared tenant "";
// a request of "" sees only ""),
// asof.Eligible as of h.AsOf (dated, anchor day on or before the as-of day,
// in force on it), and its metadata matches every filter. The reasons are
// fixed phrases, checked in this order: "outside the request's tenant scope",
// "undated: never eligible", "not yet knowable as of the request", "not in
// force on the as-of day", "filter KEY=VALUE not matched" (the first filter,
// in h.Filters order, that fails).
func (h Header) Excludes(c *Chunk) string {
	switch why, f := h.exclusion(c); why {
	case excludedTenant:
		return "outside the request's tenant scope"
	case excludedUndated:
		return "undated: never eligible"
	case excludedFuture:
		return "not yet knowable as of the request"
	case excludedNotInForce:
		return "not in force on the as-of day"
	case excludedFilter:
		return "filter " + h.Filters[f].Key + "=" + h.Filters[f].Value + " not matched"
	}
	return ""
}

// Admits reports whether a request with header h may see chunk c: Excludes
// is "". It allocates nothing, for scans over every indexed chunk.
func (h Header) Admits(c *Chunk) bool {
	why, _ := h.exclusion(c)
	return why == admitted
}

type exclusion int

const (
	admitted exclusion = iota
	excludedTenant
	excludedUndated
	excludedFuture
	excludedNotInForce
	excludedFilter
)

// exclusion decides eligibility (see Excludes); for excludedFilter it also
// returns the index of the failed filter.
func (h Header) exclusion(c *Chunk) (exclusion, int) {
	if c.Tenant != h.Tenant && c.Tenant != "" {
		return excludedTenant, 0
	}
	if !asof.Eligible(c.Anchor, c.Valid, h.AsOf) {
		switch {
		case c.Anchor.At.IsZero():
			return excludedUndated, 0
		case h.AsOf.IsZero() || h.AsOf.Before(c.Anchor.Day()):
			return excludedFuture, 0
		default:
			return excludedNotInForce, 0
		}
	}
	for i, f := range h.Filters {
		if v, ok := c.Meta[f.Key]; !ok || v != f.Value {
			return excludedFilter, i
		}
	}
	return admitted, 0
}

// Entry is a stored chunk as the citation gate sees it for one request.
type Entry struct {
	// Chunk is the stored chunk; nil when the index holds the chunk but
	// could not read it back as committed (Excluded then says why).
	Chunk *Chunk
	// Excluded says why the index keeps the chunk out of the request
	// although its own fields admit it ("" when nothing does): a fact known
	// at the request's generation retired it on or before the as-of day.
	Excluded string
	// End, when set, is the earliest validity end after the request's as-of
	// day that facts known at its generation set and that was known on that
	// day (the fact's anchor day on or before it): a pack never tells its
	// reader what was learned after its date.
	End asof.Date
	// Verified says the store checked Chunk against its content hash as it
	// read it from storage, for this request: the gate then does not hash
	// it again (Chunk.MissingCitation instead of Chunk.Citable).
	Verified bool
}

// valid is the validity a citation shows: the chunk's own, ended earlier
// when a fact known on the as-of day says so.
func (e Entry) valid() asof.Interval {
	v := e.Chunk.Valid
	if !e.End.IsZero() && (v.To.IsZero() || e.End.Before(v.To)) {
		v.To = e.End
	}
	return v
}

// Assemble is the citation gate. It walks ranked in order, looks each chunk up,
// drops any that is missing from the store, outside the request's eligibility
// (see Header.Excludes) or not citable (see Chunk.Citable), whatever ranked
// it, and numbers the first h.K survivors 1..K. steps are copied into the trace,
// followed by the gate's own lines. The pack shares no map or slice with its
// arguments or the chunks: a caller may edit it freely.
//
// lookup returns what the index holds of a chunk for this request (ok false:
// not in store). An Entry's Excluded reason (a fact retired the chunk)
// drops it; its End, a validity end that later facts set after the as-of
// day, is the citation's valid_to when earlier than the chunk's own.
func Assemble(h Header, ranked []Scored, lookup func(id string) (Entry, bool), steps []string, fp Fingerprint) *Pack {
	p := &Pack{
		Question:    h.Question,
		AsOf:        h.AsOf,
		Tenant:      h.Tenant,
		Generation:  h.Generation,
		Filters:     slices.Clone(h.Filters),
		K:           h.K,
		Period:      h.Period,
		PeriodFrom:  h.PeriodFrom,
		Trace:       Trace{Steps: slices.Clone(steps)},
		Fingerprint: slices.Clone(fp),
	}
	for i, s := range ranked {
		if len(p.Citations) == h.K {
			break
		}
		e, ok := lookup(s.ChunkID)
		c, reason := e.Chunk, "not in store"
		switch {
		case ok && c == nil:
			reason = cmp.Or(e.Excluded, "unreadable")
		case ok:
			if reason = h.Excludes(c); reason == "" {
				switch reason = e.Excluded; {
				case reason != "":
				case e.Verified:
					reason = c.MissingCitation()
				default:
					reason = c.Citable()
				}
			}
		}
		if reason != "" {
			p.Trace.Dropped = append(p.Trace.Dropped, Drop{ChunkID: s.ChunkID, Reason: reason})
			continue
		}
		if p.Citations == nil && h.K > 0 { // room for K at once: appending grew it four times
			p.Citations = make([]Citation, 0, min(h.K, len(ranked)-i))
		}
		p.Citations = append(p.Citations, Citation{
			Index: len(p.Citations) + 1, ChunkID: c.ID, DocID: c.DocID, Version: c.Version,
			Text: c.Text, SourceURL: c.SourceURL, Connector: c.Connector, RetrievedAt: c.RetrievedAt,
			Anchor: c.Anchor, Valid: e.valid(), ContentHash: c.ContentHash, Score: s.Score,
			Meta: maps.Clone(c.Meta), // the pack owns its data: never the store's map
		})
	}
	p.Trace.Steps = append(p.Trace.Steps, dropLine(p.Trace.Dropped), fmt.Sprintf("cited %d", len(p.Citations)))
	return p
}

// dropLine summarizes the drops by reason, reasons in first-seen order.
func dropLine(drops []Drop) string {
	if len(drops) == 0 {
		return "dropped 0"
	}
	var reasons []string
	ids := map[string][]string{}
	for _, d := range drops {
		if _, seen := ids[d.Reason]; !seen {
			reasons = append(reasons, d.Reason)
		}
		ids[d.Reason] = append(ids[d.Reason], d.ChunkID)
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = r + ": " + strings.Join(ids[r], ", ")
	}
	return fmt.Sprintf("dropped %d (%s)", len(drops), strings.Join(parts, "; "))
}

// Hash returns the pack's name: BLAKE3-256 of its canonical bytes. Each
// call renders the pack; a caller that needs both uses Encode.
func (p *Pack) Hash() string { return Sum(p.Bytes()) }

// Encode renders the pack once and returns its canonical bytes and their
// hash ("blake3:<hex>"): what a service stores or sends, and the name it
// sends with it.
func (p *Pack) Encode() (raw []byte, hash string) {
	raw = p.Bytes()
	return raw, Sum(raw)
}

// Text renders the pack for a prompt: the question, the citations marked
// [1]..[K] with their sources, the trace, and a final "hash:" line. It is
// derived from the same pack as Bytes and carries the same hash.
func (p *Pack) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\nAs of: %s\n", p.Question, p.AsOf)
	if p.Tenant != "" {
		fmt.Fprintf(&b, "Tenant: %s\n", p.Tenant)
	}
	for _, f := range p.Filters {
		fmt.Fprintf(&b, "Filter: %s=%s\n", f.Key, f.Value)
	}
	if p.Period != "" {
		fmt.Fprintf(&b, "Period: %s (from the %s)\n", p.Period, p.PeriodFrom)
	}
	for _, c := range p.Citations {
		fmt.Fprintf(&b, "\n[%d] %s (version %s; %s; %s %s; retrieved %s)\n%s\n",
			c.Index, c.DocID, c.Version, c.SourceURL, c.Anchor.Field, asof.FormatInstant(c.Anchor.At),
			asof.FormatInstant(c.RetrievedAt), c.Text)
	}
	b.WriteString("\nTrace:\n")
	for _, s := range p.Trace.Steps {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	fmt.Fprintf(&b, "hash: %s\n", p.Hash())
	return b.String()
}
