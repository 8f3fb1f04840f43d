package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/evpack/evpack/internal/fsutil"
)

// GraphOptions configure the HNSW graph. The zero value means the defaults;
// NewGraph validates them. Options are plain values: print them with String.
type GraphOptions struct {
	// M is how many links a node keeps per layer above 0; layer 0 keeps 2M.
	// Levels fall off by 1/2^floor(log2 M) per layer.
	M int
	// EfConstruction is the beam width while a node is inserted.
	EfConstruction int
	// EfSearch is the beam width of a query, raised to the number of hits
	// asked for when that is larger.
	EfSearch int
	// Seed is mixed into the hash of a chunk ID that sets its level.
	Seed uint64
	// ExactFactor sets when a query scans its eligible chunks exactly
	// instead of walking the graph: when eligible² < ExactFactor × indexed
	// (see ExactBelow); -1 means never.
	ExactFactor int
}

// Defaults for GraphOptions, chosen from the measurements in
// docs/benchmarks.md (recall@10 against the exact scan >= 0.98 on the ObliQA
// GloVe vectors).
const (
	DefaultGraphM              = 16
	DefaultGraphEfConstruction = 128
	DefaultGraphEfSearch       = 128
	DefaultGraphSeed           = 1
	DefaultGraphExactFactor    = 2000
)

// ErrGraphOptions reports graph options out of range.
var ErrGraphOptions = errors.New("retrieve: bad graph options")

// WithDefaults returns o with its zero fields set to the defaults, or an
// error naming the first field out of range.
func (o GraphOptions) WithDefaults() (GraphOptions, error) {
	if o.M == 0 {
		o.M = DefaultGraphM
	}
	if o.EfConstruction == 0 {
		o.EfConstruction = DefaultGraphEfConstruction
	}
	if o.EfSearch == 0 {
		o.EfSearch = DefaultGraphEfSearch
	}
	if o.Seed == 0 {
		o.Seed = DefaultGraphSeed
	}
	if o.ExactFactor == 0 {
		o.ExactFactor = DefaultGraphExactFactor
	}
	switch {
	case o.M < 2 || o.M > 64:
		return o, fmt.Errorf("%w: M %d not in [2, 64]", ErrGraphOptions, o.M)
	case o.EfConstruction < o.M || o.EfConstruction > 1<<16:
		return o, fmt.Errorf("%w: EfConstruction %d not in [M=%d, 65536]", ErrGraphOptions, o.EfConstruction, o.M)
	case o.EfSearch < 1 || o.EfSearch > 1<<16:
		return o, fmt.Errorf("%w: EfSearch %d not in [1, 65536]", ErrGraphOptions, o.EfSearch)
	case o.ExactFactor < -1:
		return o, fmt.Errorf("%w: ExactFactor %d (want -1 for never, or > 0)", ErrGraphOptions, o.ExactFactor)
	}
	return o, nil
}

// String prints the options as a pack fingerprint records them.
func (o GraphOptions) String() string {
	return fmt.Sprintf("hnsw m=%d ef_construction=%d ef_search=%d seed=%d exact_factor=%d", o.M, o.EfConstruction, o.EfSearch, o.Seed, o.ExactFactor)
}

// ExactBelow returns the eligible count below which a query over indexed
// vectors should scan them exactly rather than walk the graph: the least E
// with E² >= ExactFactor × indexed, or 0 when ExactFactor is -1 (never). The
// filtered walk costs about ef/share vector comparisons and the scan
// share×indexed, so they cross where eligible² is a constant times indexed;
// the constant is measured (docs/benchmarks.md, "HNSW").
func (o GraphOptions) ExactBelow(indexed int) int {
	if o.ExactFactor == -1 {
		return 0
	}
	p := int64(o.ExactFactor) * int64(indexed)
	e := int64(math.Sqrt(float64(p)))
	for e*e < p {
		e++
	}
	for e > 0 && (e-1)*(e-1) >= p {
		e--
	}
	return int(e)
}

