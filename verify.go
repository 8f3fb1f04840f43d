package evpack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack/evidence"
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
}

// PurgedCitation is a citation of a chunk whose text was purged.
type PurgedCitation struct {
	Index      int
	ChunkID    string
	Generation int64 // the purge's
	Reason     string
}

// OK reports whether the pack replays byte-identically and every cited chunk
// still hashes to its stored content hash.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify replays the pack in raw against the engine's current index and
// configuration. It returns an error only when the pack cannot be read or the
// query cannot run; every way in which a readable pack fails to hold is a
// Problem in the report.
func (e *Engine) Verify(ctx context.Context, raw []byte) (*VerifyReport, error) {
	for {
		rep, err := e.verify(ctx, raw)
		if !errors.Is(err, errMoved) {
			return rep, err
		}
	}
}

func (e *Engine) verify(ctx context.Context, raw []byte) (*VerifyReport, error) {
	p, err := evidence.Parse(raw)
	if err != nil {
		return nil, err
	}
	st, err := e.snapshot()
	if err != nil {
		return nil, err
	}
	return e.verifyIn(ctx, st, p, raw)
}

// verifyIn replays pack p, parsed from raw, against committed state st (a
// snapshot: errMoved when a commit lands during the lexical search).
func (e *Engine) verifyIn(ctx context.Context, st *state, p *evidence.Pack, raw []byte) (*VerifyReport, error) {
	rep := &VerifyReport{Hash: evidence.Sum(raw)}
	h := evidence.Header{Question: p.Question, AsOf: p.AsOf, Tenant: p.Tenant, Filters: p.Filters, K: p.K, Period: p.Period, PeriodFrom: p.PeriodFrom}
	e.askedPeriod(&h) // a question's period parsed again, a request's kept
	// Replay at the pack's own generation: later commits, to any scope, do
	// not change what it read.
	if p.Generation > st.gen {
		rep.Problems = append(rep.Problems, fmt.Sprintf("generation %d: the index has committed only %d (a pack of another index?)", p.Generation, st.gen))
		return rep, nil
	}
	sc := st.scope(h.Tenant, p.Generation)
	h.Generation = sc.gen
	for _, c := range p.Citations {
		if pa, ok := st.purged[c.ChunkID]; ok && pa.hash == c.ContentHash {
			rep.Purged = append(rep.Purged, PurgedCitation{Index: c.Index, ChunkID: c.ChunkID, Generation: pa.gen, Reason: pa.reason})
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: purged at generation %d (%s): its text is deleted, so the pack cannot be replayed",
				c.Index, c.ChunkID, pa.gen, pa.reason))
			continue
		}
		if why := st.citedTextProblem(c); why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: %s", c.Index, c.ChunkID, why))
		}
	}
	if len(rep.Purged) > 0 {
		return rep, nil // a replay without the purged text would only "differ"
	}
	// The pack must have been ranked by the reranker this engine runs: a
	// ledger replays recorded scores under the pack's own reranker name, so
	// without this check any reranker's pack (a forger's) would verify.
	own := e.opts.Reranker
	identity := map[string]string{"reranker": own.Name(), "reranker_bit_stable": strconv.FormatBool(bitStable(own))}
	if got := p.Fingerprint.Get("reranker"); got != identity["reranker"] {
		rep.Problems = append(rep.Problems, fmt.Sprintf("reranker: pack says %q, this engine runs %q", got, identity["reranker"]))
	}
	if got := p.Fingerprint.Get("reranker_bit_stable"); got != identity["reranker_bit_stable"] {
		rep.Problems = append(rep.Problems, fmt.Sprintf("reranker_bit_stable: pack says %q, this engine's reranker gives %q", got, identity["reranker_bit_stable"]))
	}
	rr := own
	// Replay the recorded scores, never calling the model; a bit-stable
	// reranker is always run again, so a ledger cannot stand in for it.
	if len(p.Ledger) > 0 && !bitStable(own) {
		rr = rerank.NewLedger(p.Fingerprint.Get("reranker"), p.Ledger)
	}
	now := e.fingerprintFor(h, sc, rr)
	for _, s := range p.Fingerprint {
		if _, checked := identity[s.Key]; checked {
			continue
		}
		if v := now.Get(s.Key); v != s.Value {
			rep.Problems = append(rep.Problems, fmt.Sprintf("setting %s: pack %q, engine now %q", s.Key, s.Value, v))
		}
	}
	replay, err := e.query(ctx, h, sc, rr)
	if err != nil {
		if errors.Is(err, rerank.ErrLedger) {
			rep.Problems = append(rep.Problems, "the index no longer returns the pool the ledger scored: "+err.Error())
			return rep, nil
		}
		return nil, err
	}
	got := replay.Bytes()
	rep.ReplayHash = evidence.Sum(got)
	if !bytes.Equal(got, raw) {
		why := "replay differs: " + firstDifference(p, replay)
		if gone := sc.purgedIn(); len(gone) > 0 {
			why += fmt.Sprintf(" (the scope held chunks since purged, whose terms no longer count: %s)", strings.Join(gone, ", "))
		}
		rep.Problems = append(rep.Problems, why)
	}
	return rep, nil
}

