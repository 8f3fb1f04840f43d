package obliqa

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// windowCommits is how many commits of 100 new chunks
// BenchmarkScaleChunkWindows makes: 12,000 chunks, past the checkpoint's
// lag (4,096 chunks) and the half of it after, twice.
const windowCommits = 120

// windowQuestions is how many random-day questions BenchmarkScaleChunkWindows
// asks, twice, once the commits are done.
const windowQuestions = 1000

// BenchmarkScaleChunkWindows (issue 30): what a mirror's commits of new
// chunks cost over windows of the checkpoint, the checkpoints written
// beside them included. On a copy of the kept scale index
// (EVPACK_SCALE_DIR, made by BenchmarkScale), it commits windowCommits
// batches of 100 new chunks (Scale.Next: the next version of passages), each
// taking turns with bare bleve's batch of the same 100 documents on its
// copy (evpack first on even commits). The commits past the lag start a
// checkpoint written ahead, on a spare core, which a later commit names:
// whole, or a delta level over the checkpoint (state.DeltaAt). It reports
// evpack's median, 99th percentile and slowest commit, bleve's median, the
// sum of evpack's commits over bleve's, the process's CPU time over the
// run (both systems' and evpack's writer's: the same bleve work whichever
// evpack writes), and the bytes of the checkpoint files the run named
// (each file counted once, when it first appears); then, on the index
// opened again, the second of two passes of windowQuestions random-day
// questions, evpack's request (the pack's bytes and hash included) and
// bleve's filtered search taking turns. b.N is not used: one pass.
//
//	EVPACK_SCALE=8x10 EVPACK_SCALE_SHAPE=spread EVPACK_SCALE_DIR=/tmp/s1m EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'ScaleChunkWindows$' -benchtime 1x -timeout 1h -v
func BenchmarkScaleChunkWindows(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	if len(base) < 100*windowCommits {
		b.Fatalf("%d base records: the benchmark writes the next version of %d passages", len(base), 100*windowCommits)
	}
	recs := s.Next(base, 100*windowCommits)
	dir := copyKept(b, root)
	evDir := filepath.Join(dir, "evpack")
	ctx := context.Background()
	e, err := evpack.Open(evDir, evpack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx, err := bleve.Open(filepath.Join(dir, "bleve"))
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	seen := map[string]bool{}
	for _, f := range checkpointFiles(b, evDir) {
		seen[f.name] = true
	}
	var written int64
	var names []string
	var evs, bls []time.Duration
	var evSum, blSum time.Duration
	c0 := cpuTime(b)
	for i := range windowCommits {
		rs := recs[100*i : 100*(i+1)]
		inTurn(i, func() {
			t0 := time.Now()
			if _, err := e.Ingest(ctx, connectors.Records(rs), evpack.IngestOptions{}); err != nil {
				b.Fatal(err)
			}
			evs = append(evs, time.Since(t0))
		}, func() {
			t0 := time.Now()
			indexScale(b, idx, rs)
			bls = append(bls, time.Since(t0))
		})
		evSum, blSum = evSum+evs[i], blSum+bls[i]
		for _, f := range checkpointFiles(b, evDir) {
			if !seen[f.name] {
				seen[f.name] = true
				written += f.size
				names = append(names, fmt.Sprintf("%s at commit %d (%.1f MB)", f.name, i, float64(f.size)/1e6))
			}
		}
	}
	if err := e.Close(); err != nil { // a checkpoint still being written ahead is dropped
		b.Fatal(err)
	}
	cpu := cpuTime(b) - c0
	// Then random-day questions on the index opened again (its checkpoint,
	// and its delta level when it has one, and the batches after them),
	// evpack's request and bleve's filtered search taking turns: what a
	// delta level costs a request. Two passes of windowQuestions; the
	// second's are reported.
	if e, err = evpack.Open(evDir, evpack.Options{}); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	days := s.AskDays(windowQuestions, scaleAskSeed)
	var evQ, blQ []time.Duration
	for pass := range 2 {
		evQ, blQ = evQ[:0], blQ[:0]
		for i := range windowQuestions {
			q, tenant := o.Questions[i%len(o.Questions)].Text, s.Tenant(i%s.Tenants)
			inTurn(i+pass, func() {
				t0 := time.Now()
				p, err := e.Query(ctx, evpack.Request{Question: q, AsOf: days[i], Tenant: tenant})
				if err != nil {
					b.Fatal(err)
				}
				_ = p.Hash()
				evQ = append(evQ, time.Since(t0))
			}, func() {
				t0 := time.Now()
				mq := bleve.NewMatchQuery(q)
				mq.SetField("text")
				if _, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(scaleFilter(mq, tenant, days[i]), 10, 0, false)); err != nil {
					b.Fatal(err)
				}
				blQ = append(blQ, time.Since(t0))
			})
		}
	}
	slices.Sort(evQ)
	slices.Sort(blQ)
	b.Logf("checkpoint files named: %s", strings.Join(names, "; "))
	slices.Sort(evs)
	slices.Sort(bls)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(evs[len(evs)/2]), "evpack-commit-p50-ms")
	b.ReportMetric(ms(evs[len(evs)*99/100]), "evpack-commit-p99-ms")
	b.ReportMetric(ms(evs[len(evs)-1]), "evpack-commit-max-ms")
	b.ReportMetric(ms(bls[len(bls)/2]), "bleve-batch-p50-ms")
	b.ReportMetric(ms(bls[len(bls)-1]), "bleve-batch-max-ms")
	b.ReportMetric(float64(evSum)/float64(blSum), "evpack-vs-bleve-summed")
	b.ReportMetric(cpu.Seconds(), "process-cpu-s")
	b.ReportMetric(float64(written)/1e6, "checkpoint-MB-written")
	b.ReportMetric(float64(len(names)), "checkpoints-named")
	b.ReportMetric(ms(evQ[len(evQ)/2]), "evpack-query-p50-ms")
	b.ReportMetric(ms(evQ[len(evQ)*99/100]), "evpack-query-p99-ms")
	b.ReportMetric(ms(blQ[len(blQ)/2]), "bleve-filtered-query-p50-ms")
	b.ReportMetric(float64(evQ[len(evQ)/2])/float64(blQ[len(blQ)/2]), "query-p50-evpack-vs-bleve")
}

// checkpointFile is a checkpoint file of an index and its size.
type checkpointFile struct {
	name string
	size int64
}

// checkpointFiles lists the checkpoint files (whole, state-*.bin, and
// delta levels, delta-*.bin) in the evpack index dir, by name.
func checkpointFiles(b *testing.B, dir string) []checkpointFile {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var out []checkpointFile
	for _, en := range entries {
		n := en.Name()
		if !strings.HasSuffix(n, ".bin") || !(strings.HasPrefix(n, "state-") || strings.HasPrefix(n, "delta-")) {
			continue
		}
		fi, err := en.Info()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, checkpointFile{n, fi.Size()})
	}
	return out
}
