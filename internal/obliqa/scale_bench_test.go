package obliqa

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/state"
)

// scaleFromEnv reads EVPACK_SCALE ("TENANTSxVERSIONS", default 2x4: about
// 100,000 chunks; 8x10 is the million).
func scaleFromEnv(b testing.TB) Scale {
	s := Scale{Tenants: 2, Versions: 4, Seed: 20261130}
	if v := os.Getenv("EVPACK_SCALE"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &s.Tenants, &s.Versions); err != nil || s.Tenants < 1 || s.Versions < 1 {
			b.Fatalf("EVPACK_SCALE=%q: want TENANTSxVERSIONS, e.g. 8x10", v)
		}
	}
	switch v := os.Getenv(EnvScaleShape); v {
	case "", "aligned":
	case "spread":
		s.Spread = true
	default:
		b.Fatalf("%s=%q: want spread or aligned", EnvScaleShape, v)
	}
	return s
}

// EnvScaleShape names the environment variable that picks the scale's
// shape: "aligned" (the default: versions a year apart, every question as
// of ScaleAsOf) or "spread" (issue 30: versions on days of their own,
// every question on a seeded day of its own, Scale.AskDays).
const EnvScaleShape = "EVPACK_SCALE_SHAPE"

// scaleAskSeed seeds the days BenchmarkScale's questions ask on in the
// spread shape (Scale.AskDays, with the scale's seed).
const scaleAskSeed = 30

// EnvScalePartitionDays names the span in days of the partitions of the
// evpack index BenchmarkScale builds (Options.PartitionDays; the default's
// when unset). The kept indexes of another span live apart (keptRoot).
const EnvScalePartitionDays = "EVPACK_SCALE_PARTITION_DAYS"

// keptRoot returns where the indexes of scale s are kept under the
// directory EnvScaleDir names: that directory for the aligned shape (as
// before the spread shape existed), its subdirectory "spread" for the
// spread one, so that a kept directory never mixes shapes; and below
// that "days-N" where EnvScalePartitionDays names a span N, so that an
// index of the default span is never measured as one of another (the span
// is an index's own from its creation on).
func keptRoot(s Scale) string {
	root := os.Getenv(EnvScaleDir)
	if root == "" {
		return root
	}
	if s.Spread {
		root = filepath.Join(root, s.Shape())
	}
	if days := os.Getenv(EnvScalePartitionDays); days != "" {
		root = filepath.Join(root, "days-"+days)
	}
	return root
}

