package evpack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/pipeline"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/rerank"
)

// Diff verifies the pack in raw at its own generation (the report's
// Verify) and runs its request (question, as-of day, tenant, filters, K)
// again at the latest generation of its scope, with the engine's
// configuration, to say what became of each citation and what the index
// cites now that it did not. Like Verify, it returns an error only when
// the pack cannot be read or a query cannot run (the engine's reranker
// must be able to rank: a retired model cannot say what it would cite
// now); a pack that does not hold at its generation is a Problem of
// Verify's. The whole report reads one committed state: a commit that lands
// meanwhile starts it again.
func (e *Engine) Diff(ctx context.Context, raw []byte) (*audit.DiffReport, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("evpack: diff: %w", err)
		}
		rep, err := e.diff(ctx, raw)
		if !errors.Is(err, errMoved) {
			return rep, err
		}
	}
}

func (e *Engine) diff(ctx context.Context, raw []byte) (*audit.DiffReport, error) {
	p, err := evidence.Parse(raw)
	if err != nil {
		return nil, err // as Verify: the pack cannot be read
	}
	st, err := e.writable()
	if err != nil {
		return nil, err
	}
	v, err := e.verifyIn(ctx, st, p, raw)
	if err != nil {
		return nil, err
	}
	rep := &audit.DiffReport{Verify: v, Generation: p.Generation, Citations: []audit.CitationDiff{}, New: []audit.NewCitation{}}
	if p.Generation > st.Gen {
		return rep, nil // Verify's problem says so; there is nothing to compare
	}
	h := evidence.Header{Question: p.Question, AsOf: p.AsOf, Tenant: p.Tenant, Filters: p.Filters, K: p.K, Period: p.Period, PeriodFrom: p.PeriodFrom}
	e.askedPeriod(&h) // a question's period parsed again, a request's kept
	sc, err := st.ScopeOf(&h, state.Reads{})
	if err != nil {
		return nil, fmt.Errorf("evpack: diff: %w", err)
	}
	latest, err := e.query(ctx, h, sc, e.opts.Reranker)
	if err != nil {
		return nil, fmt.Errorf("evpack: diff: the request at generation %d: %w", sc.Gen, err)
	}
	rep.Compared, rep.LatestGeneration, rep.LatestHash = true, sc.Gen, evidence.Sum(latest.Bytes())
	rep.Committed, rep.LatestCommitted = audit.CommitTime(st, p.Generation), audit.CommitTime(st, sc.Gen)
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
	statsWhy := audit.StatisticsWhy(st, rep.ScopeCommits, p.Tenant, shared, own)

	now := make(map[string]int, len(latest.Citations)) // chunk ID -> index in latest; lookups only
	for _, c := range latest.Citations {
		now[c.ChunkID] = c.Index
	}
	cited := make(map[string]bool, len(p.Citations)) // lookups only
	for _, c := range p.Citations {
		cited[c.ChunkID] = true
		rep.Citations = append(rep.Citations, audit.Citation(sc, h, c, now))
	}
	for _, c := range latest.Citations {
		if cited[c.ChunkID] {
			continue
		}
		g := st.Committed[c.ChunkID]
		rep.New = append(rep.New, audit.NewCitation{Index: c.Index, ChunkID: c.ChunkID, Committed: g,
			Backfill: g > p.Generation && !p.AsOf.Before(c.Anchor.Day()), Source: audit.ChunkSource(st, c.ChunkID),
			CommittedAt: audit.CommitTime(st, g)})
	}
	for i := range rep.Citations {
		rep.Citations[i].Source = audit.ChunkSource(st, rep.Citations[i].ChunkID)
		rep.Citations[i].Cause = audit.Cause(st, rep, latest, i, statsWhy)
	}
	return rep, nil
}

// Check tests the index's invariants and returns nil, or an error wrapping
// ErrCheck that lists every violation (see CheckIndex). Tests run it in
// t.Cleanup; a service can run it after a restore.
func (e *Engine) Check() error {
	rep, err := e.CheckIndex(context.Background())
	if err != nil {
		return err
	}
	if !rep.OK() {
		errs := make([]error, len(rep.Problems))
		for i, p := range rep.Problems {
			errs[i] = errors.New(p)
		}
		return fmt.Errorf("%w: %w", ErrCheck, errors.Join(errs...))
	}
	return nil
}

