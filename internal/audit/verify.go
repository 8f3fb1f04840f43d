package audit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/pipeline"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/rerank"
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

// ShowsEnds reports whether a citation of p shows a validity end.
func ShowsEnds(p *evidence.Pack) bool {
	return slices.ContainsFunc(p.Citations, func(c evidence.Citation) bool { return !c.Valid.To.IsZero() })
}

// VerifyUnreplayable checks what still holds of pack p, which names no
// generation to replay at (evidence.FormatV1: its scope and statistics were
// the whole index's when it was made): Parse has checked its bytes are
// canonical, so they hash to rep.Hash; each citation must still be the
// stored chunk (its text, fields and content hash). Each check that passes
// is a line of rep.Holds, each that fails a Problem.
func VerifyUnreplayable(st *state.State, rep *VerifyReport, p *evidence.Pack) *VerifyReport {
	rep.Holds = append(rep.Holds, fmt.Sprintf("the bytes are a canonical %s pack and hash to %s", rep.Format, rep.Hash))
	for _, c := range p.Citations {
		if why := foreignProblem(st, p.Tenant, c); why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: %s", c.Index, c.ChunkID, why))
			continue
		}
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

// foreignProblem is "chunk not in the index" when citation c cites a chunk
// of a tenant other than the pack's (and not the shared corpus's), else "":
// a pack can never cite one, and answering how its text, content hash or
// purge differs would tell the pack's tenant about another tenant's
// evidence (that it exists, its hash, whether a guessed text is its text).
func foreignProblem(st *state.State, tenant string, c evidence.Citation) string {
	if owner, ok := st.TenantOf(c.ChunkID); ok && owner != "" && owner != tenant {
		return "chunk not in the index"
	}
	return ""
}

// CitedTextProblem says how the index fails to hold the text citation c
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

// FirstDifference describes where two packs part, for a person.
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

// Ranker is what Verify and Compare ask of the engine. Contract: Header,
// Fingerprint and Query are those the engine serves requests with, so that
// a replay is the engine's own answer.
type Ranker interface {
	// Header returns the request header pack p was answered for.
	Header(p *evidence.Pack) evidence.Header
	// Reranker returns the reranker the engine runs.
	Reranker() rerank.Reranker
	// Fingerprint returns the configuration a pack of h in scope sc
	// ranked by rr names.
	Fingerprint(h evidence.Header, sc state.Scope, rr rerank.Reranker) evidence.Fingerprint
	// Query answers h in scope sc, ranked by rr.
	Query(ctx context.Context, h evidence.Header, sc state.Scope, rr rerank.Reranker) (*evidence.Pack, error)
	// Current returns nil while st is the state the engine serves, else
	// the error on which the caller starts again on the new state (or the
	// engine's close): a read of st that failed may have failed because a
	// commit replaced st and closed its rows, which is not a problem of
	// the pack's.
	Current(st *state.State) error
}

// Verify replays pack p (its bytes raw) in st at the pack's own generation
// and reports every way in which it fails to hold. It returns an error only
// when the replay cannot run.
func Verify(ctx context.Context, r Ranker, st *state.State, p *evidence.Pack, raw []byte) (*VerifyReport, error) {
	rep := &VerifyReport{Hash: evidence.Sum(raw), Format: cmp.Or(p.Format, evidence.FormatVersion)}
	if p.Format == evidence.FormatV1 {
		// No query runs to notice that st was replaced meanwhile (its rows
		// closed, so that the citations could not be read): ask.
		if rep = VerifyUnreplayable(st, rep, p); !rep.OK() {
			if err := r.Current(st); err != nil {
				return nil, err
			}
		}
		return rep, nil
	}
	h := r.Header(p)
	// Replay at the pack's own generation: later commits, to any scope, do
	// not change what it read.
	if p.Generation > st.Gen {
		rep.Problems = append(rep.Problems, fmt.Sprintf("generation %d: the index has committed only %d (a pack of another index?)", p.Generation, st.Gen))
		return rep, nil
	}
	sc := st.Scope(h.Tenant, p.Generation)
	h.Generation = sc.Gen
	var held []string
	for _, c := range p.Citations {
		if why := foreignProblem(st, p.Tenant, c); why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: %s", c.Index, c.ChunkID, why))
			continue
		}
		if pa, ok := st.Purged[c.ChunkID]; ok && pa.Hash == c.ContentHash {
			rep.Purged = append(rep.Purged, PurgedCitation{Index: c.Index, ChunkID: c.ChunkID, Generation: pa.Gen, Reason: pa.Reason})
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: purged at generation %d (%s): its text is deleted, so the pack cannot be replayed",
				c.Index, c.ChunkID, pa.Gen, pa.Reason))
			continue
		}
		if why := CitedTextProblem(st, c); why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: %s", c.Index, c.ChunkID, why))
		} else {
			held = append(held, fmt.Sprintf("citation [%d] %s: its text is the stored chunk's, which hashes to %s", c.Index, c.ChunkID, c.ContentHash))
		}
	}
	// Whatever else fails, say what still holds (a pack made by an older
	// build whose settings or statistics this one no longer gives).
	defer func() {
		if len(rep.Problems) > 0 {
			rep.Holds = append([]string{fmt.Sprintf("the bytes are a canonical %s pack and hash to %s", rep.Format, rep.Hash)}, held...)
		}
	}()
	if len(rep.Purged) > 0 {
		if err := r.Current(st); err != nil { // the other citations' reads were of st
			return nil, err
		}
		return rep, nil // a replay without the purged text would only "differ"
	}
	// The pack must have been ranked by the reranker this engine runs: a
	// ledger replays recorded scores under the pack's own reranker name, so
	// without this check any reranker's pack (a forger's) would verify.
	own := r.Reranker()
	identity := map[string]string{"reranker": own.Name(), "reranker_bit_stable": strconv.FormatBool(pipeline.BitStable(own))}
	if got := p.Fingerprint.Get("reranker"); got != identity["reranker"] {
		rep.Problems = append(rep.Problems, fmt.Sprintf("reranker: pack says %q, this engine runs %q", got, identity["reranker"]))
	}
	if got := p.Fingerprint.Get("reranker_bit_stable"); got != identity["reranker_bit_stable"] {
		rep.Problems = append(rep.Problems, fmt.Sprintf("reranker_bit_stable: pack says %q, this engine's reranker gives %q", got, identity["reranker_bit_stable"]))
	}
	rr := own
	// Replay the recorded scores, never calling the model; a bit-stable
	// reranker is always run again, so a ledger cannot stand in for it.
	if len(p.Ledger) > 0 && !pipeline.BitStable(own) {
		rr = rerank.NewLedger(p.Fingerprint.Get("reranker"), p.Ledger)
	}
	now := r.Fingerprint(h, sc, rr)
	for _, s := range p.Fingerprint {
		if _, checked := identity[s.Key]; checked {
			continue
		}
		if v := now.Get(s.Key); v != s.Value {
			rep.Problems = append(rep.Problems, fmt.Sprintf("setting %s: pack %q, engine now %q", s.Key, s.Value, v))
		}
	}
	replay, err := r.Query(ctx, h, sc, rr)
	if err != nil {
		if errors.Is(err, rerank.ErrLedger) {
			why := "the index no longer returns the pool the ledger scored: " + err.Error()
			if gone := sc.PurgedIn(); len(gone) > 0 { // as a replay that differs says it
				why += fmt.Sprintf(" (the scope held chunks since purged: %s)", strings.Join(gone, ", "))
			}
			rep.Problems = append(rep.Problems, why)
			return rep, nil
		}
		return nil, err
	}
	got := replay.Bytes()
	rep.ReplayHash, rep.Replayed = evidence.Sum(got), true
	if !bytes.Equal(got, raw) && ShowsEnds(p) {
		// A pack made before issue 31 may show an end learned after its
		// as-of day: replay it under that rule too.
		h.EndsKnownLater = true
		if old, err := r.Query(ctx, h, sc, rr); err == nil && bytes.Equal(old.Bytes(), raw) {
			got, rep.ReplayHash, rep.EndsKnownLater = raw, rep.Hash, true
		} else if err != nil && !errors.Is(err, rerank.ErrLedger) {
			return nil, err
		}
	}
	if !bytes.Equal(got, raw) {
		why := "replay differs: " + FirstDifference(p, replay)
		if gone := sc.PurgedIn(); len(gone) > 0 {
			why += fmt.Sprintf(" (the scope held chunks since purged, whose terms no longer count: %s)", strings.Join(gone, ", "))
		}
		rep.Problems = append(rep.Problems, why)
	}
	return rep, nil
}

