package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zeebo/blake3"
)

func TestGraphOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		opts      GraphOptions
	}{
		{"m-too-small", "one link per node cannot make a navigable graph", GraphOptions{M: 1}},
		{"m-too-large", "layer 0 keeps 2M links in a byte-sized count", GraphOptions{M: 65}},
		{"ef-construction-below-m", "the beam must hold M candidates to choose M links", GraphOptions{M: 16, EfConstruction: 8}},
		{"ef-search-negative", "a beam has a positive width", GraphOptions{EfSearch: -1}},
		{"exact-factor-negative", "only -1 (never exact) is a valid negative", GraphOptions{ExactFactor: -2}},
		{"build-unknown", "a build is named, not guessed", GraphOptions{Build: "parallel"}},
		{"build-rounds-of-one", "rounds of one node are the sequential build: one graph, one name", GraphOptions{Build: "rounds/1"}},
		{"build-rounds-not-canonical", "one name per build: rounds/064 would name rounds/64 again", GraphOptions{Build: "rounds/064"}},
		{"build-rounds-too-large", "a round is at most 65536 nodes", GraphOptions{Build: "rounds/65537"}},
		{"build-rounds-no-size", "the round size is part of the name", GraphOptions{Build: "rounds/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.opts.WithDefaults(); !errors.Is(err, ErrGraphOptions) {
				t.Fatalf("%s: got %v, want ErrGraphOptions", tc.why, err)
			}
		})
	}
	o, err := GraphOptions{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.String(), "hnsw m=16 ef_construction=128 ef_search=128 seed=1 exact_factor=2000"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if o.Build != BuildSequential {
		t.Fatalf("default build %q, want %q", o.Build, BuildSequential)
	}
	o.Build = BuildRounds(64)
	if got, want := o.String(), "hnsw m=16 ef_construction=128 ef_search=128 seed=1 exact_factor=2000 build=rounds/64"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if _, err := o.WithDefaults(); err != nil {
		t.Fatal(err)
	}
}

// searchAll runs every query and returns the hits.
func searchAll(t *testing.T, g *Graph, qs [][]int8, admit func(int) bool, n int) [][]DenseHit {
	t.Helper()
	out := make([][]DenseHit, len(qs))
	for i, q := range qs {
		hits, _, err := g.Search(context.Background(), q, admit, n)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = hits
	}
	return out
}

func digest(res [][]DenseHit) string {
	return fmt.Sprintf("%x", blake3.Sum256(fmt.Append(nil, res)))
}

// TestGraphAgainstExact: recall@10 of the default graph, and of the round
// build, against the exact scan, hits in the exact order, and never a
// refused chunk.
func TestGraphAgainstExact(t *testing.T) {
	for _, build := range []string{BuildSequential, BuildRounds(DefaultGraphRounds)} {
		t.Run(build, func(t *testing.T) { testGraphAgainstExact(t, build) })
	}
}

func testGraphAgainstExact(t *testing.T, build string) {
	ctx := context.Background()
	d, qs := randomDense(3, 3000, 32)
	g, err := NewGraph(ctx, d, GraphOptions{Build: build})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		admit     func(int) bool
		n         int
		minRecall float64
	}{
		{"all", func(int) bool { return true }, 10, 0.98},
		{"one-in-ten", func(r int) bool { return r%10 == 3 }, 10, 0.98},
		{"one-in-a-hundred", func(r int) bool { return r%100 == 7 }, 10, 0.98},
		{"pool-of-50", func(int) bool { return true }, 50, 0.98},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, total := 0, 0
			for _, q := range qs {
				exact, _, _ := d.Search(ctx, q, tc.admit, tc.n)
				approx, _, err := g.Search(ctx, q, tc.admit, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				if len(approx) != len(exact) {
					t.Fatalf("graph returned %d hits, %d exist", len(approx), len(exact))
				}
				for i, x := range approx {
					row, _ := slices.BinarySearch(d.ids, x.ID)
					if !tc.admit(row) {
						t.Fatalf("%s (row %d) is not admitted", x.ID, row)
					}
					if i > 0 && moreSimilar(approx[i-1], x) < 0 {
						t.Fatalf("hits out of exact order at %d: %+v", i, approx)
					}
				}
				found += overlap(exact, approx)
				total += len(exact)
			}
			recall := float64(found) / float64(total)
			t.Logf("recall@%d against exact: %.4f", tc.n, recall)
			if recall < tc.minRecall {
				t.Fatalf("recall@%d %.4f < %.2f", tc.n, recall, tc.minRecall)
			}
		})
	}
}