// CheckIndex reads the whole index back and compares its parts: every batch
// file against its checksum in the manifest and against the chunks in
// memory, every chunk against its content hash, the BM25 statistics and
// corpus digest against a recount, and every lexical document against the
// chunk and generation it was built from. It holds off commits while it
// runs. It returns an error only when the check cannot run.
func (e *Engine) CheckIndex(ctx context.Context) (*audit.CheckReport, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	st := e.st
	rep := &audit.CheckReport{Generation: st.Gen}
	bad := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	if e.broken != nil {
		bad("%v", e.broken)
	}
	if e.readOnly != nil {
		// The lexical index holds the unfinished commit's documents: what
		// it holds is compared once an Open with room rolled them back.
		bad("%v", e.readOnly)
	}
	if st.Rows != nil {
		// Open read the checkpoint: check the state every batch file gives
		// (and the checkpoint against it, below), leaving the engine's as
		// it is, so that a process that only queries stays small.
		full, err := state.LoadState(e.store, e.lex, e.emb, e.graph)
		if err != nil {
			bad("%v", err)
			return rep, nil
		}
		st = full
	}
	ix := audit.Index{Dir: e.dir, Store: e.store, Lex: e.lex, Checkpoint: e.checkpointOf, SkipLexical: e.readOnly != nil}
	if err := audit.CheckState(ctx, ix, st, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// Verify replays the pack in raw against the engine's current index and
// configuration. It returns an error only when the pack cannot be read or the
// query cannot run; every way in which a readable pack fails to hold is a
// Problem in the report.
func (e *Engine) Verify(ctx context.Context, raw []byte) (*audit.VerifyReport, error) {
	for {
		rep, err := e.verify(ctx, raw)
		if !errors.Is(err, errMoved) {
			return rep, err
		}
	}
}

func (e *Engine) verify(ctx context.Context, raw []byte) (*audit.VerifyReport, error) {
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
func (e *Engine) verifyIn(ctx context.Context, st *state.State, p *evidence.Pack, raw []byte) (*audit.VerifyReport, error) {
	rep := &audit.VerifyReport{Hash: evidence.Sum(raw), Format: cmp.Or(p.Format, evidence.FormatVersion)}
	if p.Format == evidence.FormatV1 {
		return audit.VerifyUnreplayable(st, rep, p), nil
	}
	h := evidence.Header{Question: p.Question, AsOf: p.AsOf, Tenant: p.Tenant, Filters: p.Filters, K: p.K, Period: p.Period, PeriodFrom: p.PeriodFrom}
	e.askedPeriod(&h) // a question's period parsed again, a request's kept
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
		if pa, ok := st.Purged[c.ChunkID]; ok && pa.Hash == c.ContentHash {
			rep.Purged = append(rep.Purged, audit.PurgedCitation{Index: c.Index, ChunkID: c.ChunkID, Generation: pa.Gen, Reason: pa.Reason})
			rep.Problems = append(rep.Problems, fmt.Sprintf("citation [%d] %s: purged at generation %d (%s): its text is deleted, so the pack cannot be replayed",
				c.Index, c.ChunkID, pa.Gen, pa.Reason))
			continue
		}
		if why := audit.CitedTextProblem(st, c); why != "" {
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
		return rep, nil // a replay without the purged text would only "differ"
	}
	// The pack must have been ranked by the reranker this engine runs: a
	// ledger replays recorded scores under the pack's own reranker name, so
	// without this check any reranker's pack (a forger's) would verify.
	own := e.opts.Reranker
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
	rep.ReplayHash, rep.Replayed = evidence.Sum(got), true
	if !bytes.Equal(got, raw) && audit.ShowsEnds(p) {
		// A pack made before issue 31 may show an end learned after its
		// as-of day: replay it under that rule too.
		h.EndsKnownLater = true
		if old, err := e.query(ctx, h, sc, rr); err == nil && bytes.Equal(old.Bytes(), raw) {
			got, rep.ReplayHash, rep.EndsKnownLater = raw, rep.Hash, true
		} else if err != nil && !errors.Is(err, rerank.ErrLedger) {
			return nil, err
		}
	}
	if !bytes.Equal(got, raw) {
		why := "replay differs: " + audit.FirstDifference(p, replay)
		if gone := sc.PurgedIn(); len(gone) > 0 {
			why += fmt.Sprintf(" (the scope held chunks since purged, whose terms no longer count: %s)", strings.Join(gone, ", "))
		}
		rep.Problems = append(rep.Problems, why)
	}
	return rep, nil
}

// Replay rebuilds a pack from its ledger and the index, without calling the
// model, and reports whether the rebuilt bytes are identical (Verify). With
// checkModel it also runs the engine's reranker once and reports whether a
// fresh model run would cite the same chunks in the same order; a model that
// cannot run (its file removed, its service down) is reported, not fatal.
func (e *Engine) Replay(ctx context.Context, raw []byte, checkModel bool) (*audit.ReplayReport, error) {
	v, err := e.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	rep := &audit.ReplayReport{VerifyReport: v}
	if !checkModel || !v.Replayed && len(v.Holds) > 0 { // a form with no generation to run at
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
		var st *state.State
		if st, err = e.snapshot(); err == nil {
			if p.Generation > st.Gen {
				err = fmt.Errorf("generation %d is not committed here", p.Generation)
				break
			}
			sc := st.Scope(h.Tenant, p.Generation)
			h.Generation = sc.Gen
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
