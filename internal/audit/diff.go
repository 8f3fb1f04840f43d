package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// What changed since: a pack answers its request at its own generation
// forever (Verify); Diff asks the same request of the latest generation and
// says, citation by citation, what became of the evidence, and which
// evidence the index would cite now that the pack did not.

// DiffStatus says what became of one citation of a pack at the latest
// generation of the index.
type DiffStatus string

// The statuses of a citation, in the order Diff decides them: the text
// first (a corrupted index), then the facts, then the ranking.
const (
	// DiffUnchanged: the latest pack cites the chunk at the same index.
	DiffUnchanged DiffStatus = "unchanged"
	// DiffMoved: the latest pack cites the chunk at another index
	// (CitationDiff.Now).
	DiffMoved DiffStatus = "moved"
	// DiffOutranked: the chunk is still eligible as of the pack's as-of day
	// but the latest pack does not cite it: other evidence ranks above it.
	DiffOutranked DiffStatus = "outranked"
	// DiffSuperseded: a supersession known at the latest generation
	// excludes the chunk as of the pack's as-of day (CitationDiff.Fact,
	// whose By names the replacing chunk; CitationDiff.Replacement the
	// chunk that replaces it now).
	DiffSuperseded DiffStatus = "superseded"
	// DiffEnded: a validity end known at the latest generation excludes the
	// chunk as of the pack's as-of day (CitationDiff.Fact).
	DiffEnded DiffStatus = "ended"
	// DiffRetracted: a retraction known at the latest generation excludes
	// the chunk as of the pack's as-of day (CitationDiff.Fact).
	DiffRetracted DiffStatus = "retracted"
	// DiffTextChanged: the index no longer holds the text the pack cites:
	// the chunk is missing, or its stored text or content hash differs from
	// the citation's (CitationDiff.Detail). Chunks are immutable, so only a
	// corrupted or forged index, or a pack of another index, gets here.
	DiffTextChanged DiffStatus = "text changed"
	// DiffPurged: the chunk's text was deleted from the index (Engine.Purge);
	// CitationDiff.Detail names the purge's generation and reason.
	DiffPurged DiffStatus = "purged"
)

// CitationDiff is what became of one citation of a pack.
type CitationDiff struct {
	Index   int    // the citation's index in the pack (1-based)
	ChunkID string // the chunk it cites
	Status  DiffStatus
	// Now is the chunk's index in the latest pack; 0 when the latest pack
	// does not cite it (every status but DiffUnchanged and DiffMoved).
	Now int
	// Fact is the fact known at the latest generation that excludes the
	// chunk as of the pack's as-of day (a copy: superseded, ended,
	// retracted; nil otherwise): Fact.End is the first day the chunk is no
	// longer valid, Fact.By the replacing chunk of a supersession, and
	// Fact.Retires() the first as-of day the fact excludes it.
	Fact *evidence.Fact
	// FactGeneration is the generation that committed Fact (0 without one).
	FactGeneration int64
	// Chain is, for DiffSuperseded, the supersession chain walked from
	// Fact.By, in order: each link is the chunk that the next-ending
	// supersession known at the latest generation names as the previous
	// link's replacement. It stops at the first link eligible as of the
	// pack's as-of day (Replacement), at a link the index records no
	// replacement for, before a link already walked, or after
	// maxReplacementChain links.
	Chain []string
	// Replacement is, for DiffSuperseded, the chunk that replaces the cited
	// one now: the last link of Chain when it is eligible as of the pack's
	// as-of day at the latest generation; "" when no link is.
	Replacement string
	// ReplacementNow is Replacement's index in the latest pack; 0 when the
	// latest pack does not cite it.
	ReplacementNow int
	// Detail says, for DiffTextChanged, what differs; for DiffPurged,
	// which purge; for a DiffSuperseded whose replacement is another
	// tenant's (Fact.By is then cleared), that it is; "" otherwise.
	Detail string
	// Source is the cited chunk's name in its source's own terms (an
	// EDGAR filing's form and item, a FRED series' observation and
	// vintage, a statute's article and version: SourceName).
	Source string
	// Cause says why the citation changed; nil when it is unchanged.
	Cause *DiffCause
}

// CauseKind names why a citation changed.
type CauseKind string