// heapInUse returns the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkScale measures cost at scale (issue 12): the ObliQA corpus grown
// by Scale (EVPACK_SCALE tenants × versions) ingested in batches of 50,000
// into evpack on disk and into bare bleve (text, tenant and the three dates
// as fields), both merged to one segment. It reports each system's ingest
// CPU, evpack's Open after a Close, the Go heap each holds once open (after
// a collection; bleve's segment files are mapped, not in the heap), and
// query latency with the systems taking turns question by question, in
// orders that change from question to question so that, within a
// question, each comes right after each other equally often (TurnOrders;
// the step from one question's last to the next one's first is not
// balanced; EVPACK_SCALE_TURNS=fixed runs them in one order, evpack first,
// as before): evpack (a tenant's request as of ScaleAsOf, which sees one version of every
// passage, with the pack's bytes and hash), bleve's match query unfiltered,
// and bleve's match query with the same eligibility written by hand. The
// same questions against the 13k corpus alone in evpack (one more index in
// the same process) give "its 13k figure". Then both evpack indexes answer
// the same questions again, taking turns ("-again"): the first pass pays
// for opening the partitions each tenant's requests read and for the first
// reads of their pages, which a serving process pays once. Of the first
// pass it also reports the slowest of the tenants' first requests and the
// p99 of the others, and it logs each tenant's first request and evpack's
// latency by the system whose turn came just before: what one system's
// leftovers (its garbage, the pages it evicted) cost the next (all of
// them with -v: a benchmark's log is cut at ten lines without it), the
// first pass's latency by hundreds of questions, and each system's minor
// page faults in its first-pass turns (minorFaults; zero where there is
// no getrusage). With EVPACK_SCALE_PRELOAD=1 both evpack indexes are
// read into the page cache, and their partitions opened (Engine.Preload),
// before the first question, and it reports how long that took and how
// many bytes it read. EVPACK_SCALE_POSTINGS sets the large index's
// Options.PostingsCache, in bytes, EVPACK_SCALE_WARM=1 its
// Options.WarmTenants, and EVPACK_SCALE_PARTITION_DAYS its
// Options.PartitionDays (scaleOptions; such indexes are kept apart:
// keptRoot).
//
// With EVPACK_SCALE_SHAPE=spread (issue 30) the corpus has the spread
// shape (Scale.Spread: each passage's versions change on days of their
// own) and question i asks on its own seeded day (Scale.AskDays with
// scaleAskSeed, logged), evpack and bleve filtered by hand alike; every
// ask day still has exactly one version of each passage in force, so a
// request still sees as many chunks as ObliQA holds. The 13k figure is
// asked the same questions as of the base corpus's day, as before.
//
// The indexes live in a temporary directory, or, with EVPACK_SCALE_DIR set,
// in that directory (its subdirectory "spread" for the spread shape:
// keptRoot), where they stay: building a million chunks takes most
// of an hour, and BenchmarkScaleRSS measures each system in a process of its
// own on what this benchmark left there. A later run of the same scale
// finds them complete (openScaleStore) and skips the ingest: it reports no
// ingest CPU, and bleve's heap is then the heap of an index opened rather
// than of one just built. Remove the directory after changing how evpack
// writes an index; nothing here can tell.
//
//	EVPACK_SCALE=2x4 EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'Scale$' -benchtime 2788x -timeout 3h -v
func BenchmarkScale(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	ctx := context.Background()
	oneIndex := os.Getenv("EVPACK_SCALE_ONE_INDEX") == "1"
	st := openScaleStore(b, s, base, oneIndex)
	dir := st.root
	const batch = 50_000
	if s.Spread {
		from, to := s.AskWindow()
		b.Logf("scale %dx%d, spread shape: %d chunks, seed %d; question i asks on AskDays(..., %d)[i], in [%s, %s)",
			s.Tenants, s.Versions, s.Len(base), s.Seed, scaleAskSeed, from, to)
	} else {
		b.Logf("scale %dx%d: %d chunks, seed %d, as of %s", s.Tenants, s.Versions, s.Len(base), s.Seed, s.ScaleAsOf())
	}
	if st.kept {
		b.Logf("indexes kept in %s: evpack, bleve and small %s", dir, st.state(""))
		if oneIndex {
			b.Logf("one %s", st.state("one"))
		}
	}

	// evpack, batch by batch; Open, and the heap it holds.
	h0 := int64(heapInUse())
	eng, evIngest, open := scaleEngine(b, filepath.Join(dir, "evpack"), scaleOptions(b), s, base, batch, !st.complete[""])
	st.closeAtEnd(b, eng)
	h1 := int64(heapInUse())
	evHeap := h1 - h0
	// The same corpus in one bleve index (EVPACK_SCALE_ONE_INDEX=1): the
	// layout before partitions, to measure what they change.
	var one *evpack.Engine
	var oneIngest, oneOpen time.Duration
	if oneIndex {
		one, oneIngest, oneOpen = scaleEngine(b, filepath.Join(dir, "one"), evpack.Options{PartitionDays: -1}, s, base, batch, !st.complete["one"])
		st.closeAtEnd(b, one)
		h1 = int64(heapInUse())
	}

	// bare bleve, the same batches.
	c0 := cpuTime(b)
	var idx bleve.Index
	var blIngest time.Duration
	if st.complete[""] {
		var err error
		if idx, err = bleve.Open(filepath.Join(dir, "bleve")); err != nil {
			b.Fatal(err)
		}
	} else {
		idx = buildScaleBleve(b, filepath.Join(dir, "bleve"), s, base, batch)
		blIngest = cpuTime(b) - c0
	}
	st.closeAtEnd(b, idx)

	blHeap := int64(heapInUse()) - h1
	// evpack over the 13k corpus alone: its 13k figure.
	small, err := evpack.Open(filepath.Join(dir, "small"), evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st.closeAtEnd(b, small)
	if !st.complete[""] {
		if _, err := small.Ingest(ctx, connectors.Records(base), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := small.Merge(ctx); err != nil {
			b.Fatal(err)
		}
	}

	// EVPACK_SCALE_PRELOAD=1: both evpack indexes read into the page cache
	// (Engine.Preload) before the first question, as a service would
	// before it takes requests.
	var preload time.Duration
	var preloaded int64
	if os.Getenv("EVPACK_SCALE_PRELOAD") == "1" {
		t0 := time.Now()
		for _, e := range []*evpack.Engine{eng, small} {
			n, err := e.Preload(ctx)
			if err != nil {
				b.Fatal(err)
			}
			preloaded += n
		}
		preload = time.Since(t0)
	}

	// The day question i asks on: ScaleAsOf in the aligned shape, a seeded
	// day of its own in the spread one. AskDays draws one stream, so a
	// longer list starts with the shorter one.
	var askDays []asof.Date
	dayOf := func(i int) asof.Date {
		for i >= len(askDays) {
			askDays = s.AskDays(2*len(askDays)+64, scaleAskSeed)
		}
		return askDays[i]
	}
	// Each system's turn for question i: evpack's tenant request at scale,
	// the partitioned and the one index (which must agree), the 13k corpus,
	// bleve unfiltered and filtered. Each returns the time a caller pays.
	var packHash string
	type system struct {
		name string
		turn func(i int) time.Duration
		ds   []time.Duration
	}
	timed := func(f func() error) time.Duration {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	question := func(i int) string { return o.Questions[i%len(o.Questions)].Text }
	tenantReq := func(i int) evpack.Request {
		return evpack.Request{Question: question(i), AsOf: dayOf(i), Tenant: s.Tenant(i % s.Tenants)}
	}
	evTurn := func(e *evpack.Engine) func(int) time.Duration {
		return func(i int) time.Duration {
			return timed(func() error {
				p, err := e.Query(ctx, tenantReq(i))
				if err == nil {
					packHash = p.Hash()
				}
				return err
			})
		}
	}
	smallTurn := func(i int) time.Duration {
		return timed(func() error {
			p, err := small.Query(ctx, evpack.Request{Question: question(i), AsOf: AsOf})
			if err == nil {
				_ = p.Hash()
			}
			return err
		})
	}
	bleveTurn := func(filtered bool) func(int) time.Duration {
		return func(i int) time.Duration {
			return timed(func() error {
				mq := bleve.NewMatchQuery(question(i))
				mq.SetField("text")
				var q query.Query = mq
				if filtered {
					q = scaleFilter(mq, s.Tenant(i%s.Tenants), dayOf(i))
				}
				_, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, 10, 0, false))
				return err
			})
		}
	}
	evpackTurn := evTurn(eng)
	systems := []*system{{name: "evpack", turn: evpackTurn}, {name: "evpack13k", turn: smallTurn},
		{name: "bleve", turn: bleveTurn(false)}, {name: "bleve-filtered", turn: bleveTurn(true)}}
	var oneHashes []string
	if one != nil {
		oneTurn := evTurn(one)
		systems = append(systems, &system{name: "one-index", turn: func(i int) time.Duration {
			d := oneTurn(i)
			oneHashes = append(oneHashes, packHash)
			return d
		}})
	}
	// The turns: a Williams design by default (TurnOrders), so that no
	// system always follows the same one; EVPACK_SCALE_TURNS=fixed gives
	// the order before it, evpack first in every question.
	orders := TurnOrders(len(systems))
	fixed := os.Getenv("EVPACK_SCALE_TURNS") == "fixed"
	if fixed {
		orders = [][]int{{0, 1, 2, 3}}
		if one != nil { // the order before: evpack, one index, then the rest
			orders = [][]int{{0, 4, 1, 2, 3}}
		}
		b.Logf("turns: fixed, evpack first")
	} else {
		b.Logf("turns: balanced, %d orders (TurnOrders)", len(orders))
	}
	var evHashes []string
	var after []string // after[k]: the system that ran right before evpack's k-th turn
	prev := "none"
	i := 0
	faults := map[string]int64{} // each system's minor page faults in its first-pass turns
	// each system's CPU time in its first-pass turns, the goroutines a
	// request starts included (the process's: nothing else runs then)
	cpu := map[string]time.Duration{}
	// For evpack's turns: its faults, and whether a collection ended in it,
	// so that the slowest turns can be told apart (logged below).
	var evFaults []int64
	var evCollected []bool
	cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	for b.Loop() {
		for _, j := range orders[i%len(orders)] {
			sys := systems[j]
			if j == 0 {
				after = append(after, prev)
				metrics.Read(cycles)
			}
			c0 := cycles[0].Value.Uint64()
			f0, u0 := minorFaults(), cpuTime(b)
			sys.ds = append(sys.ds, sys.turn(i))
			df := minorFaults() - f0
			faults[sys.name] += df
			cpu[sys.name] += cpuTime(b) - u0
			if j == 0 {
				metrics.Read(cycles)
				evFaults, evCollected = append(evFaults, df), append(evCollected, cycles[0].Value.Uint64() != c0)
			}
			if j == 0 && one != nil {
				evHashes = append(evHashes, packHash)
			}
			prev = sys.name
		}
		i++
	}
	for k := range oneHashes {
		if oneHashes[k] != evHashes[k] {
			b.Fatalf("question %d: the partitioned index and one index give different packs", k)
		}
	}
	ev, sm, bl, bf := systems[0].ds, systems[1].ds, systems[2].ds, systems[3].ds
	var on []time.Duration
	if one != nil {
		on = systems[4].ds
	}
	// The same questions again, both evpack indexes taking turns, each
	// first in every other question (every one when fixed): the first pass
	// paid for opening the partitions each tenant's requests read and for
	// the first reads of their pages, which a serving process pays once;
	// this one is what it pays from then on.
	// Each turn carries a profile label ("turn"), so that a CPU profile
	// (-test.cpuprofile, pprof -tagfocus turn=evpack-again) tells the two
	// engines' second passes apart.
	// Each turn also counts the bytes the process allocated during it and
	// the collections that ended in it: at a million chunks the slowest
	// hundredth of this pass were the requests a collection ran beside
	// (docs/benchmarks.md, issue 30, stop 63), both indexes' alike.
	var ev2, sm2 []time.Duration
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	allocated := map[string]uint64{}
	var collected []string // "turn j" of each turn in which a collection ended
	labelled := func(turn string, f func(int) time.Duration, j int) (d time.Duration) {
		metrics.Read(gc)
		cycles, bytes := gc[0].Value.Uint64(), gc[1].Value.Uint64()
		pprof.Do(context.Background(), pprof.Labels("turn", turn), func(context.Context) { d = f(j) })
		metrics.Read(gc)
		allocated[turn] += gc[1].Value.Uint64() - bytes
		if gc[0].Value.Uint64() != cycles {
			collected = append(collected, fmt.Sprintf("%s %d", turn, j))
		}
		return d
	}
	for j := range len(ev) {
		if j%2 == 1 && !fixed {
			sm2 = append(sm2, labelled("evpack13k-again", smallTurn, j))
			ev2 = append(ev2, labelled("evpack-again", evpackTurn, j))
			continue
		}
		ev2 = append(ev2, labelled("evpack-again", evpackTurn, j))
		sm2 = append(sm2, labelled("evpack13k-again", smallTurn, j))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.Logf("second pass: collections ended in %d turns (%s)", len(collected), strings.Join(collected, ", "))
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"evpack", ev}, {"evpack13k", sm}, {"bleve", bl}, {"bleve-filtered", bf}, {"evpack-again", ev2}, {"evpack13k-again", sm2}} {
		b.ReportMetric(ms(Percentile(m.ds, 0.5)), m.name+"-p50-ms")
		b.ReportMetric(ms(Percentile(m.ds, 0.99)), m.name+"-p99-ms")
	}
	// The first pass by hundreds of questions: at a million chunks its
	// slowest hundredth are in its first hundred, while the caches fill
	// (docs/benchmarks.md, issue 30, stop 70).
	for k := 0; k+100 <= len(ev); k += 100 {
		h, h13k := ev[k:k+100], sm[k:k+100]
		b.Logf("first pass, questions %d to %d: evpack p50 %.2f ms, p90 %.2f, max %.2f; its 13k figure p50 %.2f ms, max %.2f",
			k, k+99, ms(Percentile(h, 0.5)), ms(Percentile(h, 0.9)), ms(slices.Max(h)), ms(Percentile(h13k, 0.5)), ms(slices.Max(h13k)))
	}
	for _, sys := range systems {
		b.Logf("first pass: %s took %d minor page faults (%.1f a question), %.2f ms of CPU a question against %.2f ms of wall time",
			sys.name, faults[sys.name], float64(faults[sys.name])/float64(len(sys.ds)), ms(cpu[sys.name])/float64(len(sys.ds)), ms(total(sys.ds))/float64(len(sys.ds)))
	}
	b.ReportMetric(ms(cpu[systems[0].name])/float64(len(ev)), "evpack-cpu-ms/q")
	b.ReportMetric(ms(cpu[systems[1].name])/float64(len(sm)), "evpack13k-cpu-ms/q")
	// The first pass's slowest turns, which its p99 is made of: which
	// questions, their faults, and whether a collection ended in them.
	slowest := make([]int, len(ev))
	for k := range slowest {
		slowest[k] = k
	}
	slices.SortStableFunc(slowest, func(x, y int) int { return cmp.Compare(ev[y], ev[x]) })
	for _, k := range slowest[:min(15, len(slowest))] {
		b.Logf("first pass, slow: question %d (tenant %s): %.2f ms, %d faults, collection ended in it: %t; its 13k figure %.2f ms; in the second pass %.2f ms",
			k, s.Tenant(k%s.Tenants), ms(ev[k]), evFaults[k], evCollected[k], ms(sm[k]), ms(ev2[k]))
	}
	// The first pass apart: each tenant's first request, which opens its
	// partitions, and the rest.
	if len(ev) > s.Tenants {
		b.ReportMetric(ms(slices.Max(ev[:s.Tenants])), "evpack-tenant-first-max-ms")
		b.ReportMetric(ms(Percentile(ev[s.Tenants:], 0.99)), "evpack-after-tenant-first-p99-ms")
		for k := range s.Tenants {
			b.Logf("tenant %s's first request: %.2f ms, right after %s", s.Tenant(k), ms(ev[k]), after[k])
		}
	}
	// evpack's turns by the system that ran right before: what one
	// system's leftovers cost the next.
	for _, sys := range systems {
		var ds []time.Duration
		for k, a := range after {
			if a == sys.name {
				ds = append(ds, ev[k])
			}
		}
		if len(ds) > 0 {
			b.Logf("evpack right after %s: %d turns, p50 %.2f ms, p99 %.2f ms, max %.2f ms", sys.name, len(ds),
				ms(Percentile(ds, 0.5)), ms(Percentile(ds, 0.99)), ms(slices.Max(ds)))
		}
	}
	if one != nil { // after the loop: b.Loop's start clears earlier metrics
		if !st.complete["one"] {
			b.ReportMetric(oneIngest.Seconds(), "one-index-ingest-cpu-s")
		}
		b.ReportMetric(float64(oneOpen.Milliseconds()), "one-index-open-ms")
		b.ReportMetric(ms(Percentile(on, 0.5)), "one-index-p50-ms")
		b.ReportMetric(ms(Percentile(on, 0.99)), "one-index-p99-ms")
	}
	for _, turn := range []string{"evpack-again", "evpack13k-again"} {
		b.ReportMetric(float64(allocated[turn])/float64(len(ev2))/1024, turn+"-alloc-KiB")
	}
	b.ReportMetric(float64(len(collected)), "again-gc-turns")
	b.ReportMetric(ms(Percentile(ev, 0.5))/ms(Percentile(sm, 0.5)), "p50-vs-13k")
	b.ReportMetric(ms(Percentile(ev, 0.99))/ms(Percentile(sm, 0.99)), "p99-vs-13k")
	b.ReportMetric(ms(Percentile(ev2, 0.5))/ms(Percentile(sm2, 0.5)), "p50-vs-13k-again")
	b.ReportMetric(ms(Percentile(ev2, 0.99))/ms(Percentile(sm2, 0.99)), "p99-vs-13k-again")
	if !st.complete[""] { // not built in this run: no ingest to report
		b.ReportMetric(evIngest.Seconds(), "evpack-ingest-cpu-s")
		b.ReportMetric(blIngest.Seconds(), "bleve-ingest-cpu-s")
	}
	b.ReportMetric(float64(open.Milliseconds()), "evpack-open-ms")
	if preloaded > 0 {
		b.ReportMetric(float64(preload.Milliseconds()), "evpack-preload-ms")
		b.ReportMetric(float64(preloaded)/1e6, "evpack-preload-MB")
	}
	b.ReportMetric(float64(evHeap)/(1<<20), "evpack-heap-MiB")
	b.ReportMetric(float64(blHeap)/(1<<20), "bleve-heap-MiB")
}