// Graph is an HNSW index (Malkov and Yashunin, 2018) over the vectors of a
// Dense index, written for replay: a node's level comes from a seeded hash of
// its chunk ID, nodes are inserted in chunk-ID order, the entry point is the
// first node of the highest level, and every distance comparison is the exact
// integer cosine comparison of the exact scan with ties broken by chunk ID.
// Nothing depends on map order, the clock or floating-point contraction, so
// the same vectors and options build the same graph on every machine, and a
// query walks it the same way every time.
//
// Invariant: a search returns hits in the exact scan's order (cosine
// descending, then chunk ID); it may miss chunks the exact scan finds, never
// the other way round, and never returns a chunk its admit func refuses.
//
// Why not github.com/coder/hnsw, which the original design chose
// (docs/design.md, section 6): through its public API it cannot be made
// replayable or accurate. Its layers are entered at whichever node a Go map
// range yields first, in Add and in Search, and its walk stops at the first
// expansion that does not improve the single best hit; on the ObliQA
// vectors it reaches recall@10 0.42 against the exact scan at k=256 and
// 0.66 at k=1024 (then slower than the scan), where this graph reaches
// 0.998 in 0.31 of the scan's time (docs/benchmarks.md). It remains the
// named peer in BenchmarkCoderHNSWVsExact.
//
// A Graph is immutable once built; Search is safe for concurrent use.
type Graph struct {
	d     *Dense
	opts  GraphOptions
	level []int8 // per row; -1: no vector, no node
	// links0 holds layer 0: row r's links are links0[r*2M : r*2M+count0[r]].
	links0 []int32
	count0 []uint8
	// Layers above 0: row r's list for layer l >= 1 is upper[upStart[r]+l-1].
	upStart  []int32
	upper    [][]int32
	entry    int32 // -1: empty
	maxLevel int
	visits   *sync.Pool // *visitSet, shared with WithEfSearch copies
}

// GraphStats says what one search did, for the trace.
type GraphStats struct {
	Ef      int // beam width of the layer-0 search
	Visited int // vectors compared with the query
}

// levelOf is a node's level: with hash bits uniform, P(level >= l) is
// 2^(-l*b) for b = floor(log2 M), the paper's 1/ln(M) when M is a power of 2.
func levelOf(id string, seed uint64, m int) int8 {
	h := fnv.New64a()
	h.Write([]byte(id))
	x := h.Sum64() ^ seed
	// splitmix64's finalizer: FNV's high bits alone are poorly mixed.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	b := bits.Len(uint(m)) - 1
	return int8(min(bits.LeadingZeros64(x)/b, 30))
}

// NewGraph builds the graph over d's vectors. It checks ctx between
// insertions.
func NewGraph(ctx context.Context, d *Dense, opts GraphOptions) (*Graph, error) {
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
	vs := newVisitSet(n)
	for r := range n {
		if r%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if g.level[r] >= 0 {
			g.insert(int32(r), vs)
		}
	}
	g.adoptOrphans()
	return g, nil
}

