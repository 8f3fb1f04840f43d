package obliqa

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
)

// BenchmarkScaleFirstWrite: what a process pays to add a day's few chunks
// to a kept scale index (EVPACK_SCALE_DIR, made by BenchmarkScale): the next
// version of 100 records of one tenant. evpack: Open, one Ingest, Close (its
// first write after Open builds the full state, the checkpoint unfolded
// with every batch file's chunks, and its commit writes a new checkpoint). Bare bleve: Open, one batch of the
// same 100 documents, Close. Apart (not in those times), each then writes
// the next 100 records before it closes: what a process that stays open
// pays a write. Each op first copies both indexes (not timed),
// so that every write is the first on the index as built; the two take
// turns, evpack first. It reports each system's wall and CPU time (the
// process's, goroutines included), the ratio of their wall times, the
// wall time of the next write, and evpack's Go heap in use once the first
// ingest is done.
func BenchmarkScaleFirstWrite(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	recs := s.Next(base, 200)
	first, second := recs[:100], recs[100:]
	ctx := context.Background()
	var ev, bl, evCPU, blCPU, evNext, blNext time.Duration
	var heap uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := copyKept(b, root)
		b.StartTimer()

		t0, c0 := time.Now(), cpuTime(b)
		eng, err := evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Ingest(ctx, connectors.Records(first), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ingested, c1 := time.Now(), cpuTime(b)
		heap = max(heap, heapInUse())
		t := time.Now()
		if _, err := eng.Ingest(ctx, connectors.Records(second), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		evNext += time.Since(t)
		closing, c2 := time.Now(), cpuTime(b)
		b.StartTimer()
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
		t1, c3 := time.Now(), cpuTime(b)
		ev += ingested.Sub(t0) + t1.Sub(closing)
		evCPU += c1 - c0 + c3 - c2

		idx, err := bleve.Open(filepath.Join(dir, "bleve"))
		if err != nil {
			b.Fatal(err)
		}
		indexScale(b, idx, first)
		b.StopTimer()
		indexed, c4 := time.Now(), cpuTime(b)
		indexScale(b, idx, second)
		blClosing, c5 := time.Now(), cpuTime(b)
		blNext += blClosing.Sub(indexed)
		b.StartTimer()
		if err := idx.Close(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		bl += indexed.Sub(t1) + t2.Sub(blClosing)
		blCPU += c4 - c3 + cpuTime(b) - c5
	}
	n := float64(b.N)
	b.ReportMetric(ev.Seconds()/n, "evpack-first-write-s")
	b.ReportMetric(bl.Seconds()/n, "bleve-first-write-s")
	b.ReportMetric(float64(ev)/float64(bl), "evpack-vs-bleve")
	b.ReportMetric(evCPU.Seconds()/n, "evpack-first-write-cpu-s")
	b.ReportMetric(blCPU.Seconds()/n, "bleve-first-write-cpu-s")
	b.ReportMetric(evNext.Seconds()/n, "evpack-next-write-s")
	b.ReportMetric(blNext.Seconds()/n, "bleve-next-write-s")
	b.ReportMetric(float64(heap)/(1<<20), "evpack-heap-after-ingest-MiB")
}

// The phases of BenchmarkScaleWrites, in the order each system runs them.
var writePhases = []string{"open", "first-100", "second-100", "retract-1", "supersede-100", "chunks-100", "chunks-past-lag", "close",
	"reopen", "retract-after-open", "close-again"}

// BenchmarkScaleWrites (issue 30): the writes a mirror makes to a kept
// scale index (EVPACK_SCALE_DIR, made by BenchmarkScale at the same
// EVPACK_SCALE and EVPACK_SCALE_SHAPE), evpack against bare bleve, phase by
// phase on one open index: Open; the first write after Open and the
// second (100 new chunks each: Scale.Next, the version after the last of
// tenant t00's first 200 passages); one fact, the retraction of a stored
// chunk, against bleve's delete of that document; 100 supersessions of
// stored chunks (their replacements not yet fetched) against a bleve batch
// updating those 100 documents' validity ends; 100 new chunks against a
// bleve batch of 100 new documents; state.LagChunks new chunks, more than
// half the checkpoint's lag in one commit, so that the commit writes the
// checkpoint (state.PlanCheckpoint), against a bleve batch of as many;
// Close; then
// Open again, the retraction
// of another stored chunk as the first write after it (against bleve's
// delete of that document), and Close. Each op first copies both
// indexes (not timed), so that every op starts on the index as built; the
// systems take turns, evpack first in even ops, bleve in odd ones. It
// reports each phase's wall and CPU time (the process's, goroutines
// included: a system's background work that outlives a phase lands in the
// next one) per system, the ratio of their wall times, and evpack's first
// write over its second (issue 30's goal: at most 1.2).
//
//	EVPACK_SCALE=2x4 EVPACK_SCALE_DIR=/tmp/scale EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'ScaleWrites$' -benchtime 1x -timeout 1h -v
func BenchmarkScaleWrites(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	if len(base) < 300+state.LagChunks {
		b.Fatalf("%d base records: the benchmark names passages 0..%d", len(base), 299+state.LagChunks)
	}
	recs := s.Next(base, 300+state.LagChunks)
	recs, past := recs[:300], recs[300:]
	// The facts name stored chunks of the last tenant's last version (open
	// in both shapes), of passages the new chunks leave alone: the
	// retraction passage 400, the supersessions passages 300..399.
	t, v := s.Tenants-1, s.Versions-1
	record := s.Records(base)
	factOf := func(i int, kind evidence.FactKind) (connectors.Record, connectors.Record) {
		r := record(i, t, v)
		end := asof.DateFromDays(r.Chunk.Valid.From.Days() + 10)
		f := &evidence.Fact{Kind: kind, ChunkID: r.Chunk.ID, End: end, Anchor: end.Start()}
		if kind == evidence.FactSuperseded {
			f.By = fmt.Sprintf("%s/%s/v%d", s.Tenant(t), base[i].Chunk.ID, v+1)
		}
		ended := r
		ended.Chunk.Valid.To = end // bleve's document once the fact is known
		return connectors.Record{Where: fmt.Sprintf("facts: %s %s", kind, r.Chunk.ID), Fact: f}, ended
	}
	retraction, retracted := factOf(400, evidence.FactRetracted)
	retraction2, retracted2 := factOf(401, evidence.FactRetracted)
	var supersessions, superseded []connectors.Record
	for i := 300; i < 400; i++ {
		f, r := factOf(i, evidence.FactSuperseded)
		supersessions, superseded = append(supersessions, f), append(superseded, r)
	}
	b.Logf("scale %dx%d, %s shape: retraction of %s, supersessions of %s..%s", s.Tenants, s.Versions, s.Shape(),
		retracted.Chunk.ID, superseded[0].Chunk.ID, superseded[len(superseded)-1].Chunk.ID)
	// Where the kept index stands in the checkpoint's lag decides what its
	// first write pays: one that takes the chunks after the checkpoint past
	// state.LagChunks starts a checkpoint written ahead (a kept index of
	// 104,096 chunks, ingested by 50,000, ends 4,096 chunks after its
	// checkpoint, at the bound).
	lag := keptLag(b, filepath.Join(root, "evpack"))
	b.Logf("the kept index holds %d chunks after its checkpoint (a commit that takes them past %d starts one)", lag, state.LagChunks)
	b.ReportMetric(float64(lag), "evpack-lag-chunks")

	ctx := context.Background()
	n := len(writePhases)
	evWall, evCPU := make([]time.Duration, n), make([]time.Duration, n)
	blWall, blCPU := make([]time.Duration, n), make([]time.Duration, n)
	// phase runs the steps of one system, timing each into wall and cpu.
	phase := func(wall, cpu []time.Duration, steps []func() error) {
		for p, f := range steps {
			t0, c0 := time.Now(), cpuTime(b)
			var err error
			// Labelled, so that a CPU profile splits by phase (pprof -tags).
			pprof.Do(ctx, pprof.Labels("phase", writePhases[p]), func(context.Context) { err = f() })
			if err != nil {
				b.Fatalf("%s: %v", writePhases[p], err)
			}
			wall[p] += time.Since(t0)
			cpu[p] += cpuTime(b) - c0
		}
	}
	ingest := func(eng **evpack.Engine, rs []connectors.Record) func() error {
		return func() error {
			_, err := (*eng).Ingest(ctx, connectors.Records(rs), evpack.IngestOptions{})
			return err
		}
	}
	batch := func(idx *bleve.Index, rs []connectors.Record) func() error {
		return func() error {
			bb := (*idx).NewBatch()
			for _, r := range rs {
				if err := bb.Index(r.Chunk.ID, scaleDoc(r)); err != nil {
					return err
				}
			}
			return (*idx).Batch(bb)
		}
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := copyKept(b, root)
		b.StartTimer()
		var eng *evpack.Engine
		evTurn := func() {
			phase(evWall, evCPU, []func() error{
				func() (err error) { eng, err = evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{}); return err },
				ingest(&eng, recs[:100]), ingest(&eng, recs[100:200]),
				ingest(&eng, []connectors.Record{retraction}), ingest(&eng, supersessions),
				ingest(&eng, recs[200:]), ingest(&eng, past),
				func() error { return eng.Close() },
				func() (err error) { eng, err = evpack.Open(filepath.Join(dir, "evpack"), evpack.Options{}); return err },
				ingest(&eng, []connectors.Record{retraction2}),
				func() error { return eng.Close() },
			})
		}
		var idx bleve.Index
		blTurn := func() {
			phase(blWall, blCPU, []func() error{
				func() (err error) { idx, err = bleve.Open(filepath.Join(dir, "bleve")); return err },
				batch(&idx, recs[:100]), batch(&idx, recs[100:200]),
				func() error { return idx.Delete(retracted.Chunk.ID) }, batch(&idx, superseded),
				batch(&idx, recs[200:]), batch(&idx, past),
				func() error { return idx.Close() },
				func() (err error) { idx, err = bleve.Open(filepath.Join(dir, "bleve")); return err },
				func() error { return idx.Delete(retracted2.Chunk.ID) },
				func() error { return idx.Close() },
			})
		}
		inTurn(i, evTurn, blTurn)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	for p, name := range writePhases {
		b.ReportMetric(ms(evWall[p]), "evpack-"+name+"-ms")
		b.ReportMetric(ms(blWall[p]), "bleve-"+name+"-ms")
		b.ReportMetric(ms(evCPU[p]), "evpack-"+name+"-cpu-ms")
		b.ReportMetric(ms(blCPU[p]), "bleve-"+name+"-cpu-ms")
		b.ReportMetric(float64(evWall[p])/float64(blWall[p]), name+"-evpack-vs-bleve")
	}
	b.ReportMetric(float64(evWall[1])/float64(evWall[2]), "evpack-first-vs-second")
	// bleve's own first batch after its Open against its second: what a
	// first write costs the peer, which opened its index in its open phase.
	b.ReportMetric(float64(blWall[1])/float64(blWall[2]), "bleve-first-vs-second")
}

// inTurn runs the two turns of op i: a's first when i is even (evpack's,
// or the first variant's), b's when it is odd, so that neither always
// follows the other.
func inTurn(i int, a, b func()) {
	if i%2 == 0 {
		a()
		b()
	} else {
		b()
		a()
	}
}

// copyKept copies the kept evpack and bleve indexes under root into a new
// temporary directory and returns it: each op writes on the index as built.
func copyKept(b *testing.B, root string) string {
	dir := b.TempDir()
	for _, sub := range []string{"evpack", "bleve"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(root, sub))); err != nil {
			b.Fatal(err)
		}
	}
	// The copy's pages are dirty until the kernel writes them back; a
	// first write's fsync would wait for that, a cost a kept index long on
	// disk does not have. Write them back before anything is timed.
	syscall.Sync()
	return dir
}

