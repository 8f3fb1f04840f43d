package retrieve

import (
	"context"
	"math"
	"math/rand"

	"github.com/coder/hnsw"
)

// HNSWOptions configure the approximate dense index.
type HNSWOptions struct {
	M        int   // neighbours per node (default 16)
	EfSearch int   // candidate list size (default 64)
	Seed     int64 // level generation seed (default 1)
}

// HNSW is an approximate index over a Dense index's vectors, built with
// github.com/coder/hnsw: a seeded level generator, nodes inserted in chunk-ID
// order, and a distance computed in integers, so the arithmetic is the same
// on every CPU. It is still not replayable by construction: coder/hnsw v0.6.1
// enters each layer at whichever node a Go map range yields first, in Add and
// in Search, so two builds of the same graph, or two searches of one graph,
// can walk differently when the top layer holds more than one node. Results
// are re-scored by exact cosine, so the order of what is found is exact, but
// what is found may vary. Search is not safe concurrently with nothing else
// writing; the graph is never written after NewHNSW.
type HNSW struct {
	d     *Dense
	g     *hnsw.Graph[int32]
	first int // candidates asked for in the first round
}

// NewHNSW builds the graph over d's vectors.
func NewHNSW(d *Dense, opts HNSWOptions) *HNSW {
	if opts.M == 0 {
		opts.M = 16
	}
	if opts.EfSearch == 0 {
		opts.EfSearch = 64
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	g := hnsw.NewGraph[int32]()
	g.M, g.EfSearch, g.Ml = opts.M, opts.EfSearch, 0.25
	g.Rng = rand.New(rand.NewSource(opts.Seed))
	g.Distance = int8Distance
	for i, v := range d.vecs { // d.ids is sorted: chunk-ID order
		if v != nil {
			g.Add(hnsw.MakeNode(int32(i), toFloat32(v)))
		}
	}
	return &HNSW{d: d, g: g, first: opts.EfSearch}
}

func toFloat32(v []int8) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// int8Distance is 1 - cosine for vectors whose components are small
// integers held in float32: the dot products are exact integers and the rest
// is single correctly rounded operations, so no CPU computes it differently.
func int8Distance(a, b []float32) float32 {
	var ab, aa, bb int64
	for i := range a {
		x, y := int64(a[i]), int64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 2
	}
	cos := float64(ab) / math.Sqrt(float64(aa)*float64(bb))
	return float32(1 - cos)
}

// Search returns up to n chunks admit accepts, nearest to q by exact cosine.
// It asks the graph for max(n, EfSearch) candidates, because coder/hnsw stops
// walking at the first step that does not improve its k-sized result set and
// a small k costs most of the recall; while fewer than n candidates are
// eligible it asks for twice as many (up to every vector). It returns the
// hits and the candidate count of the last round.
func (h *HNSW) Search(ctx context.Context, q []int8, admit func(row int) bool, n int) ([]DenseHit, int, error) {
	if q == nil || n <= 0 || h.g.Len() == 0 {
		return nil, 0, nil
	}
	qf := toFloat32(q)
	for k := max(n, h.first); ; k *= 2 {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		k = min(k, h.g.Len())
		var hits []DenseHit
		for _, node := range h.g.Search(qf, k) {
			i := node.Key
			if admit(int(i)) {
				hits = append(hits, DenseHit{ID: h.d.ids[i], Score: Dot(q, h.d.vecs[i]), Norm2: h.d.norm2[i]})
			}
		}
		if len(hits) >= n || k == h.g.Len() {
			sortHits(hits)
			return hits[:min(n, len(hits))], k, nil
		}
	}
}

func sortHits(hits []DenseHit) {
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0; j-- {
			c := moreSimilar(hits[j], hits[j-1])
			if c < 0 || c == 0 && hits[j].ID > hits[j-1].ID {
				break
			}
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
}