// purgedIn lists the purged chunks the scope held at its generation, in
// purge order.
func (sc scope) purgedIn() []string {
	var out []string
	for _, id := range sc.st.purgeLog {
		if tenant, _ := sc.st.tenantOf(id); sc.admits(id) && slices.Contains(sc.names, tenant) {
			out = append(out, id)
		}
	}
	return out
}

// citedTextProblem says how the index fails to hold the text citation c
// cites, or "" when it holds it: the chunk is missing, stored under another
// content hash, no longer hashes to its own (edited after ingest), or holds
// other text.
func (st *state) citedTextProblem(c evidence.Citation) string {
	stored, err := st.chunkOf(c.ChunkID)
	switch {
	case errors.Is(err, errMismatch): // read from its batch file: as an edit held in memory would be
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

// Replay rebuilds a pack from its ledger and the index, without calling the
// model, and reports whether the rebuilt bytes are identical (Verify). With
// checkModel it also runs the engine's reranker once and reports whether a
// fresh model run would cite the same chunks in the same order; a model that
// cannot run (its file removed, its service down) is reported, not fatal.
func (e *Engine) Replay(ctx context.Context, raw []byte, checkModel bool) (*ReplayReport, error) {
	v, err := e.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	rep := &ReplayReport{VerifyReport: v}
	if !checkModel {
		return rep, nil
	}
	p, err := evidence.Parse(raw)
	if err != nil {
		return nil, err
	}
	h := evidence.Header{Question: p.Question, AsOf: p.AsOf, Tenant: p.Tenant, Filters: p.Filters, K: p.K, Period: p.Period, PeriodFrom: p.PeriodFrom}
	e.askedPeriod(&h) // a question's period parsed again, a request's kept
	var fresh *evidence.Pack
	for {
		var st *state
		if st, err = e.snapshot(); err == nil {
			if p.Generation > st.gen {
				err = fmt.Errorf("generation %d is not committed here", p.Generation)
				break
			}
			sc := st.scope(h.Tenant, p.Generation)
			h.Generation = sc.gen
			fresh, err = e.query(ctx, h, sc, e.opts.Reranker)
		}
		if !errors.Is(err, errMoved) {
			break
		}
	}
	if err != nil {
		rep.Problems = append(rep.Problems, "model check: "+err.Error())
		return rep, nil
	}
	rep.ModelChecked = true
	for _, c := range fresh.Citations {
		rep.ModelOrder = append(rep.ModelOrder, c.ChunkID)
	}
	var recorded []string
	for _, c := range p.Citations {
		recorded = append(recorded, c.ChunkID)
	}
	rep.ModelAgrees = slices.Equal(recorded, rep.ModelOrder)
	return rep, nil
}

// firstDifference describes where two packs part, for a person.
func firstDifference(want, got *evidence.Pack) string {
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