// adoptOrphans links every layer-0 node that pruning left with no inbound
// link (no walk can reach it) from the nearest of its own neighbours: into a
// free slot, or in place of that neighbour's farthest link whose target has
// another inbound link. Orphans are taken in row order.
func (g *Graph) adoptOrphans() {
	in := g.inDegree0()
	for r := range g.level {
		o := int32(r)
		if g.level[r] < 0 || in[o] > 0 || o == g.entry {
			continue
		}
		v := g.d.vecs[o]
		var ns []cand
		for _, x := range g.links(o, 0) {
			ns = append(ns, g.cand(v, x))
		}
		sortCands(g, ns)
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
			var worstC cand
			for i, y := range cur {
				c := g.cand(xv, y)
				if in[y] > 1 && (worst < 0 || g.closer(worstC, c)) {
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

// inDegree0 counts the layer-0 links into each row. Links must be in range.
func (g *Graph) inDegree0() []int32 {
	in := make([]int32, len(g.level))
	for r := range g.level {
		for _, x := range g.links(int32(r), 0) {
			in[x]++
		}
	}
	return in
}

// WithEfSearch returns a graph that shares g's links and searches with beam
// width ef: the search-time knob, which needs no rebuild.
func (g *Graph) WithEfSearch(ef int) (*Graph, error) {
	o := g.opts
	o.EfSearch = ef
	if _, err := o.WithDefaults(); err != nil || ef == 0 {
		return nil, fmt.Errorf("%w: EfSearch %d not in [1, 65536]", ErrGraphOptions, ef)
	}
	if ef == g.opts.EfSearch {
		return g, nil
	}
	return &Graph{d: g.d, opts: o, level: g.level, links0: g.links0, count0: g.count0,
		upStart: g.upStart, upper: g.upper, entry: g.entry, maxLevel: g.maxLevel, visits: g.visits}, nil
}

// Options returns the graph's options with defaults filled in.
func (g *Graph) Options() GraphOptions { return g.opts }

func (g *Graph) links(r int32, l int) []int32 {
	if l == 0 {
		base := int(r) * 2 * g.opts.M
		return g.links0[base : base+int(g.count0[r])]
	}
	return g.upper[int(g.upStart[r])+l-1]
}

func (g *Graph) setLinks(r int32, l int, ls []int32) {
	if l == 0 {
		base := int(r) * 2 * g.opts.M
		copy(g.links0[base:base+2*g.opts.M], ls)
		g.count0[r] = uint8(len(ls))
		return
	}
	g.upper[int(g.upStart[r])+l-1] = append(g.upper[int(g.upStart[r])+l-1][:0], ls...)
}

func (g *Graph) maxLinks(l int) int {
	if l == 0 {
		return 2 * g.opts.M
	}
	return g.opts.M
}

// cand is a node and its similarity to a query: dot with the query, compared
// through the node's norm (see moreSimilar).
type cand struct {
	row int32
	dot int64
}

// closer reports whether a is nearer the query than b: higher exact cosine,
// then lower row (chunk ID).
func (g *Graph) closer(a, b cand) bool {
	c := moreSimilar(DenseHit{Score: a.dot, Norm2: g.d.norm2[a.row]}, DenseHit{Score: b.dot, Norm2: g.d.norm2[b.row]})
	return c > 0 || c == 0 && a.row < b.row
}

func (g *Graph) cand(q []int8, r int32) cand { return cand{row: r, dot: Dot(q, g.d.vecs[r])} }

// insert links row r into the graph.
func (g *Graph) insert(r int32, vs *visitSet) {
	q := g.d.vecs[r]
	lvl := int(g.level[r])
	if g.entry < 0 {
		g.entry, g.maxLevel = r, lvl
		return
	}
	eps := []cand{g.cand(q, g.entry)}
	for l := g.maxLevel; l > lvl; l-- {
		eps = g.searchLayer(q, eps, 1, l, nil, vs, nil)
	}
	for l := min(lvl, g.maxLevel); l >= 0; l-- {
		w := g.searchLayer(q, eps, g.opts.EfConstruction, l, nil, vs, nil)
		nb := g.selectNeighbors(q, w, g.opts.M)
		ls := make([]int32, len(nb))
		for i, c := range nb {
			ls[i] = c.row
		}
		g.setLinks(r, l, ls)
		for _, e := range ls {
			g.link(e, r, l)
		}
		eps = w
	}
	if lvl > g.maxLevel {
		g.entry, g.maxLevel = r, lvl
	}
}

// link adds r to e's links on layer l, pruning e's list by the selection
// heuristic when it overflows.
func (g *Graph) link(e, r int32, l int) {
	cur := g.links(e, l)
	if len(cur) < g.maxLinks(l) {
		g.setLinks(e, l, append(cur[:len(cur):len(cur)], r))
		return
	}
	v := g.d.vecs[e]
	cs := make([]cand, 0, len(cur)+1)
	for _, x := range append(cur[:len(cur):len(cur)], r) {
		cs = append(cs, g.cand(v, x))
	}
	sortCands(g, cs)
	nb := g.selectNeighbors(v, cs, g.maxLinks(l))
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
func (g *Graph) selectNeighbors(q []int8, ws []cand, m int) []cand {
	out := make([]cand, 0, m)
	var pruned []cand
	nq := Dot(q, q)
	for _, c := range ws {
		if len(out) == m {
			break
		}
		keep := true
		cv := g.d.vecs[c.row]
		for _, s := range out {
			// cos(c,q) vs cos(c,s); |c| is common: compare dot/sqrt(norm).
			toS := DenseHit{Score: Dot(cv, g.d.vecs[s.row]), Norm2: g.d.norm2[s.row]}
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
func (g *Graph) searchLayer(q []int8, eps []cand, ef, l int, admit func(row int) bool, vs *visitSet, st *GraphStats) []cand {
	vs.next()
	var todo, res candHeap // todo: nearest on top; res: farthest on top
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
		if len(res.c) >= ef && g.closer(res.top(), c) {
			break
		}
		for _, x := range g.links(c.row, l) {
			if vs.seen(x) {
				continue
			}
			n := g.cand(q, x)
			if st != nil {
				st.Visited++
			}
			if len(res.c) < ef || g.closer(n, res.top()) {
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
	sortCands(g, out)
	return out
}

// Search returns up to n chunks admit accepts, nearest to q: the layers above
// 0 are descended greedily, then layer 0 is searched with a beam of
// max(EfSearch, n) that only admitted nodes enter.
func (g *Graph) Search(ctx context.Context, q []int8, admit func(row int) bool, n int) ([]DenseHit, GraphStats, error) {
	st := GraphStats{Ef: max(g.opts.EfSearch, n)}
	if q == nil || n <= 0 || g.entry < 0 {
		return nil, st, nil
	}
	if len(q) != len(g.d.vecs[g.entry]) {
		return nil, st, fmt.Errorf("%w: query has %d dimensions, the graph %d", ErrDims, len(q), len(g.d.vecs[g.entry]))
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	vs, _ := g.visits.Get().(*visitSet)
	if vs == nil {
		vs = newVisitSet(g.d.Len())
	}
	defer g.visits.Put(vs)
	eps := []cand{g.cand(q, g.entry)}
	st.Visited = 1
	for l := g.maxLevel; l > 0; l-- {
		eps = g.searchLayer(q, eps, 1, l, nil, vs, &st)
	}
	res := g.searchLayer(q, eps, st.Ef, 0, admit, vs, &st)
	res = res[:min(n, len(res))]
	hits := make([]DenseHit, len(res))
	for i, c := range res {
		hits[i] = DenseHit{ID: g.d.ids[c.row], Score: c.dot, Norm2: g.d.norm2[c.row]}
	}
	return hits, st, nil
}

// candHeap is a binary heap of candidates: nearest on top, or farthest on
// top when farTop is set.
type candHeap struct {
	g      *Graph
	c      []cand
	farTop bool
}

func (h *candHeap) above(a, b cand) bool {
	if h.farTop {
		return h.g.closer(b, a)
	}
	return h.g.closer(a, b)
}

func (h *candHeap) top() cand { return h.c[0] }

func (h *candHeap) push(x cand) {
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

func (h *candHeap) pop() cand {
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
func sortCands(g *Graph, cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case g.closer(a, b):
			return -1
		case g.closer(b, a):
			return 1
		}
		return 0 // the same row
	})
}

// visitSet marks visited rows with an epoch, so clearing it is O(1).
type visitSet struct {
	mark  []uint32
	epoch uint32
}

func newVisitSet(n int) *visitSet { return &visitSet{mark: make([]uint32, n)} }

func (v *visitSet) next() {
	v.epoch++
	if v.epoch == 0 { // wrapped: clear once every 2^32 searches
		clear(v.mark)
		v.epoch = 1
	}
}

// seen marks r and reports whether it was already marked.
func (v *visitSet) seen(r int32) bool {
	if v.mark[r] == v.epoch {
		return true
	}
	v.mark[r] = v.epoch
	return false
}

// graphMagic starts a stored graph ("evpack-graph/1").
const graphMagic = "EVPHNS1\n"

// ErrGraphFormat reports a stored graph that is truncated, corrupted, not in
// this format, or made over other vectors.
var ErrGraphFormat = errors.New("retrieve: bad graph file")

// Encode writes the graph in its stored form: magic, build settings, the
// checksum of the Dense index it was built over, entry point, then per row
// its level and its links per layer, then a BLAKE3-256 checksum of all of
// it. Search settings (EfSearch, ExactFactor) are not stored.
func (g *Graph) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(graphMagic)
	le := binary.LittleEndian
	binary.Write(&b, le, uint32(g.opts.M))
	binary.Write(&b, le, uint32(g.opts.EfConstruction))
	binary.Write(&b, le, g.opts.Seed)
	sum := g.d.Sum()
	b.Write(sum[:])
	binary.Write(&b, le, uint32(len(g.level)))
	binary.Write(&b, le, g.entry)
	binary.Write(&b, le, uint32(g.maxLevel))
	for r, lvl := range g.level {
		b.WriteByte(byte(lvl))
		for l := 0; l <= int(lvl); l++ {
			ls := g.links(int32(r), l)
			b.WriteByte(byte(len(ls)))
			binary.Write(&b, le, ls)
		}
	}
	return fsutil.Seal(b.Bytes())
}

// DecodeGraph reads a stored graph over d with search settings from opts
// (its build settings must match the stored ones); path names it in errors.
func DecodeGraph(path string, raw []byte, d *Dense, opts GraphOptions) (*Graph, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrGraphFormat, path, fmt.Sprintf(format, args...))
	}
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	payload, err := fsutil.Unseal(raw, graphMagic, 0)
	if err != nil {
		return nil, bad("evpack graph: %v", err)
	}
	r := bytes.NewReader(payload)
	le := binary.LittleEndian
	var m, efc, n, maxLevel uint32
	var seed uint64
	var dsum [32]byte
	var entry int32
	for _, v := range []any{&m, &efc, &seed, &dsum, &n, &entry, &maxLevel} {
		if err := binary.Read(r, le, v); err != nil {
			return nil, bad("header: %v", err)
		}
	}
	switch {
	case int(m) != opts.M || int(efc) != opts.EfConstruction || seed != opts.Seed:
		return nil, bad("built with m=%d ef_construction=%d seed=%d, options ask %s", m, efc, seed, opts)
	case dsum != d.Sum():
		return nil, bad("built over other vectors")
	case int(n) != d.Len():
		return nil, bad("%d rows, the dense index has %d", n, d.Len())
	case entry < -1 || entry >= int32(n) || maxLevel > 30:
		return nil, bad("entry %d, top level %d", entry, maxLevel)
	}
	g := &Graph{d: d, opts: opts, level: make([]int8, n), links0: make([]int32, int(n)*2*opts.M),
		count0: make([]uint8, n), upStart: make([]int32, n), entry: entry, maxLevel: int(maxLevel), visits: &sync.Pool{}}
	for row := range int(n) {
		lvl, err := r.ReadByte()
		if err != nil {
			return nil, bad("row %d: %v", row, err)
		}
		g.level[row] = int8(lvl)
		if g.level[row] < -1 || g.level[row] > int8(maxLevel) || (g.level[row] >= 0) != (d.vecs[row] != nil) {
			return nil, bad("row %d: level %d", row, g.level[row])
		}
		g.upStart[row] = int32(len(g.upper))
		for l := 0; l <= int(g.level[row]); l++ {
			c, err := r.ReadByte()
			if err != nil {
				return nil, bad("row %d layer %d: %v", row, l, err)
			}
			if int(c) > g.maxLinks(l) {
				return nil, bad("row %d layer %d: %d links", row, l, c)
			}
			ls := make([]int32, c)
			if err := binary.Read(r, le, ls); err != nil {
				return nil, bad("row %d layer %d: %v", row, l, err)
			}
			if l > 0 {
				g.upper = append(g.upper, ls)
			}
			g.setLinks(int32(row), l, ls)
		}
	}
	if r.Len() != 0 {
		return nil, bad("%d bytes after the last row", r.Len())
	}
	if err := g.Check(); err != nil { // links, levels, entry, reach
		return nil, fmt.Errorf("%w: %s: %w", ErrGraphFormat, path, err)
	}
	return g, nil
}

// Check verifies the graph's invariants: a node for exactly the rows with a
// vector; links to other nodes of the same layer, at most the layer's cap;
// the entry point on the top level; and an inbound layer-0 link for every
// node but the entry, so that a walk can reach it.
func (g *Graph) Check() error {
	for row, lvl := range g.level {
		if (lvl >= 0) != (g.d.vecs[row] != nil) || int(lvl) > g.maxLevel {
			return fmt.Errorf("row %d (%s): level %d", row, g.d.ids[row], lvl)
		}
		for l := 0; l <= int(lvl); l++ {
			ls := g.links(int32(row), l)
			if len(ls) > g.maxLinks(l) {
				return fmt.Errorf("row %d layer %d: %d links", row, l, len(ls))
			}
			for _, x := range ls {
				if x < 0 || int(x) >= len(g.level) || x == int32(row) || int(g.level[x]) < l {
					return fmt.Errorf("row %d layer %d: link to %d, not a node of that layer", row, l, x)
				}
			}
		}
	}
	if (g.entry < 0) != (g.nodes() == 0) || g.entry >= 0 && int(g.level[g.entry]) != g.maxLevel {
		return fmt.Errorf("entry %d does not top the graph", g.entry)
	}
	in := g.inDegree0() // links are in range now
	for row, lvl := range g.level {
		if lvl >= 0 && in[row] == 0 && int32(row) != g.entry {
			return fmt.Errorf("row %d (%s): no inbound link, unreachable", row, g.d.ids[row])
		}
	}
	return nil
}

func (g *Graph) nodes() int {
	n := 0
	for _, l := range g.level {
		if l >= 0 {
			n++
		}
	}
	return n
}
