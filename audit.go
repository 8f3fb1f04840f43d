package evpack

import (
	"context"
	"errors"
	"fmt"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/periodleg"
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
	st, err := e.unfolded()
	if err != nil {
		return nil, err
	}
	v, err := audit.Verify(ctx, engineRanker{e}, st, p, raw)
	if err != nil {
		return nil, err
	}
	rep := &audit.DiffReport{Verify: v, Generation: p.Generation, Citations: []audit.CitationDiff{}, New: []audit.NewCitation{}}
	if p.Generation > st.Gen {
		return rep, nil // Verify's problem says so; there is nothing to compare
	}
	return audit.Compare(ctx, engineRanker{e}, st, p, rep)
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
	e.ingestMu.Lock() // a commit's documents go into bleve outside mu (publish)
	defer e.ingestMu.Unlock()
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
	ix := audit.Index{Dir: e.dir, Store: e.store, Lex: e.lex, Checkpoint: func(st *state.State) (checkpoint.File, error) { return state.Checkpoint(st, e.lex, nil) }, SkipLexical: e.readOnly != nil}
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
	return audit.Verify(ctx, engineRanker{e}, st, p, raw)
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
	audit.CheckModel(ctx, engineRanker{e}, e.snapshot, func(err error) bool { return errors.Is(err, errMoved) }, p, rep)
	return rep, nil
}

// engineRanker is what Verify and Diff ask of the engine (audit.Ranker).
type engineRanker struct{ e *Engine }

// Header returns the request header pack p answered, its period parsed again.
func (r engineRanker) Header(p *evidence.Pack) evidence.Header {
	h := evidence.Header{Question: p.Question, AsOf: p.AsOf, Tenant: p.Tenant, Filters: p.Filters, K: p.K, Period: p.Period, PeriodFrom: p.PeriodFrom}
	periodleg.Asked(&h, r.e.opts.QuestionPeriods) // a question's period parsed again, a request's kept
	return h
}

// Reranker returns the engine's reranker.
func (r engineRanker) Reranker() rerank.Reranker { return r.e.opts.Reranker }

// Fingerprint returns the configuration a pack of h names on this engine.
func (r engineRanker) Fingerprint(h evidence.Header, sc state.Scope, rr rerank.Reranker) evidence.Fingerprint {
	return r.e.fingerprintFor(h, sc, rr)
}

// Current returns nil while st is the committed state, errMoved once a
// commit replaced it, ErrClosed after Close.
func (r engineRanker) Current(st *state.State) error { return r.e.readFailed(st, nil) }

// Query answers h in scope sc, ranked by rr.
func (r engineRanker) Query(ctx context.Context, h evidence.Header, sc state.Scope, rr rerank.Reranker) (*evidence.Pack, error) {
	return r.e.query(ctx, h, sc, rr)
}