// The causes of a change, the first that applies in this order.
const (
	// CauseText: the index does not hold the cited text (DiffTextChanged).
	CauseText CauseKind = "text"
	// CausePurge: a purge deleted the cited text (DiffPurged).
	CausePurge CauseKind = "purge"
	// CauseFact: a fact committed after the pack excludes the chunk
	// (DiffSuperseded, DiffEnded, DiffRetracted).
	CauseFact CauseKind = "fact"
	// CauseNewEvidence: chunks committed after the pack rank above the
	// citation now (DiffOutranked, or DiffMoved to a later index).
	CauseNewEvidence CauseKind = "new evidence"
	// CauseLeftAbove: chunks the pack cited above this one are no longer
	// cited (DiffMoved to an earlier index).
	CauseLeftAbove CauseKind = "evidence above it left"
	// CauseStatistics: no new chunk outranks it and none above it left: the
	// same chunks rank differently because commits to the scope (its
	// tenant or the shared corpus) changed the figures BM25 and the
	// reranker read (document counts, term frequencies, lengths).
	CauseStatistics CauseKind = "statistics"
	// CauseRanking: none of the above, and the pack does not verify at its
	// own generation: the engine ranks differently (its configuration).
	CauseRanking CauseKind = "ranking"
)

// DiffCause says why one citation changed, with the commits that did it.
type DiffCause struct {
	Kind CauseKind
	// Chunks names, for CauseNewEvidence, the chunks committed after the
	// pack that the latest pack cites above the citation, and for
	// CauseLeftAbove the chunks cited above it in the pack that are cited
	// no longer; in citation order. Empty for the other kinds.
	Chunks []string
	// Generations are the commits behind the cause, oldest first: the
	// fact's or purge's, those that committed Chunks (CauseNewEvidence)
	// or retired them (CauseLeftAbove, when a fact or purge did), or every
	// commit to the scope after the pack's generation (CauseStatistics).
	Generations []int64
	// Why is the cause in words, with each generation's commit time and
	// the sources' own names.
	Why string
}

// NewCitation is a chunk the latest pack cites that the old pack did not.
type NewCitation struct {
	Index     int    // its index in the latest pack
	ChunkID   string // the chunk
	Committed int64  // the generation that committed it
	// Backfill is true when the chunk was committed after the pack's
	// generation but is anchored on or before its as-of day: evidence the
	// index did not yet hold when the pack was made, although it was
	// knowable on the day. False for a chunk the index held then and
	// ranks into the pack now.
	Backfill bool
	// Source is the chunk's name in its source's own terms (SourceName).
	Source string
	// CommittedAt is the commit time of generation Committed.
	CommittedAt time.Time
}

// DiffReport says what changed since a pack was made: whether the pack
// still replays at its own generation, and how the same request fares at
// the latest generation of its scope.
type DiffReport struct {
	// Verify is the replay of the pack at its own generation (Verify).
	Verify *VerifyReport
	// Generation is the pack's generation; LatestGeneration the latest
	// generation of its scope (its tenant and the shared corpus), at which
	// the request ran again.
	Generation, LatestGeneration int64
	// Compared is false when the pack's generation is not committed here
	// (Verify says so): then the report holds Verify alone.
	Compared bool
	// Committed and LatestCommitted are the commit times of Generation and
	// LatestGeneration (zero when not Compared).
	Committed, LatestCommitted time.Time
	// ScopeCommits lists the generations after Generation, up to
	// LatestGeneration, that changed the pack's scope (added chunks,
	// facts or purges to its tenant or the shared corpus), oldest first.
	ScopeCommits []int64
	// LatestHash is the hash of the pack the request gets at
	// LatestGeneration.
	LatestHash string
	// Citations holds one entry per citation of the pack, in citation
	// order.
	Citations []CitationDiff
	// New holds the chunks the latest pack cites that the pack did not, in
	// the latest pack's citation order.
	New []NewCitation
}

// Unchanged reports whether the pack verifies at its generation, every
// citation is DiffUnchanged and nothing is new: the request cites the same
// evidence at the same indexes today.
func (r *DiffReport) Unchanged() bool {
	if !r.Verify.OK() || !r.Compared || len(r.New) > 0 {
		return false
	}
	for _, c := range r.Citations {
		if c.Status != DiffUnchanged {
			return false
		}
	}
	return true
}

// maxReplacementChain bounds the walk along a supersession chain.
const maxReplacementChain = 64

