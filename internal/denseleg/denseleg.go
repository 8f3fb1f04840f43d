package denseleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/retrieve"
)

// The dense leg reads a View: vectors, the graph over them when the
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
//
// View is what the dense leg reads: vectors, the graph over them, each
// row's chunk and the word counts the vectors were weighed with.
type View struct {
	Dense  *retrieve.Dense
	Graph  *retrieve.Graph
	Rows   []*evidence.Chunk
	Counts *retrieve.Counts // the word counts the vectors were weighed with
}

// maxViews bounds the corpus-dependent views kept: the latest of a few
// scopes, and a pinned replay or two.
const maxViews = 8

// Views holds the dense views of one index, keyed by scope
// and generation. Safe for concurrent use; a view is built once.
type Views struct {
	mu    sync.Mutex
	views map[string]*viewEntry
	order []string // keys, oldest first
}

// NewViews returns an empty cache of views.
func NewViews() *Views { return &Views{views: map[string]*viewEntry{}} }

type viewEntry struct {
	once sync.Once
	view *View
	err  error
}

// View returns the view a request in scope sc reads, built with s's
// embedder and graph settings.
func (c *Views) View(ctx context.Context, sc state.Scope, s Settings) (*View, error) {
	st := sc.State
	free := state.CorpusFree(s.Embedder)
	if free && (st.Graph == nil || sc.Latest && sc.HoldsIndex()) {
		return &View{Dense: st.Dense, Graph: st.Graph, Rows: st.DenseRows, Counts: st.Counts}, nil
	}
	// The purges the state knows are part of the key: a query that began
	// before a purge may build its view after the purge cleared the cache,
	// from rows the purge took away, and no request after the purge may
	// read that view.
	key := strings.Join(sc.Names, "\x00") + "\x00" + strconv.FormatInt(sc.Gen, 10) + "\x00" + strconv.Itoa(len(st.PurgeLog))
	for {
		v, again, err := c.view(ctx, key, sc, s, free)
		if !again {
			return v, err
		}
	}
}

