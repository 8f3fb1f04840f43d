package evpack

import (
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// writable returns the committed state with every chunk in memory: the
// state itself or, when Open read a checkpoint, that state unfolded with
// the chunks of the batch files (unfold), which then replaces it (it
// answers every query the same). A purge, Diff and History start from it;
// a commit of chunks and facts extends the latest state as it is
// (state.State.Extend). (Check builds its own from the batch files alone.)
// The caller holds ingestMu: the swap closes the rows of the state it
// replaces, which a commit in flight reads (unfolded takes it).
func (e *Engine) writable() (*state.State, error) {
	st, err := e.snapshot()
	if err != nil || st.Rows == nil {
		return st, err
	}
	full, err := st.UnfoldOrLoad(e.store, e.lex, e.emb, e.graph)
	if err != nil {
		return nil, err
	}
	// Invariant: st is still the committed state; only a commit or a
	// purge moves it, and both hold ingestMu.
	e.mu.Lock()
	e.st = full
	e.mu.Unlock()
	// A checkpoint written ahead may be reading st's rows (one started
	// after the swap reads full's): not under the lock, which queries wait
	// for.
	e.ahead.WaitRows()
	st.Rows.Close() // a read error only: nothing was written
	return full, nil
}

// unfolded is writable for a caller that does not hold ingestMu (History,
// Diff): it takes it when the state is to be unfolded. Without it, a
// commit beside the first History after Open read the rows that the swap
// had closed and failed as ErrCorrupt on an index that was fine.
func (e *Engine) unfolded() (*state.State, error) {
	st, err := e.snapshot()
	if err != nil || st.Rows == nil {
		return st, err
	}
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	return e.writable()
}

// History returns every committed generation, oldest first, with what it
// did per tenant (history.go): what Request.Generation and Request.KnownAt
// choose from. KnownAt reads this commit clock, not the sources' dates: a
// mirror backfilled today has every generation committed today. Like Diff,
// on an index opened from its checkpoint the first call reads every chunk.
func (e *Engine) History() ([]state.Commit, error) {
	st, err := e.unfolded() // the full state: each chunk's tenant and generation
	if err != nil {
		return nil, err
	}
	by := st.CommitsByTenant(0, st.Gen)
	out := make([]state.Commit, len(st.Commits))
	for i, at := range st.Commits {
		out[i] = state.Commit{Generation: int64(i + 1), CommittedAt: at, Tenants: by[i]}
	}
	return out, nil
}

// Scope says what a request of tenant reads at index generation gen (0:
// the latest): the scope's own generation, which a pack records, and the
// digest of its chunks, which a pack's fingerprint records as "corpus".
func (e *Engine) Scope(tenant string, gen int64) (scopeGen int64, digest string, err error) {
	st, err := e.snapshot()
	if err != nil {
		return 0, "", err
	}
	h := evidence.Header{Tenant: tenant}
	sc, err := st.ScopeOf(&h, state.Reads{Gen: gen})
	if err != nil {
		return 0, "", err
	}
	return sc.Gen, sc.Corpus, nil
}