// Citation decides what became of citation c of a pack with header h,
// in the latest scope sc whose pack cites the chunks of now (chunk ID ->
// index).
func Citation(sc state.Scope, h evidence.Header, c evidence.Citation, now map[string]int) CitationDiff {
	d := CitationDiff{Index: c.Index, ChunkID: c.ChunkID}
	if why := foreignProblem(sc.State, h.Tenant, c); why != "" {
		d.Status, d.Detail = DiffTextChanged, why
		return d
	}
	if pa, ok := sc.State.Purged[c.ChunkID]; ok {
		d.Status, d.Detail = DiffPurged, fmt.Sprintf("purged at generation %d: %s", pa.Gen, pa.Reason)
		return d
	}
	if why := CitedTextProblem(sc.State, c); why != "" {
		d.Status, d.Detail = DiffTextChanged, why
		return d
	}
	if fa, ok := sc.State.RetiredBy(c.ChunkID, sc.Gen, h.AsOf); ok {
		f := *fa.Fact
		d.Fact, d.FactGeneration = &f, fa.Gen
		switch f.Kind {
		case evidence.FactSuperseded:
			d.Status = DiffSuperseded
			if !sc.MayName(f.By) { // an index made before checkArrivals may hold one
				d.Fact.By, d.Detail = "", "the replacing chunk is outside the pack's tenant scope"
				break
			}
			d.Chain, d.Replacement = replacement(sc, h, f.By)
			d.ReplacementNow = now[d.Replacement]
		case evidence.FactRetracted:
			d.Status = DiffRetracted
		default:
			d.Status = DiffEnded
		}
		return d
	}
	switch i, ok := now[c.ChunkID]; {
	case !ok:
		d.Status = DiffOutranked
	case i == c.Index:
		d.Status, d.Now = DiffUnchanged, i
	default:
		d.Status, d.Now = DiffMoved, i
	}
	return d
}

// replacement walks the supersession chain from chunk by and returns the
// links walked and the first that is eligible for h in scope sc, or ""
// when the chain ends, loops or runs past maxReplacementChain links first.
func replacement(sc state.Scope, h evidence.Header, by string) (chain []string, eligible string) {
	seen := map[string]bool{} // lookups only
	for id := by; id != "" && !seen[id] && len(chain) < maxReplacementChain && sc.MayName(id); id = supersededBy(sc, id) {
		seen[id] = true
		chain = append(chain, id)
		if e, ok, _ := sc.Entry(id, h.AsOf); ok && e.Excluded == "" && h.Excludes(e.Chunk) == "" { // Diff's state holds every chunk: no read fails
			return chain, id
		}
	}
	return chain, ""
}

// supersededBy returns the chunk that the earliest-retiring supersession of
// chunk id known at the scope's generation names (ties by the facts'
// keys), or "".
func supersededBy(sc state.Scope, id string) string {
	var best *evidence.Fact
	for _, fa := range sc.State.Facts[id] {
		f := fa.Fact
		if fa.Gen > sc.Gen || f.Kind != evidence.FactSuperseded {
			continue
		}
		if best == nil || f.Retires().Before(best.Retires()) || (f.Retires() == best.Retires() && f.Key() < best.Key()) {
			best = f
		}
	}
	if best == nil {
		return ""
	}
	return best.By
}