// scaleOptions is the options of the evpack index that BenchmarkScale and
// BenchmarkScaleRSS ask: the defaults, but for the decoded postings' bound
// in bytes where EVPACK_SCALE_POSTINGS names one (to measure what a larger
// cache buys at a million chunks, and what it holds), for warming
// tenants with EVPACK_SCALE_WARM=1 (what it buys and costs without
// Preload, which opens every partition whatever the option), and for the
// span of the partitions in days where EnvScalePartitionDays names one
// (what another span buys the spread shape: docs/benchmarks.md, issue 30,
// stop 74).
func scaleOptions(tb testing.TB) evpack.Options {
	var o evpack.Options
	if os.Getenv("EVPACK_SCALE_WARM") == "1" {
		tb.Logf("warming tenants")
		o.WarmTenants = true
	}
	if v := os.Getenv(EnvScalePartitionDays); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
			tb.Fatalf("%s=%q: want a number of days, written plainly (it names the kept indexes' directory)", EnvScalePartitionDays, v)
		}
		tb.Logf("partitions of %d days", n)
		o.PartitionDays = n
	}
	v := os.Getenv("EVPACK_SCALE_POSTINGS")
	if v == "" {
		return o
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		tb.Fatalf("EVPACK_SCALE_POSTINGS=%q: %v", v, err)
	}
	tb.Logf("postings cache: %d bytes", n)
	o.PostingsCache = n
	return o
}

