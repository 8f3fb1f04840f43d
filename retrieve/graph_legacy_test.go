package retrieve

// This file keeps the graph build as it was before the build was tuned
// (commit 21c8871): the reference the tuned sequential build must equal
// byte for byte (TestGraphSequentialMatchesReference), and the "today" of
// BenchmarkGraphBuildTurns. It is test code only: nothing ships it.

import (
	"context"
	"slices"
	"sync"
)

// legacyDot is Dot as it was: four int64 partial sums.
func legacyDot(a, b []int8) int64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int64(a[i]) * int64(b[i])
		s1 += int64(a[i+1]) * int64(b[i+1])
		s2 += int64(a[i+2]) * int64(b[i+2])
		s3 += int64(a[i+3]) * int64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int64(a[i]) * int64(b[i])
	}
	return s0 + s1 + s2 + s3
}

// legacyNewGraph builds the graph over d's vectors. It checks ctx between
// insertions.
func legacyNewGraph(ctx context.Context, d *Dense, opts GraphOptions) (*Graph, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	n := d.Len()
	g := &Graph{d: d, opts: opts, level: make([]int8, n), links0: make([]int32, n*2*opts.M),
		count0: make([]uint8, n), upStart: make([]int32, n), entry: -1, visits: &sync.Pool{}}
	for r := range n {
		g.level[r] = -1
		if d.vecs[r] != nil {
			g.level[r] = levelOf(d.ids[r], opts.Seed, opts.M)
		}
		g.upStart[r] = int32(len(g.upper))
		for range max(g.level[r], 0) {
			g.upper = append(g.upper, nil)
		}
	}
	vs := newLVisitSet(n)
	for r := range n {
		if r%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if g.level[r] >= 0 {
			g.legacyInsert(int32(r), vs)
		}
	}
	g.legacyAdoptOrphans()
	return g, nil
}

// adoptOrphans links every layer-0 node that pruning left with no inbound
// link (no walk can reach it) from the nearest of its own neighbours: into a
// free slot, or in place of that neighbour's farthest link whose target has
// another inbound link. Orphans are taken in row order.
func (g *Graph) legacyAdoptOrphans() {
	in := g.inDegree0()
	for r := range g.level {
		o := int32(r)
		if g.level[r] < 0 || in[o] > 0 || o == g.entry {
			continue
		}
		v := g.d.vecs[o]
		var ns []lcand
		for _, x := range g.links(o, 0) {
			ns = append(ns, g.lcand(v, x))
		}
		sortLCands(g, ns)
		for _, n := range ns {
			x := n.row
			cur := g.links(x, 0)
			if len(cur) < g.maxLinks(0) {
				g.setLinks(x, 0, append(cur[:len(cur):len(cur)], o))
				in[o]++
				break
			}
			xv := g.d.vecs[x]
			worst := -1
			var worstC lcand
			for i, y := range cur {
				c := g.lcand(xv, y)
				if in[y] > 1 && (worst < 0 || g.lcloser(worstC, c)) {
					worst, worstC = i, c
				}
			}
			if worst >= 0 {
				in[cur[worst]]--
				cur[worst] = o // cur aliases x's stored links
				in[o]++
				break
			}
		}
	}
}

// lcand is a node and its similarity to a query: dot with the query, compared
// through the node's norm (see moreSimilar).
type lcand struct {
	row int32
	dot int64
}

// closer reports whether a is nearer the query than b: higher exact cosine,
// then lower row (chunk ID).
func (g *Graph) lcloser(a, b lcand) bool {
	c := moreSimilar(DenseHit{Score: a.dot, Norm2: g.d.norm2[a.row]}, DenseHit{Score: b.dot, Norm2: g.d.norm2[b.row]})
	return c > 0 || c == 0 && a.row < b.row
}

func (g *Graph) lcand(q []int8, r int32) lcand { return lcand{row: r, dot: legacyDot(q, g.d.vecs[r])} }

// insert links row r into the graph.
func (g *Graph) legacyInsert(r int32, vs *lvisitSet) {
	q := g.d.vecs[r]
	lvl := int(g.level[r])
	if g.entry < 0 {
		g.entry, g.maxLevel = r, lvl
		return
	}
	eps := []lcand{g.lcand(q, g.entry)}
	for l := g.maxLevel; l > lvl; l-- {
		eps = g.legacySearchLayer(q, eps, 1, l, nil, vs, nil)
	}
	for l := min(lvl, g.maxLevel); l >= 0; l-- {
		w := g.legacySearchLayer(q, eps, g.opts.EfConstruction, l, nil, vs, nil)
		nb := g.legacySelect(q, w, g.opts.M)
		ls := make([]int32, len(nb))
		for i, c := range nb {
			ls[i] = c.row
		}
		g.setLinks(r, l, ls)
		for _, e := range ls {
			g.legacyLink(e, r, l)
		}
		eps = w
	}
	if lvl > g.maxLevel {
		g.entry, g.maxLevel = r, lvl
	}
}