// Compare runs pack p's request again at the latest generation of its
// scope in st and fills rep (whose Verify is p's) with what became of each
// citation, why, and what the index cites now that it did not.
func Compare(ctx context.Context, r Ranker, st *state.State, p *evidence.Pack, rep *DiffReport) (*DiffReport, error) {
	h := r.Header(p)
	sc, err := st.ScopeOf(&h, state.Reads{})
	if err != nil {
		return nil, fmt.Errorf("evpack: diff: %w", err)
	}
	latest, err := r.Query(ctx, h, sc, r.Reranker())
	if err != nil {
		return nil, fmt.Errorf("evpack: diff: the request at generation %d: %w", sc.Gen, err)
	}
	rep.Compared, rep.LatestGeneration, rep.LatestHash = true, sc.Gen, evidence.Sum(latest.Bytes())
	rep.Committed, rep.LatestCommitted = CommitTime(st, p.Generation), CommitTime(st, sc.Gen)
	rep.ScopeCommits = []int64{}
	shared, own := 0, 0 // scope commits to the shared corpus, to the pack's tenant
	for i, tcs := range st.CommitsByTenant(p.Generation, sc.Gen) {
		if !inScope(tcs, p.Tenant) {
			continue
		}
		rep.ScopeCommits = append(rep.ScopeCommits, p.Generation+int64(i)+1)
		for _, tc := range tcs {
			switch {
			case tc.Tenant == "":
				shared++
			case tc.Tenant == p.Tenant:
				own++
			}
		}
	}
	statsWhy := StatisticsWhy(st, rep.ScopeCommits, p.Tenant, shared, own)

	now := make(map[string]int, len(latest.Citations)) // chunk ID -> index in latest; lookups only
	for _, c := range latest.Citations {
		now[c.ChunkID] = c.Index
	}
	cited := make(map[string]bool, len(p.Citations)) // lookups only
	for _, c := range p.Citations {
		cited[c.ChunkID] = true
		rep.Citations = append(rep.Citations, Citation(sc, h, c, now))
	}
	for _, c := range latest.Citations {
		if cited[c.ChunkID] {
			continue
		}
		g := st.Committed[c.ChunkID]
		rep.New = append(rep.New, NewCitation{Index: c.Index, ChunkID: c.ChunkID, Committed: g,
			Backfill: g > p.Generation && !p.AsOf.Before(c.Anchor.Day()), Source: ChunkSource(st, c.ChunkID),
			CommittedAt: CommitTime(st, g)})
	}
	for i := range rep.Citations {
		rep.Citations[i].Source = ChunkSource(st, rep.Citations[i].ChunkID)
		rep.Citations[i].Cause = Cause(st, rep, latest, i, statsWhy)
	}
	return rep, nil
}

// inScope reports whether a commit's tenants touch the scope of tenant (its
// own evidence and the shared corpus).
func inScope(tcs []state.TenantCommit, tenant string) bool {
	for _, tc := range tcs {
		if tc.Tenant == "" || tc.Tenant == tenant {
			return true
		}
	}
	return false
}
