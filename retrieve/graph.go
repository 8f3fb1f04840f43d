package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	// Build names how the links are made: BuildSequential (the default;
	// "" means it) or a round build, "rounds/N" (see BuildRounds). It is
	// part of the graph, like M: two builds make different links from the
	// same vectors, while each makes the same links on every machine at any
	// number of cores.
	Build string
}

// BuildSequential inserts the nodes one at a time in chunk-ID order, each
// searching the graph of every node before it: the paper's algorithm, the
// default, and the build of every graph stored before builds had names. It
// runs on one core.
const BuildSequential = "sequential"

// BuildRounds returns the name of the round build with n nodes a round,
// "rounds/n" (n in [2, 65536]). Nodes are inserted in rounds of n
// consecutive rows in chunk-ID order. Every node of a round searches the
// graph as it stood at the round's start, all of them at once on every core,
// and also weighs, by exact distance, the nodes of its round before it;
// then the round's links, and the links back that existing nodes take (with
// the pruning of their lists), are applied as the sequential build would
// apply them, node after node. What each node sees is fixed by the rows
// alone, never by which core ran what, so the graph has the same bytes at
// any GOMAXPROCS. It differs from the sequential graph only in that a
// node's search cannot walk through the nodes of its own round; the recall
// this costs is measured in docs/benchmarks.md.
func BuildRounds(n int) string { return "rounds/" + strconv.Itoa(n) }

