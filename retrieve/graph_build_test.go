package retrieve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/zeebo/blake3"
)

// TestGraphSequentialMatchesReference: the tuned sequential build (SIMD
// dot, float keys in front of the exact comparison, reused buffers, the
// insertion split into plan and apply) makes the very graph of the build it
// replaced, kept in graph_legacy_test.go, byte for byte: on uniform and
// clustered vectors, at the default settings and at small ones that prune
// hard, and with rows that have no vector.
func TestGraphSequentialMatchesReference(t *testing.T) {
	uniform, _ := randomDense(3, 3000, 32)
	clustered, _ := clusteredDense(4, 1500, 384)
	vecs := slices.Clone(clustered.vecs)
	for i := range vecs {
		if i%3 == 0 {
			vecs[i] = nil
		}
	}
	holes := NewDense(clustered.IDs(), vecs)
	for _, tc := range []struct {
		name string
		d    *Dense
		opts GraphOptions
	}{
		{"uniform-32d", uniform, GraphOptions{}},
		{"uniform-32d-m4", uniform, GraphOptions{M: 4, EfConstruction: 8}},
		{"clustered-384d", clustered, GraphOptions{}},
		{"clustered-384d-m4", clustered, GraphOptions{M: 4, EfConstruction: 8, Seed: 7}},
		{"clustered-384d-holes", holes, GraphOptions{M: 8, EfConstruction: 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, err := legacyNewGraph(ctx, tc.d, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 3} {
				got, err := newGraph(ctx, tc.d, tc.opts, workers)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Encode(), want.Encode()) {
					t.Fatalf("%d workers: the sequential build differs from the reference build", workers)
				}
			}
		})
	}
}

// roundsStructureGolden pins the round build as graphStructureGolden pins
// the sequential one: the BLAKE3 of the stored form of the graph built from
// randomDense(3, 3000, 32) with Build rounds/64, the same on every CPU and at
// any number of cores. Its links differ from the sequential graph's, but
// both find the exact top 10 of each of the 50 queries, so their hits have
// the one digest, graphGolden.
const roundsStructureGolden = "07b4ccc22b7f832bd686fba378cd1a91ff31d651b007eee8c80658a2290fde88"

// TestGraphRoundsReplay: the round build gives the same bytes on one worker
// and on several, under GOMAXPROCS 1 and 2 (the default worker count), over
// vectors with holes too; its graph matches the pinned digests, passes
// Check, names its build in the stored form, and reads back only under that
// build.
func TestGraphRoundsReplay(t *testing.T) {
	ctx := context.Background()
	d, qs := randomDense(3, 3000, 32)
	opts := GraphOptions{Build: BuildRounds(DefaultGraphRounds)}
	var raws [][]byte
	for _, workers := range []int{1, 2, 5} {
		g, err := newGraph(ctx, d, opts, workers)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, g.Encode())
	}
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		g, err := NewGraph(ctx, d, opts)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, g.Encode())
	}
	for i, raw := range raws[1:] {
		if !bytes.Equal(raw, raws[0]) {
			t.Fatalf("build %d (workers 2, 5, then GOMAXPROCS 1, 2) differs from the one-worker build", i+1)
		}
	}
	raw := raws[0]
	if got := fmt.Sprintf("%x", blake3.Sum256(raw)); got != roundsStructureGolden {
		t.Fatalf("stored graph digest %s, want %s", got, roundsStructureGolden)
	}
	if !bytes.HasPrefix(raw, []byte(graphMagicNamed)) || !bytes.Contains(raw[:64], []byte("rounds/64")) {
		t.Fatal("the stored form does not name its build")
	}
	g, err := DecodeGraph("graph.bin", raw, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.Encode(), raw) {
		t.Fatal("decode then encode changed the bytes")
	}
	all := func(int) bool { return true }
	if got := digest(searchAll(t, g, qs, all, 10)); got != graphGolden {
		t.Fatalf("hits digest %s, want %s", got, graphGolden)
	}
	seq, err := NewGraph(ctx, d, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(seq.links0, g.links0) {
		t.Fatal("the round build made the sequential graph's links: the test shows nothing")
	}
	for _, tc := range []struct {
		name, why string
		raw       []byte
		opts      GraphOptions
	}{
		{"rounds-read-as-sequential", "another build made other links", raw, GraphOptions{}},
		{"rounds-read-as-other-size", "the round size is part of the build", raw, GraphOptions{Build: BuildRounds(128)}},
		{"sequential-read-as-rounds", "a graph stored before builds had names is a sequential one", seq.Encode(), opts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeGraph("graph.bin", tc.raw, d, tc.opts); !errors.Is(err, ErrGraphFormat) {
				t.Fatalf("%s: got %v, want ErrGraphFormat", tc.why, err)
			}
		})
	}

	// Rows without a vector are no nodes and no peers in a round.
	vecs := slices.Clone(d.vecs)
	for i := range vecs {
		if i%5 < 2 {
			vecs[i] = nil
		}
	}
	holes := NewDense(d.IDs(), vecs)
	one, err := newGraph(ctx, holes, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	four, err := newGraph(ctx, holes, opts, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Encode(), four.Encode()) {
		t.Fatal("with holes: 4 workers differ from 1")
	}
	if err := one.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestGraphRoundsSmall: rounds larger than the index, an index of one
// node, and a round whose first node tops the graph all build a graph
// that passes Check and finds every node.
func TestGraphRoundsSmall(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 2, 63, 64, 65, 200} {
		d, qs := randomDense(9, n, 8)
		g, err := newGraph(ctx, d, GraphOptions{Build: BuildRounds(64), M: 4, EfConstruction: 8}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(); err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
		hits, _, err := g.Search(ctx, qs[0], func(int) bool { return true }, n)
		if err != nil || len(hits) != n {
			t.Fatalf("%d nodes: %d hits, %v", n, len(hits), err)
		}
	}
}
