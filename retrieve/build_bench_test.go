package retrieve

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkGraphBuild builds the graph over N clustered 384-d vectors (the
// vectors of BenchmarkGraphSynthetic) with each build and reports the insert
// rate.
//
//	go test ./retrieve -run '^$' -bench 'GraphBuild$' -benchtime 1x -v
func BenchmarkGraphBuild(b *testing.B) {
	for _, n := range []int{20_000, 50_000} {
		d, _ := clusteredDense(11, n, 384)
		for _, build := range []string{BuildSequential, BuildRounds(DefaultGraphRounds)} {
			b.Run(fmt.Sprintf("n=%d/build=%s", n, build), func(b *testing.B) {
				for b.Loop() {
					if _, err := NewGraph(context.Background(), d, GraphOptions{Build: build}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
			})
		}
	}
}

// BenchmarkGraphBuildTurns measures builds against each other in one
// process: each build named in EVPACK_BENCH_BUILDS (default
// old,sequential,rounds/64; "old" is the build as it was before it was
// tuned, graph_legacy_test.go), one after the other in turn,
// EVPACK_BENCH_TURNS times (default 3), over the N clustered 384-d vectors
// of BenchmarkGraphSynthetic (EVPACK_BENCH_VECTORS, default 20,000). It logs
// each build's median insert rate, its ratio to the first build's, and
// recall@10 against the exact scan over 50 queries (ef_search 128 and 64).
//
//	EVPACK_BENCH_VECTORS=50000 go test ./retrieve -run '^$' -bench GraphBuildTurns -benchtime 1x -timeout 2h -v
func BenchmarkGraphBuildTurns(b *testing.B) {
	n, turns := envInt(b, "EVPACK_BENCH_VECTORS", 20_000), envInt(b, "EVPACK_BENCH_TURNS", 3)
	builds := []string{"old", BuildSequential, BuildRounds(DefaultGraphRounds)}
	if s := os.Getenv("EVPACK_BENCH_BUILDS"); s != "" {
		builds = strings.Split(s, ",")
	}
	ctx := context.Background()
	d, qs := clusteredDense(11, n, 384)
	all := func(int) bool { return true }
	exact := make([][]DenseHit, len(qs))
	for i, q := range qs {
		exact[i], _, _ = d.Search(ctx, q, all, 10)
	}
	rates := map[string][]float64{}
	recall := map[string]string{}
	for b.Loop() {
		for turn := range turns {
			for _, build := range builds {
				start, cpu := time.Now(), cpuSeconds()
				var g *Graph
				var err error
				if build == "old" {
					g, err = legacyNewGraph(ctx, d, GraphOptions{})
				} else {
					g, err = NewGraph(ctx, d, GraphOptions{Build: build})
				}
				if err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start).Seconds()
				rate := float64(n) / wall
				rates[build] = append(rates[build], rate)
				b.Logf("turn %d: %s: %.0f inserts/s (%.1f s, on %.2f cores)", turn, build, rate, wall, (cpuSeconds()-cpu)/wall)
				if turn == 0 {
					var rs []string
					for _, ef := range []int{128, 64} {
						ge, _ := g.WithEfSearch(ef)
						found, total := 0, 0
						for i, q := range qs {
							approx, _, _ := ge.Search(ctx, q, all, 10)
							found += overlap(exact[i], approx)
							total += len(exact[i])
						}
						rs = append(rs, fmt.Sprintf("ef_search %d %.4f", ef, float64(found)/float64(total)))
					}
					recall[build] = strings.Join(rs, ", ")
				}
			}
		}
	}
	first := median(rates[builds[0]])
	for _, build := range builds {
		m := median(rates[build])
		b.Logf("n=%d %-12s median %6.0f inserts/s (%.2fx %s); recall@10 against exact: %s",
			n, build, m, m/first, builds[0], recall[build])
	}
}

func median(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkGraphInsertAt measures the insert rate at a size too large to
// build the old way in a short run: it builds a graph over the first N-K of
// N clustered 384-d vectors once (EVPACK_BENCH_VECTORS, default 200,000;
// EVPACK_BENCH_TAIL K, default 2,000), then inserts the last K rows into a
// copy of it with the old build's insert (graph_legacy_test.go), the
// sequential build's and the round build's, in turn, EVPACK_BENCH_TURNS
// times (default 3), and logs each one's median rate. The old and the
// sequential inserts make the same links, so they are timed on the same
// work; the round one makes others, on a graph of the same size.
//
//	EVPACK_BENCH_VECTORS=1000000 go test ./retrieve -run '^$' -bench GraphInsertAt -benchtime 1x -timeout 3h -v
func BenchmarkGraphInsertAt(b *testing.B) {
	n, k, turns := envInt(b, "EVPACK_BENCH_VECTORS", 200_000), envInt(b, "EVPACK_BENCH_TAIL", 2_000), envInt(b, "EVPACK_BENCH_TURNS", 3)
	ctx := context.Background()
	d, _ := clusteredDense(11, n, 384)
	opts, err := GraphOptions{Build: BuildRounds(DefaultGraphRounds)}.WithDefaults()
	if err != nil {
		b.Fatal(err)
	}
	base := emptyGraph(d, opts)
	start := time.Now()
	if err := newBuilder(base, DefaultGraphRounds, runtime.GOMAXPROCS(0)).insert(ctx, 0, n-k); err != nil {
		b.Fatal(err)
	}
	b.Logf("base graph of %d nodes built in %s (%s)", n-k, time.Since(start).Round(time.Second), opts.Build)
	variants := []struct {
		name   string
		insert func(g *Graph) error
	}{
		{"old", func(g *Graph) error {
			vs := newLVisitSet(n)
			for r := n - k; r < n; r++ {
				g.legacyInsert(int32(r), vs)
			}
			return nil
		}},
		{BuildSequential, func(g *Graph) error { return newBuilder(g, 1, 1).insert(ctx, n-k, n) }},
		{opts.Build, func(g *Graph) error {
			return newBuilder(g, DefaultGraphRounds, runtime.GOMAXPROCS(0)).insert(ctx, n-k, n)
		}},
	}
	rates := map[string][]float64{}
	for b.Loop() {
		for turn := range turns {
			for _, v := range variants {
				g := cloneGraph(base)
				start, cpu := time.Now(), cpuSeconds()
				if err := v.insert(g); err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start).Seconds()
				rate := float64(k) / wall
				rates[v.name] = append(rates[v.name], rate)
				b.Logf("turn %d: %s: %.0f inserts/s (on %.2f cores)", turn, v.name, rate, (cpuSeconds()-cpu)/wall)
			}
		}
	}
	old := median(rates["old"])
	for _, v := range variants {
		m := median(rates[v.name])
		b.Logf("at %d nodes, %-12s median %6.0f inserts/s (%.2fx the old build)", n, v.name, m, m/old)
	}
}

// cloneGraph returns a copy of g whose links can change without changing
// g's.
func cloneGraph(g *Graph) *Graph {
	c := *g
	c.links0, c.count0 = slices.Clone(g.links0), slices.Clone(g.count0)
	c.upper = make([][]int32, len(g.upper))
	for i, ls := range g.upper {
		c.upper[i] = slices.Clone(ls)
	}
	c.visits = &sync.Pool{}
	return &c
}