// BenchmarkScaleOpenAfterFacts (issue 30): what the checkpoint's lag costs
// Open, and what a commit of one fact costs on average over the lag. On a
// copy of the kept scale index (EVPACK_SCALE_DIR, made by BenchmarkScale),
// it times Open (to Close) seven times, then commits state.LagGenerations
// retractions of stored chunks, one a commit, in one process (the first of
// them the first write after Open), each taking turns with bare bleve's
// delete of that document from its copy; then it times Open seven times
// again, which now reads those generations' batch files and adds their
// facts; then, opened again, the commit of one retraction more, which
// starts the checkpoint written ahead (its catalog from every chunk: facts
// narrow what adding cannot), and state.LagGenerations/2+1 more, the last
// of which names it (state.Plan), each against bleve's delete of one more.
// It reports the median Opens before and after, the median and slowest
// commit of the lag, the commit that starts the checkpoint, the median and
// slowest of the window after it, the commit that names it, bleve's median
// and slowest delete of the lag, and evpack's commits over bleve's deletes, all of them summed:
// the average cost of a retraction, a checkpoint's share included. In the
// lag a third peer takes its turn beside the two, the disk's floor: the two
// durable renames a commit waits for, on files alone (syncedRenames); its
// median, 99th percentile and slowest are reported. With
// EVPACK_WINDOW_QUERIES=1 it also asks a question after each retraction
// of the lag and of the window, evpack and bleve in turn (windowQueries).
// b.N is not used: one pass.
//
//	EVPACK_SCALE=2x4 EVPACK_SCALE_DIR=/tmp/scale EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'ScaleOpenAfterFacts$' -benchtime 1x -v
func BenchmarkScaleOpenAfterFacts(b *testing.B) {
	s, base, copied := keptForRetractions(b)
	record := s.Records(base)
	first, last := firstRetracted, lastRetracted
	dir := filepath.Join(copied, "evpack")
	medianOpen := func() time.Duration {
		var ds []time.Duration
		for range 7 {
			t0 := time.Now()
			e, err := evpack.Open(dir, evpack.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	before := medianOpen()
	// The heap an open engine holds: its state read from the checkpoint
	// (the head decoded) and the lexical catalog, an upper bound on what a
	// checkpoint read back ahead holds through its window (state.Read).
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	e, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	openHeap := heap() - h0
	idx, err := bleve.Open(filepath.Join(copied, "bleve"))
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	probe := newWindowQueries(b, s)
	retract := func(i int) (ev, bl time.Duration) {
		ev, bl = retractInTurn(b, e, idx, s, record, i)
		probe.ask(b, i, e, idx)
		return ev, bl
	}
	var commits, deletes, floors []time.Duration
	var evSum, blSum time.Duration
	floorDir := filepath.Join(copied, "floor")
	if err := os.Mkdir(floorDir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := first; i < first+state.LagGenerations; i++ {
		// The disk's floor takes its turn before the two systems on even
		// commits, after them on odd ones.
		if i%2 == 0 {
			floors = append(floors, syncedRenames(b, floorDir, i))
		}
		ev, bl := retract(i)
		commits, deletes = append(commits, ev), append(deletes, bl)
		evSum, blSum = evSum+ev, blSum+bl
		if i%2 != 0 {
			floors = append(floors, syncedRenames(b, floorDir, i))
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	after := medianOpen()
	if e, err = evpack.Open(dir, evpack.Options{}); err != nil {
		b.Fatal(err)
	}
	probe.phase = "window"
	again, blAgain := retract(first + state.LagGenerations)
	evSum, blSum = evSum+again, blSum+blAgain
	var window []time.Duration
	for i := first + state.LagGenerations + 1; i < last; i++ {
		ev, bl := retract(i)
		window = append(window, ev)
		evSum, blSum = evSum+ev, blSum+bl
	}
	probe.phase = "after"
	named, blNamed := retract(last)
	evSum, blSum = evSum+named, blSum+blNamed
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if lag := keptGenerations(b, dir); lag != state.LagGenerations/2+1 {
		b.Fatalf("the last commit left %d generations after the checkpoint, not %d: it did not name the one started", lag, state.LagGenerations/2+1)
	}
	m := keptManifest(b, dir)
	fi, err := os.Stat(filepath.Join(dir, cmp.Or(m.Delta, m.Checkpoint)))
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(commits)
	slices.Sort(deletes)
	slices.Sort(window)
	slices.Sort(floors)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(before), "open-ms")
	b.ReportMetric(ms(after), "open-after-facts-ms")
	b.ReportMetric(float64(openHeap)/(1<<20), "open-heap-MiB")
	b.ReportMetric(ms(commits[len(commits)/2]), "fact-commit-p50-ms")
	// The 99th percentiles beside the slowest: one slow fsync decides a
	// maximum, and the 99th of each system compares like with like.
	p99 := func(s []time.Duration) float64 { return ms(s[len(s)*99/100]) }
	b.ReportMetric(p99(commits), "fact-commit-p99-ms")
	b.ReportMetric(ms(commits[len(commits)-1]), "fact-commit-max-ms")
	b.ReportMetric(ms(again), "fact-checkpoint-start-ms")
	b.ReportMetric(ms(window[len(window)/2]), "fact-window-p50-ms")
	b.ReportMetric(p99(window), "fact-window-p99-ms")
	b.ReportMetric(ms(window[len(window)-1]), "fact-window-max-ms")
	b.ReportMetric(ms(named), "fact-checkpoint-named-ms")
	b.ReportMetric(float64(fi.Size())/1e6, "named-file-MB") // a delta level over the checkpoint, or a whole one
	b.ReportMetric(ms(deletes[len(deletes)/2]), "bleve-delete-p50-ms")
	b.ReportMetric(p99(deletes), "bleve-delete-p99-ms")
	b.ReportMetric(ms(deletes[len(deletes)-1]), "bleve-delete-max-ms")
	b.ReportMetric(float64(evSum)/float64(blSum), "fact-commits-vs-bleve-deletes")
	b.ReportMetric(evSum.Seconds(), "fact-commits-summed-s")
	b.ReportMetric(blSum.Seconds(), "bleve-deletes-summed-s")
	b.ReportMetric(ms(floors[len(floors)/2]), "disk-floor-p50-ms")
	b.ReportMetric(p99(floors), "disk-floor-p99-ms")
	b.ReportMetric(ms(floors[len(floors)-1]), "disk-floor-max-ms")
	probe.report(b)
}

// syncedRenames is the disk's floor under a one-fact commit's own waits,
// with no index beside it: a small record written to a temp file, fsynced,
// renamed into place and its directory fsynced (PENDING.json), then a
// manifest's temp file, written and synced before the timer (a commit
// syncs it beside bleve's batch), renamed into place and its directory
// fsynced. It returns the time of those two durable renames, which every
// commit waits for one after the other: what of a commit's time, and of
// its slowest, the disk alone accounts for.
func syncedRenames(b *testing.B, dir string, i int) time.Duration {
	manifest := filepath.Join(dir, "MANIFEST.json")
	// About the size of the 1M spread index's manifest (7,890 bytes).
	tmp, err := fsutil.WriteTemp(manifest, nil, fmt.Appendf(nil, `{"generation":%d,"pad":"%0*d"}`, i, 7800, 0))
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := fsutil.WriteAtomic(filepath.Join(dir, "PENDING.json"), fmt.Appendf(nil, `{"generation":%d}`, i)); err != nil {
		b.Fatal(err)
	}
	if err := fsutil.RenameHooked(tmp, manifest, nil); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// keptGenerations returns how many generations the evpack index in dir
// holds after the newest level its manifest names (its delta level's, else
// its checkpoint's).
func keptGenerations(b *testing.B, dir string) int64 {
	m := keptManifest(b, dir)
	return m.Generation - m.LevelGeneration()
}

// keptManifest reads the manifest of the evpack index in dir.
func keptManifest(b *testing.B, dir string) *storage.Manifest {
	name := filepath.Join(dir, "MANIFEST.json")
	raw, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	m, err := storage.DecodeManifest(name, raw, func(file string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, file)) })
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// keptLag returns how many chunks the evpack index in dir holds after the
// newest level its manifest names.
func keptLag(b *testing.B, dir string) int64 {
	m := keptManifest(b, dir)
	var lag int64
	for _, bt := range m.Batches[m.LevelGeneration():] {
		lag += int64(bt.Chunks)
	}
	return lag
}

// BenchmarkScaleCloseInWindow (issue 30): what Close costs right after the
// commit past the checkpoint's lag, and what the commit that names its
// checkpoint costs in a process opened after it, while that commit's checkpoint is being
// written ahead (state.Plan), against bleve's Close after the same deletes.
// On a copy of the kept scale index (EVPACK_SCALE_DIR, made by
// BenchmarkScale), it commits state.LagGenerations+1 retractions, one a
// commit (the last starts the checkpoint), each taking turns with bare
// bleve's delete of that document, then times each system's Close, evpack
// first. No commit names that checkpoint: Close removes what was written of
// it. Then it opens the index again, commits one retraction and closes it
// (what a process that commits once pays at Close: its commit started
// writing the checkpoint ahead), and opens it again and commits
// state.LagGenerations/2 retractions more, the last of which names that
// checkpoint: this process opened the index after the generation that
// started it, so its first commit starts writing it ahead from the state
// as of that generation (state.Window, state.WriteAheadAt), and the commit
// that names it takes the file, waiting for what is left of the write
// (before, that commit built the state and wrote the checkpoint itself).
// It reports that commit, against bleve's delete of one more document,
// and the median and slowest of the commits before it, which share the
// cores with the writer. b.N is not used: one pass.
//
//	EVPACK_SCALE=2x4 EVPACK_SCALE_DIR=/tmp/scale EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'ScaleCloseInWindow$' -benchtime 1x -v
func BenchmarkScaleCloseInWindow(b *testing.B) {
	s, base, copied := keptForRetractions(b)
	record := s.Records(base)
	first, last := firstRetracted, lastRetracted
	e, err := evpack.Open(filepath.Join(copied, "evpack"), evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx, err := bleve.Open(filepath.Join(copied, "bleve"))
	if err != nil {
		b.Fatal(err)
	}
	retract := func(i int) (ev, bl time.Duration) { return retractInTurn(b, e, idx, s, record, i) }
	for i := first; i <= first+state.LagGenerations; i++ {
		retract(i)
	}
	t0 := time.Now()
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	evClose := time.Since(t0)
	t0 = time.Now()
	if err := idx.Close(); err != nil {
		b.Fatal(err)
	}
	blClose := time.Since(t0)
	if left, err := filepath.Glob(filepath.Join(copied, "evpack", ".state-*")); err != nil || len(left) > 0 {
		b.Fatalf("Close left %q (%v): the checkpoint written ahead stays", left, err)
	}
	if lag := keptGenerations(b, filepath.Join(copied, "evpack")); lag != state.LagGenerations+1 {
		b.Fatalf("%d generations after the checkpoint, not %d: the last commit did not start one", lag, state.LagGenerations+1)
	}
	reopen := func() {
		if e, err = evpack.Open(filepath.Join(copied, "evpack"), evpack.Options{}); err != nil {
			b.Fatal(err)
		}
		if idx, err = bleve.Open(filepath.Join(copied, "bleve")); err != nil {
			b.Fatal(err)
		}
	}
	reopen()
	// A process that opens, commits once and closes (evpack index): its
	// commit starts the write ahead, its Close stops it.
	retract(first + state.LagGenerations + 1)
	t0 = time.Now()
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	evCloseAfterOne := time.Since(t0)
	if err := idx.Close(); err != nil {
		b.Fatal(err)
	}
	reopen()
	var window []time.Duration
	for i := first + state.LagGenerations + 2; i < last; i++ {
		ev, _ := retract(i)
		window = append(window, ev)
	}
	named, blNamed := retract(last)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		b.Fatal(err)
	}
	if lag := keptGenerations(b, filepath.Join(copied, "evpack")); lag != state.LagGenerations/2+1 {
		b.Fatalf("%d generations after the checkpoint, not %d: the last commit did not name the one started", lag, state.LagGenerations/2+1)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(evClose), "evpack-close-ms")
	b.ReportMetric(ms(blClose), "bleve-close-ms")
	b.ReportMetric(ms(evCloseAfterOne), "evpack-close-after-one-commit-ms")
	b.ReportMetric(ms(named), "evpack-named-after-reopen-ms")
	slices.Sort(window)
	b.ReportMetric(ms(window[len(window)/2]), "evpack-window-after-reopen-p50-ms")
	b.ReportMetric(ms(window[len(window)-1]), "evpack-window-after-reopen-max-ms")
	b.ReportMetric(ms(blNamed), "bleve-delete-then-ms")
}

// The passages the window benchmarks retract, one a commit: from
// firstRetracted (those before it the other write benchmarks touch) to
// lastRetracted, the one whose commit names the checkpoint the first
// LagGenerations+1 started.
const (
	firstRetracted = 402
	lastRetracted  = firstRetracted + state.LagGenerations + state.LagGenerations/2 + 1
)

// keptForRetractions returns the scale, the base records and a copy of the
// kept scale index (EVPACK_SCALE_DIR) for a benchmark that retracts
// passages firstRetracted to lastRetracted.
func keptForRetractions(b *testing.B) (Scale, []connectors.Record, string) {
	base, _ := Records(dataset(b))
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	if len(base) <= lastRetracted {
		b.Fatalf("%d base records: the benchmark names passages %d..%d", len(base), firstRetracted, lastRetracted)
	}
	return s, base, copyKept(b, root)
}

// retractInTurn commits to e the retraction of passage i's chunk (of the
// last tenant's last version in scale s, as record gives it) and deletes that
// document from idx, in turn (evpack first for even i), returning each's
// wall time.
func retractInTurn(b *testing.B, e *evpack.Engine, idx bleve.Index, s Scale, record func(i, t, v int) connectors.Record, i int) (ev, bl time.Duration) {
	r := record(i, s.Tenants-1, s.Versions-1)
	end := asof.DateFromDays(r.Chunk.Valid.From.Days() + 10)
	f := &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: r.Chunk.ID, End: end, Anchor: end.Start()}
	inTurn(i, func() {
		t0 := time.Now()
		if _, err := e.Ingest(context.Background(), connectors.Records([]connectors.Record{{Where: fmt.Sprintf("retraction %d", i), Fact: f}}), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		ev = time.Since(t0)
	}, func() {
		t0 := time.Now()
		if err := idx.Delete(r.Chunk.ID); err != nil {
			b.Fatal(err)
		}
		bl = time.Since(t0)
	})
	return ev, bl
}

// windowQueries, when EVPACK_WINDOW_QUERIES=1, asks one question after
// each retraction of BenchmarkScaleOpenAfterFacts, evpack's request (the
// pack's bytes and hash included) and bleve's filtered search by hand
// taking turns, and reports each system's median and slowest in the lag
// (no checkpoint written beside it) and in the window (its writer beside
// it): what the writer, which gives way to commits but not to queries,
// costs a request. Off by default: the queries change the commits'
// conditions (warm pages and caches), so the commit figures of runs with
// and without them do not compare.
type windowQueries struct {
	on     bool
	o      *eval.ObliQA
	s      Scale
	days   []asof.Date
	phase  string // "lag", "window"; "after" is not asked
	ev, bl map[string][]time.Duration
	n      int
}

func newWindowQueries(b *testing.B, s Scale) *windowQueries {
	q := &windowQueries{on: os.Getenv("EVPACK_WINDOW_QUERIES") == "1", s: s, phase: "lag",
		ev: map[string][]time.Duration{}, bl: map[string][]time.Duration{}}
	if q.on {
		q.o = dataset(b)
		q.days = s.AskDays(4096, scaleAskSeed)
		b.Logf("window queries: question k asks on AskDays(4096, %d)[k mod 4096] for tenant k mod %d", scaleAskSeed, s.Tenants)
	}
	return q
}

// ask times question q.n on e and on idx, in turn (evpack first for even
// i), and keeps the times under the phase.
func (q *windowQueries) ask(b *testing.B, i int, e *evpack.Engine, idx bleve.Index) {
	if !q.on || q.phase == "after" {
		return
	}
	k := q.n
	q.n++
	text := q.o.Questions[k%len(q.o.Questions)].Text
	day, tenant := q.days[k%len(q.days)], q.s.Tenant(k%q.s.Tenants)
	var ev, bl time.Duration
	inTurn(i, func() {
		t0 := time.Now()
		p, err := e.Query(context.Background(), evpack.Request{Question: text, AsOf: day, Tenant: tenant})
		if err != nil {
			b.Fatalf("window query %d: %v", k, err)
		}
		_ = p.Hash()
		ev = time.Since(t0)
	}, func() {
		t0 := time.Now()
		mq := bleve.NewMatchQuery(text)
		mq.SetField("text")
		if _, err := idx.Search(bleve.NewSearchRequestOptions(scaleFilter(mq, tenant, day), 10, 0, false)); err != nil {
			b.Fatalf("window query %d, bleve: %v", k, err)
		}
		bl = time.Since(t0)
	})
	q.ev[q.phase] = append(q.ev[q.phase], ev)
	q.bl[q.phase] = append(q.bl[q.phase], bl)
}

// report reports, for the lag and the window, evpack's median, 99th
// percentile and slowest request, bleve's median and 99th percentile, and
// evpack's median over bleve's.
func (q *windowQueries) report(b *testing.B) {
	if !q.on {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	at := func(ds []time.Duration, p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	for _, phase := range []string{"lag", "window"} {
		ev, bl := slices.Sorted(slices.Values(q.ev[phase])), slices.Sorted(slices.Values(q.bl[phase]))
		if len(ev) == 0 {
			continue
		}
		b.ReportMetric(ms(at(ev, 0.5)), "query-"+phase+"-p50-ms")
		b.ReportMetric(ms(at(ev, 0.99)), "query-"+phase+"-p99-ms")
		b.ReportMetric(ms(ev[len(ev)-1]), "query-"+phase+"-max-ms")
		b.ReportMetric(ms(at(bl, 0.5)), "bleve-query-"+phase+"-p50-ms")
		b.ReportMetric(ms(at(bl, 0.99)), "bleve-query-"+phase+"-p99-ms")
		b.ReportMetric(float64(at(ev, 0.5))/float64(at(bl, 0.5)), "query-"+phase+"-p50-vs-bleve")
	}
}