func overlap(exact, approx []DenseHit) int {
	n := 0
	for _, x := range exact {
		if slices.ContainsFunc(approx, func(y DenseHit) bool { return y.ID == x.ID }) {
			n++
		}
	}
	return n
}

// graphGolden is the digest of every hit of the 50 queries below, on the
// graph built from randomDense(3, 3000, 32) with the default options. It is
// the same on every machine (CI checks it under qemu-aarch64 too): the graph
// is built and searched in integers, in chunk-ID order, from seeded levels.
const graphGolden = "60acaef8859b5cc93da0ae6e5361ecd0153de16ddb61d17e2f6a542f220b0007"

// TestGraphReplays: two builds are identical, a query repeated 1,000 times
// returns identical hits, and the hits of every query match the digest
// pinned above (so a fresh process, or another CPU, gets the same).
func TestGraphReplays(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(3, 3000, 32)
	g1, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := NewGraph(ctx, NewDense(d.IDs(), slices.Clone(d.vecs)), GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g1.links0, g2.links0) || !slices.Equal(g1.count0, g2.count0) || g1.entry != g2.entry ||
		fmt.Sprint(g1.upper) != fmt.Sprint(g2.upper) {
		t.Fatal("two builds from the same vectors and options differ")
	}
	all := func(int) bool { return true }
	first := searchAll(t, g1, qs[:1], all, 10)[0]
	for i := range 1000 {
		again, _, _ := g1.Search(ctx, qs[0], all, 10)
		if !slices.Equal(again, first) {
			t.Fatalf("repeat %d differs: %v vs %v", i, again, first)
		}
	}
	if got := digest(searchAll(t, g2, qs, all, 10)); got != graphGolden {
		t.Fatalf("hits digest %s, want %s", got, graphGolden)
	}
}