// scaleEngine opens the evpack index at dir with opts, building it first
// when build is set: it ingests the scale corpus into a new index (in
// batches of batch chunks, a last one of at most state.LagChunks joining
// the one before), merges
// and closes it, and opens it again. It returns the engine, the ingest's CPU
// time (Open to Close; zero when not built) and the time the last Open took.
// The caller closes the engine.
func scaleEngine(b *testing.B, dir string, opts evpack.Options, s Scale, base []connectors.Record, batch int, build bool) (*evpack.Engine, time.Duration, time.Duration) {
	ctx := context.Background()
	var ingest time.Duration
	if build {
		c0 := cpuTime(b)
		eng, err := evpack.Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		// A last batch the checkpoint's lag would take is committed with
		// the one before it: the kept index then ends on a commit that
		// wrote its checkpoint, so that BenchmarkScaleWrites' first write
		// does not pay for writing it (a kept index of 104,096 chunks
		// ended 4,096 chunks after its checkpoint, at the lag's bound).
		var held []connectors.Record
		commit := func(recs []connectors.Record) {
			if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		for recs := range s.Batches(base, batch) {
			if held != nil && len(recs) <= state.LagChunks {
				recs = append(held, recs...)
			} else if held != nil {
				commit(held)
			}
			held = recs
		}
		commit(held)
		if err := eng.Merge(ctx); err != nil {
			b.Fatal(err)
		}
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
		ingest = cpuTime(b) - c0
	}
	start := time.Now()
	eng, err := evpack.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	return eng, ingest, time.Since(start)
}

// buildScaleBleve ingests the scale corpus into a new bare bleve index at
// dir in the batches evpack gets, the text with the tenant and the three
// dates as fields (an open validity ends at day 2^30), and merges it to one
// segment. The caller closes it.
func buildScaleBleve(b *testing.B, dir string, s Scale, base []connectors.Record, batch int) bleve.Index {
	idx := bareBleve(b, dir)
	for recs := range s.Batches(base, batch) {
		indexScale(b, idx, recs)
	}
	forceMerge(b, idx)
	return idx
}

// indexScale indexes recs into the bare bleve index idx in one batch.
func indexScale(b *testing.B, idx bleve.Index, recs []connectors.Record) {
	bb := idx.NewBatch()
	for _, r := range recs {
		if err := bb.Index(r.Chunk.ID, scaleDoc(r)); err != nil {
			b.Fatal(err)
		}
	}
	if err := idx.Batch(bb); err != nil {
		b.Fatal(err)
	}
}

// keptScaleDir returns the directory (EnvScaleDir) of the indexes
// BenchmarkScale keeps at scale s, for a benchmark that measures them: it
// skips b when none is named, and fails it when they are not complete.
func keptScaleDir(b *testing.B, s Scale, base []connectors.Record) string {
	root := keptRoot(s)
	if root == "" {
		b.Skipf("measures the indexes BenchmarkScale keeps: set %s (and build them with BenchmarkScale at the same EVPACK_SCALE)", EnvScaleDir)
	}
	if ok, err := scaleComplete(root, s, base, ""); err != nil {
		b.Fatal(err)
	} else if !ok {
		b.Fatalf("%s holds no complete indexes of scale %dx%d (no %s): build them first with BenchmarkScale, %s=%s EVPACK_SCALE=%dx%d -bench 'Scale$'",
			root, s.Tenants, s.Versions, filepath.Base(scaleMarker(root, s, "")), EnvScaleDir, root, s.Tenants, s.Versions)
	}
	return root
}

// scaleDoc is the bleve document of record r in the bare bleve index: its
// text, tenant, anchor day and validity (an open end is 2^30).
func scaleDoc(r connectors.Record) map[string]any {
	to := float64(1 << 30)
	if !r.Chunk.Valid.To.IsZero() {
		to = float64(r.Chunk.Valid.To.Days())
	}
	return map[string]any{"text": r.Chunk.Text, "tenant": r.Chunk.Tenant,
		"anchor": float64(r.Chunk.Anchor.Day().Days()), "from": float64(r.Chunk.Valid.From.Days()), "to": to}
}

// scaleFilter is bleve's match query mq with the eligibility of tenant's
// request as of day written by hand: the tenant's term, an anchor on or
// before day, and a validity [from, to) holding day.
func scaleFilter(mq query.Query, tenant string, day asof.Date) query.Query {
	d := float64(day.Days())
	num := func(field string, lo, hi *float64, loIn, hiIn bool) query.Query {
		q := bleve.NewNumericRangeInclusiveQuery(lo, hi, &loIn, &hiIn)
		q.SetField(field)
		return q
	}
	tq := bleve.NewTermQuery(tenant)
	tq.SetField("tenant")
	return bleve.NewConjunctionQuery(mq, tq, num("anchor", nil, &d, false, true), num("from", nil, &d, false, true), num("to", &d, nil, false, false))
}

// EnvScaleDir names the environment variable that keeps BenchmarkScale's
// indexes in a directory, for later runs and for BenchmarkScaleRSS.
const EnvScaleDir = "EVPACK_SCALE_DIR"

// scaleGroups are the groups of indexes BenchmarkScale builds together, each
// marked complete on its own: "" is evpack, bleve and small (always built),
// "one" the one-index engine (EVPACK_SCALE_ONE_INDEX=1).
var scaleGroups = map[string][]string{"": {"evpack", "bleve", "small"}, "one": {"one"}}

// scaleMarker is the file under root that says group's indexes of scale s
// are complete: written only once they are built, merged and closed.
func scaleMarker(root string, s Scale, group string) string {
	name := fmt.Sprintf("complete-%dx%d", s.Tenants, s.Versions)
	if s.Spread {
		name += "-" + s.Shape()
	}
	if group != "" {
		name += "-" + group
	}
	return filepath.Join(root, name+".txt")
}

// scaleMarkerText is what the marker holds: the scale, the seed and the size
// of the base corpus, so that a marker of another corpus is refused.
func scaleMarkerText(s Scale, base []connectors.Record, group string) string {
	shape := "" // the aligned shape's text is as it was before shapes
	if s.Spread {
		shape = ", shape " + s.Shape()
	}
	return fmt.Sprintf("BenchmarkScale %dx%d seed %d%s: %d chunks from %d base records; complete: %s\n",
		s.Tenants, s.Versions, s.Seed, shape, s.Len(base), len(base), strings.Join(scaleGroups[group], " "))
}

// scaleStore is where BenchmarkScale keeps its indexes.
type scaleStore struct {
	root     string
	kept     bool            // root is EnvScaleDir: the indexes stay
	complete map[string]bool // the groups an earlier run left complete
	closeErr error           // the Close errors at the end
}

// openScaleStore returns a temporary directory, or, with EnvScaleDir set,
// that directory and the groups it already holds complete (of the groups
// this run builds: "", and "one" when one is set). It refuses a directory
// holding indexes of a group without that group's marker, or with a marker
// of another corpus: an interrupted build, or another scale, which this run
// must neither trust nor delete. Once the benchmark has passed and closed
// its indexes, it marks the groups it built complete.
func openScaleStore(b *testing.B, s Scale, base []connectors.Record, one bool) *scaleStore {
	root := keptRoot(s)
	if root == "" {
		return &scaleStore{root: b.TempDir(), complete: map[string]bool{}}
	}
	st := &scaleStore{root: root, kept: true, complete: map[string]bool{}}
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	var built []string
	for _, g := range []string{"", "one"} {
		ok, err := scaleComplete(root, s, base, g)
		if err != nil {
			b.Fatal(err)
		}
		st.complete[g] = ok
		if !ok && (g == "" || one) {
			for _, sub := range scaleGroups[g] {
				if _, err := os.Stat(filepath.Join(root, sub)); !errors.Is(err, os.ErrNotExist) {
					b.Fatalf("%s: %s exists without %s (an interrupted build, or another scale): remove it, or name another directory in %s",
						root, sub, filepath.Base(scaleMarker(root, s, g)), EnvScaleDir)
				}
			}
			built = append(built, g)
		}
	}
	b.Cleanup(func() { // registered first, so it runs after every Close
		if b.Failed() || b.Skipped() {
			return
		}
		if st.closeErr != nil {
			b.Errorf("closing the indexes: %v; not marked complete", st.closeErr)
			return
		}
		for _, g := range built {
			if err := os.WriteFile(scaleMarker(root, s, g), []byte(scaleMarkerText(s, base, g)), 0o644); err != nil {
				b.Error(err)
			}
		}
	})
	return st
}

// scaleComplete reports whether root holds group's indexes of scale s over
// base complete, and an error when its marker names another corpus.
func scaleComplete(root string, s Scale, base []connectors.Record, group string) (bool, error) {
	path := scaleMarker(root, s, group)
	got, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if want := scaleMarkerText(s, base, group); string(got) != want {
		return false, fmt.Errorf("%s holds %q, want %q: indexes of another corpus; remove them, or name another directory in %s", path, got, want, EnvScaleDir)
	}
	return true, nil
}

// state says whether group's indexes were built by an earlier run.
func (st *scaleStore) state(group string) string {
	if st.complete[group] {
		return "reused"
	}
	return "built here"
}

// closeAtEnd closes c when the benchmark ends. A failed Close keeps the
// indexes from being marked complete; in a temporary directory it is
// ignored, as it always was.
func (st *scaleStore) closeAtEnd(b *testing.B, c io.Closer) {
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			st.closeErr = errors.Join(st.closeErr, err)
		}
	})
}

// total returns the sum of ds.
func total(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}
