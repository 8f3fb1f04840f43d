package evpack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/retrieve"
)

// The dense leg reads a denseView: vectors, the graph over them when the
// index keeps one, and each row's chunk.
//
// A corpus-free embedder (a model) gives every chunk one vector for good:
// they are kept with the state and stored with each generation. Their one
// view over the whole index serves every scope of an exact scan, which
// scores eligible vectors alone (eligibility keeps other tenants out). An
// HNSW walk is another matter: it finds its way through every vector of its
// graph, and whether it walks at all depends on how many are indexed, so a
// graph over other tenants' vectors would let their ingests move a pack.
// The graph of the whole index serves only a request of the latest state
// whose scope holds every chunk of the index (one tenant's index, or the
// shared corpus alone); any other request (another scope, or one pinned to
// an earlier generation, whose pack must replay) gets a view of its scope
// of its own, built from the stored vectors of its chunks at its
// generation and cached as below. A corpus-dependent one (SIF over
// static word vectors) weighs words by their frequency, which must be the
// scope's at its generation (the contract's point 6: another tenant's
// chunks can neither appear in nor move a pack, and a later commit cannot
// move a pinned one). Its view is built from the chunks of the scope at the
// scope's generation on the first request that needs it, and cached: a
// commit to another scope leaves it valid, and nothing is embedded at
// commit or at Open.
type denseView struct {
	dense  *retrieve.Dense
	graph  *retrieve.Graph
	rows   []*evidence.Chunk
	counts *retrieve.Counts // the word counts the vectors were weighed with
}

// maxViews bounds the corpus-dependent views kept: the latest of a few
// scopes, and a pinned replay or two.
const maxViews = 8

// viewCache holds the corpus-dependent views of one index, keyed by scope
// and generation. Safe for concurrent use; a view is built once.
type viewCache struct {
	mu    sync.Mutex
	views map[string]*viewEntry
	order []string // keys, oldest first
}

func newViewCache() *viewCache { return &viewCache{views: map[string]*viewEntry{}} }

type viewEntry struct {
	once sync.Once
	view *denseView
	err  error
}

// denseView returns the view a request in scope sc reads.
func (e *Engine) denseView(ctx context.Context, sc state.Scope) (*denseView, error) {
	st := sc.State
	free := state.CorpusFree(e.emb)
	if free && (st.Graph == nil || sc.Latest && sc.HoldsIndex()) {
		return &denseView{dense: st.Dense, graph: st.Graph, rows: st.DenseRows, counts: st.Counts}, nil
	}
	// The purges the state knows are part of the key: a query that began
	// before a purge may build its view after the purge cleared the cache,
	// from rows the purge took away, and no request after the purge may
	// read that view.
	key := strings.Join(sc.Names, "\x00") + "\x00" + strconv.FormatInt(sc.Gen, 10) + "\x00" + strconv.Itoa(len(st.PurgeLog))
	c := e.views
	c.mu.Lock()
	ent, ok := c.views[key]
	if !ok {
		ent = &viewEntry{}
		c.views[key] = ent
		c.order = append(c.order, key)
		if len(c.order) > maxViews {
			delete(c.views, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	ent.once.Do(func() {
		if free {
			ent.view, ent.err = storedView(ctx, sc, e.graph)
		} else {
			ent.view, ent.err = buildView(ctx, e.emb, sc, e.graph)
		}
	})
	if ent.err != nil {
		// A cancelled or failed build is not kept: the next request tries again.
		c.mu.Lock()
		if c.views[key] == ent {
			delete(c.views, key)
			c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
		}
		c.mu.Unlock()
		return nil, ent.err
	}
	return ent.view, nil
}

// buildView embeds the chunks of scope sc at its generation with the
// scope's word counts, and builds the graph over them when opts asks for
// one. The result is a function of the scope's chunks alone.
func buildView(ctx context.Context, emb retrieve.Embedder, sc state.Scope, opts *retrieve.GraphOptions) (*denseView, error) {
	st := sc.State
	ids := sc.ChunkIDs()
	counts := retrieve.NewCounts()
	feats := make([][]int32, len(ids))
	for i, id := range ids {
		feats[i] = st.Feats[id]
		counts.Add(feats[i])
	}
	vecs, err := emb.Embed(ctx, feats, counts, false)
	if err != nil {
		return nil, fmt.Errorf("evpack: embed the scope %q at generation %d: %w", sc.Names, sc.Gen, err)
	}
	if err := retrieve.CheckVectors(vecs, len(ids), emb.Dims(), func(k int) string { return "chunk " + ids[k] }); err != nil {
		return nil, fmt.Errorf("evpack: embed %s: %w", emb.Identity(), err)
	}
	d := retrieve.NewDense(ids, vecs)
	if r, ok := emb.(retrieve.ComponentRemover); ok && r.RemovesFirstComponent() {
		d = d.WithoutFirstComponent()
	}
	return viewOf(ctx, st, d, counts, opts)
}

// storedView returns the view of scope sc at its generation for a
// corpus-free embedder: the stored vectors of its chunks, and the graph
// over them when opts asks for one. The result is a function of the
// scope's chunks alone.
func storedView(ctx context.Context, sc state.Scope, opts *retrieve.GraphOptions) (*denseView, error) {
	st := sc.State
	ids := sc.ChunkIDs()
	vecs := make([][]int8, len(ids))
	for i, id := range ids {
		vecs[i], _ = st.Dense.Vector(id) // nil for a chunk without one: not indexed
	}
	return viewOf(ctx, st, retrieve.NewDense(ids, vecs), st.Counts, opts)
}

// viewOf returns the view of d, with the graph over it when opts asks for
// one, its rows' chunks from st.
func viewOf(ctx context.Context, st *state.State, d *retrieve.Dense, counts *retrieve.Counts, opts *retrieve.GraphOptions) (*denseView, error) {
	g, err := state.BuildGraph(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	v := &denseView{dense: d, graph: g, counts: counts, rows: make([]*evidence.Chunk, d.Len())}
	for i := range v.rows {
		v.rows[i] = st.Chunks[d.ID(i)]
	}
	return v, nil
}

// checkEmbeds embeds the chunks add (features feats) with their own word
// counts, so that an embedder that fails on them, or lies about its
// dimensions, fails the ingest that brings them rather than every later
// request of their scopes.
func checkEmbeds(ctx context.Context, emb retrieve.Embedder, add []*evidence.Chunk, feats [][]int32) error {
	counts := retrieve.NewCounts()
	for _, f := range feats {
		counts.Add(f)
	}
	vecs, err := emb.Embed(ctx, feats, counts, false)
	if err != nil {
		return fmt.Errorf("evpack: embed: %w", err)
	}
	if err := retrieve.CheckVectors(vecs, len(add), emb.Dims(), func(k int) string { return "chunk " + add[k].ID }); err != nil {
		return fmt.Errorf("evpack: embed %s: %w", emb.Identity(), err)
	}
	return nil
}