// roundSize returns the nodes per round of a build name: 1 for the
// sequential build (rounds of one node are the sequential build), or false
// for a name that is not a build.
func roundSize(build string) (int, bool) {
	if build == BuildSequential {
		return 1, true
	}
	s, ok := strings.CutPrefix(build, "rounds/")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 2 || n > 1<<16 || BuildRounds(n) != build {
		return 0, false
	}
	return n, true
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
	// DefaultGraphRounds is the round size of BuildRounds that the
	// measurements in docs/benchmarks.md name: see there.
	DefaultGraphRounds = 64
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
	if o.Build == "" {
		o.Build = BuildSequential
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
	if _, ok := roundSize(o.Build); !ok {
		return o, fmt.Errorf("%w: Build %q (want %q or \"rounds/N\", N in [2, 65536])", ErrGraphOptions, o.Build, BuildSequential)
	}
	return o, nil
}

// String prints the options as a pack fingerprint records them. The build
// is named only when it is not the sequential one, so that the options of a
// sequential graph print as they did before builds had names, and the packs
// that record them stay byte for byte the same.
func (o GraphOptions) String() string {
	s := fmt.Sprintf("hnsw m=%d ef_construction=%d ef_search=%d seed=%d exact_factor=%d", o.M, o.EfConstruction, o.EfSearch, o.Seed, o.ExactFactor)
	if o.Build != "" && o.Build != BuildSequential {
		s += " build=" + o.Build
	}
	return s
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
// Nothing depends on map order, the clock, floating-point contraction or the
// number of cores, so the same vectors and options build the same graph on
// every machine, and a query walks it the same way every time. The
// sequential build (the default) inserts one node at a time; a round build
// (GraphOptions.Build, BuildRounds) inserts rounds of nodes on all cores and
// makes other links, the same ones at any core count.
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
	visits   *sync.Pool // *scratch, shared with WithEfSearch copies
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

// NewGraph builds the graph over d's vectors. A round build (opts.Build)
// runs on GOMAXPROCS cores, and the graph is the same at any number. It
// checks ctx between rounds.
func NewGraph(ctx context.Context, d *Dense, opts GraphOptions) (*Graph, error) {
	return newGraph(ctx, d, opts, runtime.GOMAXPROCS(0))
}

// newGraph is NewGraph on a given number of workers, which tests vary to
// show that it changes nothing.
func newGraph(ctx context.Context, d *Dense, opts GraphOptions, workers int) (*Graph, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	g := emptyGraph(d, opts)
	size, _ := roundSize(opts.Build)
	if err := newBuilder(g, size, workers).insert(ctx, 0, d.Len()); err != nil {
		return nil, err
	}
	g.adoptOrphans()
	return g, nil
}

// emptyGraph returns a graph over d with every node's level set and no
// links.
func emptyGraph(d *Dense, opts GraphOptions) *Graph {
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
	return g
}

// newBuilder returns a builder of rounds of size rows on workers cores.
func newBuilder(g *Graph, size, workers int) *builder {
	if size == 1 {
		// A round of one node has one search, and its back links are too
		// little work to share out: handing them to another core costs
		// more than it saves (measured: 0.55 to 0.75 times the rate, on 2
		// cores, at 20,000 nodes).
		workers = 1
	}
	return &builder{g: g, size: size, workers: max(workers, 1), plans: make([]nodePlan, size)}
}

// insert inserts rows [from, to) in rounds, checking ctx about every 1024
// rows.
func (b *builder) insert(ctx context.Context, from, to int) error {
	for start := from; start < to; start += b.size {
		if (start-from)%1024 < b.size {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b.round(start, min(start+b.size, to))
	}
	return nil
}

// builder holds what a build reuses from round to round: a scratch per
// worker and a plan per node of a round.
type builder struct {
	size    int // rows per round
	g       *Graph
	workers int
	scratch []*scratch // one per worker, made on first use
	plans   []nodePlan
	backs   []backLink
	groups  []int // start of each target's run in backs, then len(backs)
}

// nodePlan is what a node's search decided: its links per layer.
type nodePlan struct {
	links [][]int32
}

// backLink asks that node e take a link to node r on layer l.
type backLink struct {
	e, r int32
	l    int32
}

// round inserts rows [start, end): see BuildRounds; the sequential build is
// rounds of one row. Each step is a function of the graph as the step
// before left it, never of which worker does what:
//
//  1. every node plans its links per layer against the graph as it stood at
//     the round's start (read only), and against the round's nodes before
//     it;
//  2. every node takes its planned links;
//  3. every node a planned link points to takes a link back, pruning its
//     list when full. The back links into one list are applied in the
//     order of their sources (the order of a node-by-node insertion), and
//     lists are independent of each other, so the lists are shared out
//     among the workers;
//  4. a node above the top level becomes the entry point, the first in
//     row order.
func (b *builder) round(start, end int) {
	g := b.g
	b.parallel(end-start, func(sc *scratch, i int) {
		if r := int32(start + i); g.level[r] >= 0 {
			g.plan(r, int32(start), sc, &b.plans[i])
		}
	})
	backs := b.backs[:0]
	for r := int32(start); r < int32(end); r++ {
		for l := 0; l <= int(g.level[r]); l++ {
			ls := b.plans[int(r)-start].links[l]
			g.setLinks(r, l, ls)
			for _, e := range ls {
				backs = append(backs, backLink{e: e, r: r, l: int32(l)})
			}
		}
	}
	// Sources are appended in row order, so a stable sort by list keeps
	// each list's back links in that order.
	slices.SortStableFunc(backs, func(x, y backLink) int {
		if x.e != y.e {
			return cmpInt(int(x.e), int(y.e))
		}
		return cmpInt(int(x.l), int(y.l))
	})
	groups := b.groups[:0]
	for i, bl := range backs {
		if i == 0 || bl.e != backs[i-1].e || bl.l != backs[i-1].l {
			groups = append(groups, i)
		}
	}
	groups = append(groups, len(backs))
	b.backs, b.groups = backs, groups
	b.parallel(len(groups)-1, func(sc *scratch, k int) {
		for _, bl := range backs[groups[k]:groups[k+1]] {
			g.link(bl.e, bl.r, int(bl.l), sc)
		}
	})
	for r := int32(start); r < int32(end); r++ {
		if lvl := int(g.level[r]); lvl >= 0 && (g.entry < 0 || lvl > g.maxLevel) {
			g.entry, g.maxLevel = r, lvl
		}
	}
}

// parallel calls f(sc, i) for i in [0, n) on up to b.workers goroutines,
// each with its own scratch. f must write only what item i owns.
func (b *builder) parallel(n int, f func(sc *scratch, i int)) {
	w := min(b.workers, n)
	for len(b.scratch) < max(w, 1) {
		b.scratch = append(b.scratch, b.g.newScratch())
	}
	if w <= 1 {
		for i := range n {
			f(b.scratch[0], i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range w {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(b.scratch[k], i)
			}
		})
	}
	wg.Wait()
}

// plan finds row r's links on each of its layers: the paper's insertion
// (algorithm 1) against the graph as it stands, whose nodes are the rows
// before start, with the nodes of rows [start, r) (its round, not linked
// yet) weighed as candidates too, by exact distance. With start == r it is
// the paper's insertion exactly.
func (g *Graph) plan(r, start int32, sc *scratch, p *nodePlan) {
	q := g.d.vecAt(r)
	lvl := int(g.level[r])
	for len(p.links) <= lvl {
		p.links = append(p.links, nil)
	}
	peers := sc.peers[:0]
	for j := start; j < r; j++ {
		if g.level[j] >= 0 {
			peers = append(peers, g.cand(q, j))
		}
	}
	sc.peers = peers
	// eps: the entry points of the next layer's search, the result of the
	// layer above; it and the next result take turns in sc.layer.
	var eps []cand
	k := 0
	search := func(ef, l int) {
		w := g.searchLayer(q, eps, ef, l, nil, sc, nil, sc.layer[1-k][:0])
		sc.layer[1-k], k, eps = w, 1-k, w
	}
	if g.entry >= 0 {
		eps = append(sc.layer[k][:0], g.cand(q, g.entry))
		sc.layer[k] = eps
		for l := g.maxLevel; l > lvl; l-- {
			search(1, l)
		}
	}
	for l := lvl; l >= 0; l-- {
		var ws []cand
		if g.entry >= 0 && l <= g.maxLevel {
			search(g.opts.EfConstruction, l)
			ws = eps
		}
		merged := false
		for _, c := range peers {
			if int(g.level[c.row]) >= l {
				if !merged {
					ws, merged = append(sc.merged[:0], ws...), true
				}
				ws = append(ws, c)
			}
		}
		if merged {
			sortCands(g, ws)
			sc.merged = ws
		}
		nb := g.selectNeighbors(q, ws, g.opts.M, sc)
		ls := p.links[l][:0]
		for _, c := range nb {
			ls = append(ls, c.row)
		}
		p.links[l] = ls
	}
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
// through the node's norm (see moreSimilar), and key, which orders cands
// the same way up to rounding (see cosKey and closer).
type cand struct {
	row int32
	dot int64
	key float64
}

// cosKey is dot·|dot|/norm2, the signed square of the cosine times the
// query's squared norm, rounded: one correctly rounded division of exact
// integers (dot² < 2^53 for dims <= 5,792), so each key is within a few
// units in the last place of the true value on every CPU.
func cosKey(dot, norm2 int64) float64 {
	if dot == 0 {
		return 0 // norm2 may be 0 then
	}
	k := float64(dot) * float64(dot) / float64(norm2)
	if dot < 0 {
		return -k
	}
	return k
}

// keyTol is the relative gap between two keys beyond which rounding cannot
// have swapped them (their errors are below 2^-51 relative).
const keyTol = 0x1p-40

// closer reports whether a is nearer the query than b: higher exact cosine,
// then lower row (chunk ID). The keys decide when they are far enough apart
// that their rounding cannot matter, which is almost always; otherwise the
// exact 128-bit comparison does. So the answer is always the exact one, on
// every CPU, and the keys only make it cheap.
func (g *Graph) closer(a, b cand) bool {
	d, tol := a.key-b.key, keyTol*(math.Abs(a.key)+math.Abs(b.key))
	if d > tol {
		return true
	}
	if -d > tol {
		return false
	}
	c := moreSimilar(DenseHit{Score: a.dot, Norm2: g.d.norm2[a.row]}, DenseHit{Score: b.dot, Norm2: g.d.norm2[b.row]})
	return c > 0 || c == 0 && a.row < b.row
}

// prefetch fetches node r's vector and norm ahead of cand (see
// searchLayer).
func (g *Graph) prefetch(r int32) { prefetchRow(g.d.vecAt(r), &g.d.norm2[r]) }

func (g *Graph) cand(q []int8, r int32) cand {
	dot := Dot(q, g.d.vecAt(r))
	return cand{row: r, dot: dot, key: cosKey(dot, g.d.norm2[r])}
}

// scratch is the working memory of one search or one build worker, kept
// from one use to the next so that neither allocates per node.
type scratch struct {
	vs        *visitSet
	todo, res candHeap
	layer     [2][]cand // a layer's result and the next layer's (see plan)
	merged    []cand    // a layer's result with the round's nodes
	peers     []cand    // the round's nodes before the one planned
	sel, pass []cand    // selectNeighbors: kept, passed over
	cs        []cand    // link: a full list and the newcomer
	next      []int32   // searchLayer: the unvisited links of a node
	ls        []int32
}

func (g *Graph) newScratch() *scratch {
	return &scratch{vs: newVisitSet(g.d.Len()), todo: candHeap{g: g}, res: candHeap{g: g, farTop: true}}
}

// link adds r to e's links on layer l, pruning e's list by the selection
// heuristic when it overflows.
func (g *Graph) link(e, r int32, l int, sc *scratch) {
	cur := g.links(e, l)
	if len(cur) < g.maxLinks(l) {
		if l == 0 {
			g.links0[int(e)*2*g.opts.M+len(cur)] = r
			g.count0[e]++
		} else {
			i := int(g.upStart[e]) + l - 1
			g.upper[i] = append(g.upper[i], r)
		}
		return
	}
	v := g.d.vecAt(e)
	for _, x := range cur {
		g.prefetch(x) // as in searchLayer
	}
	cs := sc.cs[:0]
	for _, x := range cur {
		cs = append(cs, g.cand(v, x))
	}
	cs = append(cs, g.cand(v, r))
	sortCands(g, cs)
	sc.cs = cs
	nb := g.selectNeighbors(v, cs, g.maxLinks(l), sc)
	ls := sc.ls[:0]
	for _, c := range nb {
		ls = append(ls, c.row)
	}
	sc.ls = ls
	g.setLinks(e, l, ls)
}

// selectNeighbors is the paper's heuristic (algorithm 4): walking ws nearest
// first, keep a candidate only if it is nearer the query than to every one
// already kept, so links spread in direction instead of clustering. ws must
// be sorted nearest first; q is the vector the similarities in ws are to.
// The result lives in sc until its next use.
func (g *Graph) selectNeighbors(q []int8, ws []cand, m int, sc *scratch) []cand {
	out, pruned := sc.sel[:0], sc.pass[:0]
	nq := Dot(q, q)
	for _, c := range ws {
		if len(out) == m {
			break
		}
		keep := true
		cv := g.d.vecAt(c.row)
		for _, s := range out {
			// cos(c,q) vs cos(c,s); |c| is common: compare dot/sqrt(norm).
			toS := DenseHit{Score: Dot(cv, g.d.vecAt(s.row)), Norm2: g.d.norm2[s.row]}
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
	sc.sel, sc.pass = out, pruned
	return out
}

// searchLayer is the paper's beam search (algorithm 2) on layer l from the
// entry points eps, with a beam of ef. With admit set, only admitted nodes
// enter the result, while every node may be walked through: the search never
// post-filters, it keeps walking until it holds ef admitted nodes whose worst
// is nearer than anything left to expand, or the layer is exhausted. The
// result, sorted nearest first, is appended to dst, which must not share
// memory with eps.
func (g *Graph) searchLayer(q []int8, eps []cand, ef, l int, admit func(row int) bool, sc *scratch, st *GraphStats, dst []cand) []cand {
	vs := sc.vs
	vs.next()
	todo, res := &sc.todo, &sc.res // todo: nearest on top; res: farthest on top
	todo.c, res.c = todo.c[:0], res.c[:0]
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
		// Mark the unvisited neighbours and fetch their vectors ahead, so
		// that their cache misses overlap (each is one at scale); then
		// compare them in list order, as one loop over the list would.
		next := sc.next[:0]
		for _, x := range g.links(c.row, l) {
			if !vs.seen(x) {
				next = append(next, x)
				g.prefetch(x)
			}
		}
		sc.next = next
		for _, x := range next {
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
	out := append(dst, res.c...)
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
	sc, _ := g.visits.Get().(*scratch)
	if sc == nil {
		sc = g.newScratch()
	}
	defer g.visits.Put(sc)
	eps := append(sc.layer[0][:0], g.cand(q, g.entry))
	k := 0
	st.Visited = 1
	for l := g.maxLevel; l >= 0; l-- {
		ef := 1
		var admitL func(int) bool
		if l == 0 {
			ef, admitL = st.Ef, admit
		}
		w := g.searchLayer(q, eps, ef, l, admitL, sc, &st, sc.layer[1-k][:0])
		sc.layer[k], sc.layer[1-k] = eps, w
		k, eps = 1-k, w
	}
	res := eps[:min(n, len(eps))]
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

// visitSet marks visited rows with an epoch, so clearing it is O(1) but
// once in 255 searches. A byte a row keeps it small enough to stay in the
// cache at a million rows, where it is read at random for every link a
// walk meets.
type visitSet struct {
	mark  []uint8
	epoch uint8
}

func newVisitSet(n int) *visitSet { return &visitSet{mark: make([]uint8, n)} }

func (v *visitSet) next() {
	v.epoch++
	if v.epoch == 0 { // wrapped: clear once every 255 searches
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

// graphMagic starts a stored sequential graph ("evpack-graph/1"), and
// graphMagicNamed one of another build, whose header names it after the
// seed. The sequential build keeps the first form so that its graphs, stored
// before builds had names, read and write the same bytes.
const (
	graphMagic      = "EVPHNS1\n"
	graphMagicNamed = "EVPHNS2\n"
)

// ErrGraphFormat reports a stored graph that is truncated, corrupted, not in
// this format, or made over other vectors.
var ErrGraphFormat = errors.New("retrieve: bad graph file")

// Encode writes the graph in its stored form: magic, build settings (M,
// EfConstruction, Seed, and a byte-counted build name unless the build is
// sequential), the checksum of the Dense index it was built over, entry
// point, then per row its level and its links per layer, then a BLAKE3-256
// checksum of all of it. Search settings (EfSearch, ExactFactor) are not
// stored.
func (g *Graph) Encode() []byte {
	var b bytes.Buffer
	named := g.opts.Build != BuildSequential
	if named {
		b.WriteString(graphMagicNamed)
	} else {
		b.WriteString(graphMagic)
	}
	le := binary.LittleEndian
	binary.Write(&b, le, uint32(g.opts.M))
	binary.Write(&b, le, uint32(g.opts.EfConstruction))
	binary.Write(&b, le, g.opts.Seed)
	if named {
		b.WriteByte(byte(len(g.opts.Build))) // at most "rounds/65536"
		b.WriteString(g.opts.Build)
	}
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
	magic := graphMagic
	if bytes.HasPrefix(raw, []byte(graphMagicNamed)) {
		magic = graphMagicNamed
	}
	payload, err := fsutil.Unseal(raw, magic, 0)
	if err != nil {
		return nil, bad("evpack graph: %v", err)
	}
	r := bytes.NewReader(payload)
	le := binary.LittleEndian
	var m, efc, n, maxLevel uint32
	var seed uint64
	var dsum [32]byte
	var entry int32
	build := BuildSequential
	for _, v := range []any{&m, &efc, &seed, &build, &dsum, &n, &entry, &maxLevel} {
		if p, ok := v.(*string); ok {
			if magic == graphMagicNamed {
				c, err := r.ReadByte()
				name := make([]byte, c)
				if _, err2 := io.ReadFull(r, name); err != nil || err2 != nil {
					return nil, bad("header: build name: %v", errors.Join(err, err2))
				}
				*p = string(name)
			}
			continue
		}
		if err := binary.Read(r, le, v); err != nil {
			return nil, bad("header: %v", err)
		}
	}
	switch {
	case int(m) != opts.M || int(efc) != opts.EfConstruction || seed != opts.Seed || build != opts.Build:
		return nil, bad("built with m=%d ef_construction=%d seed=%d build=%s, options ask %s", m, efc, seed, build, opts)
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