// view is one try of View at key: again when another request's build, which
// this one waited for, ended with that request's context (cancelled, or
// past its deadline) while this one's goes on: it builds again.
func (c *Views) view(ctx context.Context, key string, sc state.Scope, s Settings, free bool) (v *View, again bool, err error) {
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
	ran := false
	ent.once.Do(func() {
		ran = true
		if free {
			ent.view, ent.err = storedView(ctx, sc, s.Build)
		} else {
			ent.view, ent.err = buildView(ctx, s.Embedder, sc, s.Build)
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
		ctxErr := errors.Is(ent.err, context.Canceled) || errors.Is(ent.err, context.DeadlineExceeded)
		return nil, !ran && ctxErr && ctx.Err() == nil, ent.err
	}
	return ent.view, false, nil
}

// buildView embeds the chunks of scope sc at its generation with the
// scope's word counts, and builds the graph over them when opts asks for
// one. The result is a function of the scope's chunks alone.
func buildView(ctx context.Context, emb retrieve.Embedder, sc state.Scope, opts *retrieve.GraphOptions) (*View, error) {
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
func storedView(ctx context.Context, sc state.Scope, opts *retrieve.GraphOptions) (*View, error) {
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
func viewOf(ctx context.Context, st *state.State, d *retrieve.Dense, counts *retrieve.Counts, opts *retrieve.GraphOptions) (*View, error) {
	g, err := state.BuildGraph(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	v := &View{Dense: d, Graph: g, Counts: counts, Rows: make([]*evidence.Chunk, d.Len())}
	for i := range v.Rows {
		v.Rows[i] = st.Chunks[d.ID(i)]
	}
	return v, nil
}

// CheckEmbeds embeds the chunks add (features feats) with their own word
// counts, so that an embedder that fails on them, or lies about its
// dimensions, fails the ingest that brings them rather than every later
// request of their scopes.
func CheckEmbeds(ctx context.Context, emb retrieve.Embedder, add []*evidence.Chunk, feats [][]int32) error {
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

// search runs the dense leg for question vector q and returns its hits
// and the trace line that says which path ran and why. The exact scan is the
// default; with an HNSW graph, a request whose eligible set is small scans it
// exactly (faster there, and exact), a larger one walks the graph, and a walk
// that finds fewer hits than exist (a part of the graph it cannot reach
// through eligible-poor regions) falls back to the exact scan.
func search(ctx context.Context, sc state.Scope, v *View, q []int8, elig retrieve.Eligibility, asOf asof.Date, s Settings) ([]retrieve.DenseHit, string, error) {
	admits := sc.Admitter(elig, asOf)
	admit := func(row int) bool { return admits(v.Rows[row]) }
	if q == nil {
		return nil, "dense: the question has no known words", nil
	}
	exact := func(why string) ([]retrieve.DenseHit, string, error) {
		hits, scanned, err := v.Dense.Search(ctx, q, admit, s.Pool)
		if err != nil {
			return nil, "", err
		}
		return hits, fmt.Sprintf("dense: exact scan of %d chunks eligible as of %s%s, kept %d", scanned, asOf, why, len(hits)), nil
	}
	if !s.HNSW || v.Graph == nil {
		return exact("")
	}
	// Count eligible rows only as far as the threshold: past it the walk is
	// decided, and a full count would cost more than the walk at scale.
	indexed, below := v.Dense.Indexed(), s.Graph.ExactBelow(v.Dense.Indexed())
	if eligible := v.Dense.CountUpTo(admit, below); eligible < below {
		return exact(fmt.Sprintf(" (%d² < %d × %d indexed)", eligible, s.Graph.ExactFactor, indexed))
	}
	g, err := v.Graph.WithEfSearch(s.Graph.EfSearch)
	if err != nil {
		return nil, "", err
	}
	hits, gs, err := g.Search(ctx, q, admit, s.Pool)
	if err != nil {
		return nil, "", err
	}
	if len(hits) < s.Pool {
		if exist := v.Dense.CountUpTo(admit, s.Pool); len(hits) < exist {
			return exact(fmt.Sprintf(" (the hnsw walk found %d of %d)", len(hits), exist))
		}
	}
	return hits, fmt.Sprintf("dense: hnsw walk, at least %d of %d indexed chunks eligible as of %s (%d² >= %d × %d), ef %d, compared %d vectors, kept %d",
		below, indexed, asOf, below, s.Graph.ExactFactor, indexed, gs.Ef, gs.Visited, len(hits)), nil
}

// Settings are the dense leg's: the embedder, the graph build settings
// (nil: the index keeps no graph), the pool, and whether to walk an HNSW
// graph (Options.DenseIndex "hnsw") with Graph's search settings.
type Settings struct {
	Embedder retrieve.Embedder
	Build    *retrieve.GraphOptions
	Pool     int
	HNSW     bool
	Graph    retrieve.GraphOptions
}

// Request is one question to the dense leg: the ranking text, read in
// scope Scope as of day AsOf with the lexical restriction Elig.
type Request struct {
	Scope state.Scope
	Text  string
	Elig  retrieve.Eligibility
	AsOf  asof.Date
}

// Search embeds r's text with the scope's word counts and returns the
// dense leg's hits and its trace line.
func (c *Views) Search(ctx context.Context, r Request, s Settings) ([]retrieve.DenseHit, string, error) {
	view, err := c.View(ctx, r.Scope, s)
	if err != nil {
		return nil, "", err
	}
	emb := s.Embedder
	qs, err := emb.Embed(ctx, [][]int32{emb.Analyze(r.Text)}, view.Counts, true)
	if err == nil {
		err = retrieve.CheckVectors(qs, 1, emb.Dims(), func(int) string { return "question" })
	}
	if err != nil {
		return nil, "", fmt.Errorf("evpack: embed question: %w", err)
	}
	return search(ctx, r.Scope, view, view.Dense.Project(qs[0]), r.Elig, r.AsOf, s)
}

// Clear drops every view: a purge changed what earlier generations embed.
func (c *Views) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.views, c.order = map[string]*viewEntry{}, nil
}
