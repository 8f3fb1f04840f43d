package audit

import (
	"context"
	"fmt"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// CheckModel runs r's reranker again on the request pack p answered, at
// p's generation, and records in rep whether a fresh model run cites what
// p cites, in its order (Engine.Replay with checkModel). snapshot returns
// the engine's committed state; a query whose error again accepts starts
// over on a new one (a commit replaced the state it read). A model that
// cannot run (its file removed, its service down) is a problem in rep,
// not an error.
func CheckModel(ctx context.Context, r Ranker, snapshot func() (*state.State, error), again func(error) bool, p *evidence.Pack, rep *ReplayReport) {
	h := r.Header(p)
	var fresh *evidence.Pack
	var err error
	for {
		var st *state.State
		if st, err = snapshot(); err == nil {
			if p.Generation > st.Gen {
				err = fmt.Errorf("generation %d is not committed here", p.Generation)
				break
			}
			sc := st.Scope(h.Tenant, p.Generation)
			h.Generation = sc.Gen
			fresh, err = r.Query(ctx, h, sc, r.Reranker())
		}
		if !again(err) {
			break
		}
	}
	if err != nil {
		rep.Problems = append(rep.Problems, "model check: "+err.Error())
		return
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
}