func TestGraphBadInput(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(5, 200, 16)
	g, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := func(int) bool { return true }
	if _, _, err := g.Search(ctx, make([]int8, 8), all, 10); !errors.Is(err, ErrDims) {
		t.Fatalf("8-d query on a 16-d graph: got %v, want ErrDims", err)
	}
	if hits, _, err := g.Search(ctx, nil, all, 10); err != nil || hits != nil {
		t.Fatalf("nil query (no known words): got %v, %v; want no hits", hits, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := g.Search(cancelled, qs[0], all, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: got %v", err)
	}
	if _, err := NewGraph(cancelled, d, GraphOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: got %v", err)
	}
	// Rows without a vector (text with no known words) are not nodes.
	vecs := slices.Clone(d.vecs)
	for i := range vecs {
		if i%2 == 0 {
			vecs[i] = nil
		}
	}
	half, err := NewGraph(ctx, NewDense(d.IDs(), vecs), GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hits, _, _ := half.Search(ctx, qs[0], all, 200)
	if len(hits) != 100 {
		t.Fatalf("got %d hits, want the 100 rows that have vectors", len(hits))
	}
	empty, err := NewGraph(ctx, NewDense(nil, nil), GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hits, _, err := empty.Search(ctx, qs[0], all, 10); err != nil || len(hits) != 0 {
		t.Fatalf("empty graph: %v, %v", hits, err)
	}
}

// randomDense makes n random unit int8 vectors of dims components and 50
// random queries, from seed.
func randomDense(seed uint64, n, dims int) (*Dense, [][]int8) {
	rng := rand.New(rand.NewPCG(seed, 0))
	vec := func() []int8 {
		acc := make([]int64, dims)
		for j := range acc {
			acc[j] = int64(rng.NormFloat64() * 1000)
		}
		return normalize(acc)
	}
	return synthetic(n, vec)
}

// synthetic makes a Dense index of n vectors from vec, IDs c0000000 on, and
// 50 more vectors from vec as queries.
func synthetic(n int, vec func() []int8) (*Dense, [][]int8) {
	ids := make([]string, n)
	vecs := make([][]int8, n)
	for i := range vecs {
		ids[i] = fmt.Sprintf("c%07d", i)
		vecs[i] = vec()
	}
	qs := make([][]int8, 50)
	for i := range qs {
		qs[i] = vec()
	}
	return NewDense(ids, vecs), qs
}

// TestGraphEveryNodeReachable: pruning can leave a node with no inbound
// link on layer 0, which no walk reaches; the build adopts every such node.
func TestGraphEveryNodeReachable(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *Dense
	}{
		{"uniform-32d", first(randomDense(3, 3000, 32))},
		{"clustered-384d", first(clusteredDense(4, 2000, 384))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraph(context.Background(), tc.d, GraphOptions{M: 4, EfConstruction: 8})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func first[A, B any](a A, _ B) A { return a }

// graphStructureGolden is the BLAKE3 of the stored form of the graph built
// from randomDense(3, 3000, 32) with the default options: the build itself
// is pinned, on every CPU (CI runs this under qemu-aarch64 too).
const graphStructureGolden = "f8ff6d1f0f9e821cb19cd36d15372c2e4e26cdb93ba81752cdbbe6578c2b9c05"

func TestGraphStoredForm(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(3, 3000, 32)
	g, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := g.Encode()
	if got := fmt.Sprintf("%x", blake3.Sum256(raw)); got != graphStructureGolden {
		t.Fatalf("stored graph digest %s, want %s", got, graphStructureGolden)
	}
	back, err := DecodeGraph("graph.bin", raw, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Encode(), raw) {
		t.Fatal("decode then encode changed the bytes")
	}
	all := func(int) bool { return true }
	if digest(searchAll(t, back, qs, all, 10)) != graphGolden {
		t.Fatal("a decoded graph answers differently")
	}

	other, _ := randomDense(4, 3000, 32)
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name, why string
		raw       []byte
		d         *Dense
		opts      GraphOptions
	}{
		{"truncated", "a crash mid-copy", raw[:len(raw)-100], d, GraphOptions{}},
		{"flipped-bit", "the checksum catches a corrupted byte", flipped, d, GraphOptions{}},
		{"empty", "not a graph at all", nil, d, GraphOptions{}},
		{"other-vectors", "links are row numbers: over other vectors they mean nothing", raw, other, GraphOptions{}},
		{"other-build-settings", "M changes what the links are", raw, d, GraphOptions{M: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeGraph("graph.bin", tc.raw, tc.d, tc.opts); !errors.Is(err, ErrGraphFormat) {
				t.Fatalf("%s: got %v, want ErrGraphFormat", tc.why, err)
			}
		})
	}
	// A forged body with a valid checksum is still checked link by link.
	forged := bytes.Clone(raw[:len(raw)-32])
	off := len(graphMagic) + 4 + 4 + 8 + 32 + 4 + 4 + 4 // header
	off += 1 + 1                                        // row 0: level, layer-0 count
	binary.LittleEndian.PutUint32(forged[off:], 99999)
	sum := blake3.Sum256(forged)
	if _, err := DecodeGraph("graph.bin", append(forged, sum[:]...), d, GraphOptions{}); !errors.Is(err, ErrGraphFormat) ||
		!strings.Contains(err.Error(), "link to 99999") {
		t.Fatalf("forged link: got %v", err)
	}
}

// TestGraphConcurrentSearch: searches share the graph and a pool of visit
// sets; concurrent ones (run under -race in CI) answer as serial ones do.
func TestGraphConcurrentSearch(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(6, 1500, 16)
	g, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := func(int) bool { return true }
	want := searchAll(t, g, qs, all, 10)
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := range qs {
				q := (i + w*7) % len(qs)
				got, _, err := g.Search(ctx, qs[q], all, 10)
				if err == nil && !slices.Equal(got, want[q]) {
					err = fmt.Errorf("worker %d, query %d: %v, want %v", w, q, got, want[q])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestExactBelow(t *testing.T) {
	for _, tc := range []struct {
		name         string
		factor, n, e int
	}{
		{"perfect-square", 2000, 20, 200}, // 200² = 2000×20 exactly: not below
		{"just-above", 2000, 21, 205},     // 204² = 41616 < 42000 <= 205² = 42025
		{"obliqa", 2000, 13012, 5102},     // 5101² = 26020201 < 26024000 <= 5102²
		{"million", 2000, 1_000_000, 44722},
		{"never", -1, 1_000_000, 0},
		{"empty", 2000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (GraphOptions{ExactFactor: tc.factor}).ExactBelow(tc.n); got != tc.e {
				t.Fatalf("ExactBelow(%d) with factor %d = %d, want %d", tc.n, tc.factor, got, tc.e)
			}
		})
	}
}