// link adds r to e's links on layer l, pruning e's list by the selection
// heuristic when it overflows.
func (g *Graph) legacyLink(e, r int32, l int) {
	cur := g.links(e, l)
	if len(cur) < g.maxLinks(l) {
		g.setLinks(e, l, append(cur[:len(cur):len(cur)], r))
		return
	}
	v := g.d.vecs[e]
	cs := make([]lcand, 0, len(cur)+1)
	for _, x := range append(cur[:len(cur):len(cur)], r) {
		cs = append(cs, g.lcand(v, x))
	}
	sortLCands(g, cs)
	nb := g.legacySelect(v, cs, g.maxLinks(l))
	ls := make([]int32, len(nb))
	for i, c := range nb {
		ls[i] = c.row
	}
	g.setLinks(e, l, ls)
}

// selectNeighbors is the paper's heuristic (algorithm 4): walking ws nearest
// first, keep a candidate only if it is nearer the query than to every one
// already kept, so links spread in direction instead of clustering. ws must
// be sorted nearest first; q is the vector the similarities in ws are to.
func (g *Graph) legacySelect(q []int8, ws []lcand, m int) []lcand {
	out := make([]lcand, 0, m)
	var pruned []lcand
	nq := legacyDot(q, q)
	for _, c := range ws {
		if len(out) == m {
			break
		}
		keep := true
		cv := g.d.vecs[c.row]
		for _, s := range out {
			// cos(c,q) vs cos(c,s); |c| is common: compare dot/sqrt(norm).
			toS := DenseHit{Score: legacyDot(cv, g.d.vecs[s.row]), Norm2: g.d.norm2[s.row]}
			if moreSimilar(toS, DenseHit{Score: c.dot, Norm2: nq}) > 0 {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	// Fill what the heuristic left empty with the nearest it passed over
	// (the paper's keepPrunedConnections): otherwise a node near a tight
	// group can end with so few links that the walk never reaches it.
	for _, c := range pruned {
		if len(out) == m {
			break
		}
		out = append(out, c)
	}
	return out
}

// searchLayer is the paper's beam search (algorithm 2) on layer l from the
// entry points eps, with a beam of ef. With admit set, only admitted nodes
// enter the result, while every node may be walked through: the search never
// post-filters, it keeps walking until it holds ef admitted nodes whose worst
// is nearer than anything left to expand, or the layer is exhausted. The
// result is sorted nearest first.
func (g *Graph) legacySearchLayer(q []int8, eps []lcand, ef, l int, admit func(row int) bool, vs *lvisitSet, st *GraphStats) []lcand {
	vs.next()
	var todo, res lcandHeap // todo: nearest on top; res: farthest on top
	todo.g, todo.farTop = g, false
	res.g, res.farTop = g, true
	for _, e := range eps {
		if vs.seen(e.row) {
			continue
		}
		todo.push(e)
		if admit == nil || admit(int(e.row)) {
			res.push(e)
		}
	}
	for len(todo.c) > 0 {
		c := todo.pop()
		if len(res.c) >= ef && g.lcloser(res.top(), c) {
			break
		}
		for _, x := range g.links(c.row, l) {
			if vs.seen(x) {
				continue
			}
			n := g.lcand(q, x)
			if st != nil {
				st.Visited++
			}
			if len(res.c) < ef || g.lcloser(n, res.top()) {
				todo.push(n)
				if admit == nil || admit(int(x)) {
					res.push(n)
					if len(res.c) > ef {
						res.pop()
					}
				}
			}
		}
	}
	out := res.c
	sortLCands(g, out)
	return out
}

// lcandHeap is a binary heap of candidates: nearest on top, or farthest on
// top when farTop is set.
type lcandHeap struct {
	g      *Graph
	c      []lcand
	farTop bool
}

func (h *lcandHeap) above(a, b lcand) bool {
	if h.farTop {
		return h.g.lcloser(b, a)
	}
	return h.g.lcloser(a, b)
}

func (h *lcandHeap) top() lcand { return h.c[0] }

func (h *lcandHeap) push(x lcand) {
	h.c = append(h.c, x)
	i := len(h.c) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.above(h.c[i], h.c[p]) {
			break
		}
		h.c[i], h.c[p] = h.c[p], h.c[i]
		i = p
	}
}

func (h *lcandHeap) pop() lcand {
	top := h.c[0]
	last := len(h.c) - 1
	h.c[0] = h.c[last]
	h.c = h.c[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.above(h.c[l], h.c[m]) {
			m = l
		}
		if r < last && h.above(h.c[r], h.c[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.c[i], h.c[m] = h.c[m], h.c[i]
		i = m
	}
	return top
}

// sortCands sorts nearest first.
func sortLCands(g *Graph, cs []lcand) {
	slices.SortFunc(cs, func(a, b lcand) int {
		switch {
		case g.lcloser(a, b):
			return -1
		case g.lcloser(b, a):
			return 1
		}
		return 0 // the same row
	})
}

// lvisitSet marks visited rows with an epoch, so clearing it is O(1).
type lvisitSet struct {
	mark  []uint32
	epoch uint32
}

func newLVisitSet(n int) *lvisitSet { return &lvisitSet{mark: make([]uint32, n)} }

func (v *lvisitSet) next() {
	v.epoch++
	if v.epoch == 0 { // wrapped: clear once every 2^32 searches
		clear(v.mark)
		v.epoch = 1
	}
}

// seen marks r and reports whether it was already marked.
func (v *lvisitSet) seen(r int32) bool {
	if v.mark[r] == v.epoch {
		return true
	}
	v.mark[r] = v.epoch
	return false
}