// String renders the report for a person: the pack and the generations
// with their commit times, whether it verifies, one line per citation (the
// chunk and its source's name) with, for a changed one, a second line
// saying why, one line per new citation, and a summary that counts the
// changes by cause.
func (r *DiffReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pack %s at generation %d", r.Verify.Hash, r.Generation)
	if r.Compared {
		fmt.Fprintf(&b, " (committed %s); latest generation %d (committed %s)", asof.FormatInstant(r.Committed),
			r.LatestGeneration, asof.FormatInstant(r.LatestCommitted))
	}
	b.WriteString("\n")
	switch {
	case !r.Verify.Replayed && r.Verify.OK(): // a form that names no generation
		for _, h := range r.Verify.Holds {
			fmt.Fprintf(&b, "holds: %s\n", h)
		}
	case r.Verify.OK():
		fmt.Fprintf(&b, "verified: replays byte-identically at generation %d\n", r.Generation)
	default:
		fmt.Fprintf(&b, "NOT VERIFIED at generation %d", r.Generation)
		if r.Verify.ReplayHash != "" {
			fmt.Fprintf(&b, " (replay gives %s)", r.Verify.ReplayHash)
		}
		b.WriteString("\n")
		for _, p := range r.Verify.Problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	if !r.Compared {
		return b.String()
	}
	changed := 0
	for _, c := range r.Citations {
		fmt.Fprintf(&b, "[%d] %s%s: %s\n", c.Index, c.ChunkID, sourceSuffix(c.Source), c.describe())
		if c.Status != DiffUnchanged {
			changed++
		}
		if c.Cause != nil {
			fmt.Fprintf(&b, "    why: %s\n", c.Cause.Why)
		}
	}
	backfill := 0
	for _, n := range r.New {
		fmt.Fprintf(&b, "new [%d] %s%s: committed at generation %d (%s)", n.Index, n.ChunkID, sourceSuffix(n.Source),
			n.Committed, asof.FormatInstant(n.CommittedAt))
		if n.Backfill {
			backfill++
			b.WriteString(", backfill")
		}
		b.WriteString("\n")
	}
	switch {
	case changed == 0 && len(r.New) == 0:
		fmt.Fprintf(&b, "unchanged: all %d citations, nothing new\n", len(r.Citations))
	default:
		fmt.Fprintf(&b, "changed: %d of %d citations%s; %d new (%d backfill)\n", changed, len(r.Citations), r.CauseCounts(), len(r.New), backfill)
	}
	return b.String()
}

// CauseCounts renders how many citations changed by each cause, in the
// order of the CauseKind constants: " (2 by facts, 1 by the scope's
// statistics)"; "" when none changed.
func (r *DiffReport) CauseCounts() string {
	var parts []string
	for _, k := range []struct {
		kind CauseKind
		what string
	}{{CauseText, "text the index does not hold"}, {CausePurge, "purges"}, {CauseFact, "facts"},
		{CauseNewEvidence, "new evidence"}, {CauseLeftAbove, "evidence above it leaving"},
		{CauseStatistics, "the scope's statistics"}, {CauseRanking, "the engine's ranking"}} {
		n := 0
		for _, c := range r.Citations {
			if c.Cause != nil && c.Cause.Kind == k.kind {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d by %s", n, k.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// sourceSuffix renders a source's name after a chunk ID: " (name)", or ""
// without one.
func sourceSuffix(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// describe renders what became of one citation (String's lines).
func (d CitationDiff) describe() string {
	switch d.Status {
	case DiffUnchanged:
		return "unchanged"
	case DiffMoved:
		return fmt.Sprintf("moved to [%d]", d.Now)
	case DiffOutranked:
		return "outranked (still eligible, no longer cited)"
	case DiffTextChanged:
		return "text changed: " + d.Detail
	case DiffPurged:
		return d.Detail
	}
	if d.Fact == nil {
		return string(d.Status)
	}
	s := string(d.Fact.Kind)
	if d.Fact.By != "" {
		s += " by " + d.Fact.By
	}
	s += " from " + d.Fact.End.String()
	if d.Fact.Anchor.After(d.Fact.End.Start()) { // published after it took effect
		s += " (known " + asof.FormatInstant(d.Fact.Anchor) + ")"
	}
	s += fmt.Sprintf(" (fact of generation %d)", d.FactGeneration)
	if d.Status != DiffSuperseded {
		return s
	}
	switch {
	case d.Detail != "":
		return s + "; " + d.Detail
	case d.Replacement == "" && len(d.Chain) > 0:
		return s + "; no replacement is eligible now (the chain ends at " + d.Chain[len(d.Chain)-1] + ")"
	case d.Replacement == "":
		return s + "; no replacement is eligible now"
	case d.ReplacementNow == 0:
		return s + "; now replaced by " + d.Replacement + " (not cited)"
	}
	return s + fmt.Sprintf("; now replaced by %s [%d]", d.Replacement, d.ReplacementNow)
}

// The JSON form of a DiffReport: snake_case keys like a pack's, days as
// YYYY-MM-DD, instants as RFC 3339.
type (
	diffJSON struct {
		Hash             string             `json:"hash"`
		Verified         bool               `json:"verified"`
		ReplayHash       string             `json:"replay_hash,omitempty"`
		Problems         []string           `json:"problems"`
		Generation       int64              `json:"generation"`
		Compared         bool               `json:"compared"`
		LatestGeneration int64              `json:"latest_generation,omitempty"`
		LatestHash       string             `json:"latest_hash,omitempty"`
		Unchanged        bool               `json:"unchanged"`
		Citations        []citationDiffJSON `json:"citations"`
		New              []newCitationJSON  `json:"new"`
		Committed        string             `json:"committed,omitempty"`
		LatestCommitted  string             `json:"latest_committed,omitempty"`
		ScopeCommits     []int64            `json:"scope_commits,omitempty"`
	}
	citationDiffJSON struct {
		Index          int        `json:"index"`
		ChunkID        string     `json:"chunk_id"`
		Status         DiffStatus `json:"status"`
		Now            int        `json:"now,omitempty"`
		Fact           *factJSON  `json:"fact,omitempty"`
		Chain          []string   `json:"chain,omitempty"`
		Replacement    string     `json:"replacement,omitempty"`
		ReplacementNow int        `json:"replacement_now,omitempty"`
		Detail         string     `json:"detail,omitempty"`
		Source         string     `json:"source,omitempty"`
		Cause          *causeJSON `json:"cause,omitempty"`
	}
	causeJSON struct {
		Kind        CauseKind `json:"kind"`
		Chunks      []string  `json:"chunks,omitempty"`
		Generations []int64   `json:"generations,omitempty"`
		Why         string    `json:"why"`
	}
	factJSON struct {
		Kind       evidence.FactKind `json:"kind"`
		End        string            `json:"end"`
		Anchor     string            `json:"anchor"`
		Retires    string            `json:"retires"`
		By         string            `json:"by,omitempty"`
		Generation int64             `json:"generation"`
	}
	newCitationJSON struct {
		Index     int    `json:"index"`
		ChunkID   string `json:"chunk_id"`
		Committed int64  `json:"committed"`
		Backfill  bool   `json:"backfill"`
		Source    string `json:"source,omitempty"`
		// CommittedAt: RFC 3339.
		CommittedAt string `json:"committed_at,omitempty"`
	}
)

// MarshalJSON implements json.Marshaler: the report with snake_case keys,
// days as YYYY-MM-DD and instants as RFC 3339, lists in the report's order.
func (r *DiffReport) MarshalJSON() ([]byte, error) {
	out := diffJSON{Hash: r.Verify.Hash, Verified: r.Verify.OK(), ReplayHash: r.Verify.ReplayHash,
		Problems: append([]string{}, r.Verify.Problems...), Generation: r.Generation, Compared: r.Compared,
		LatestGeneration: r.LatestGeneration, LatestHash: r.LatestHash, Unchanged: r.Unchanged(),
		Citations: []citationDiffJSON{}, New: []newCitationJSON{}}
	for _, c := range r.Citations {
		cj := citationDiffJSON{Index: c.Index, ChunkID: c.ChunkID, Status: c.Status, Now: c.Now,
			Chain: c.Chain, Replacement: c.Replacement, ReplacementNow: c.ReplacementNow, Detail: c.Detail, Source: c.Source}
		if k := c.Cause; k != nil {
			cj.Cause = &causeJSON{Kind: k.Kind, Chunks: k.Chunks, Generations: k.Generations, Why: k.Why}
		}
		if f := c.Fact; f != nil {
			cj.Fact = &factJSON{Kind: f.Kind, End: f.End.String(), Anchor: asof.FormatInstant(f.Anchor),
				Retires: f.Retires().String(), By: f.By, Generation: c.FactGeneration}
		}
		out.Citations = append(out.Citations, cj)
	}
	for _, n := range r.New {
		nj := newCitationJSON{Index: n.Index, ChunkID: n.ChunkID, Committed: n.Committed, Backfill: n.Backfill, Source: n.Source}
		if !n.CommittedAt.IsZero() {
			nj.CommittedAt = asof.FormatInstant(n.CommittedAt)
		}
		out.New = append(out.New, nj)
	}
	if r.Compared {
		out.Committed, out.LatestCommitted = asof.FormatInstant(r.Committed), asof.FormatInstant(r.LatestCommitted)
		out.ScopeCommits = r.ScopeCommits
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("evpack: diff report: %w", err)
	}
	return b, nil
}
