package obliqa

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
)

// scaleCommitsSeed draws what BenchmarkScaleAfterCommits commits.
const scaleCommitsSeed = 44

// BenchmarkScaleAfterCommits (issue 30): what a mirror's small commits
// cost the queries after them. Bleve's merge plan decides how many
// segments a partition is left with after small batches, and a query pays
// a dictionary lookup per segment for each term; Merge makes each
// partition one segment again. On two copies of the kept scale index
// (EVPACK_SCALE_DIR, made by BenchmarkScale), it makes
// EVPACK_SCALE_COMMITS commits (default 40) of 100 chunks to one of them,
// each chunk a stored version of a seeded passage and tenant under a new
// ID (so that the requests read the partitions the commits wrote), closes
// and opens it again, then answers 1,000 questions of the shape on both,
// once untimed (partitions opened), then b.N timed (the same ones again in
// turn), the two copies taking turns, the first of them alternating by
// question. It reports each copy's p50
// and p99 in the timed pass, the ratio of the committed copy's over the
// other's, and the commits' median wall time.
//
//	EVPACK_SCALE_SHAPE=spread EVPACK_SCALE=2x4 EVPACK_SCALE_DIR=/tmp/scale EVPACK_OBLIQA_DIR=/path/to/obliqa go test ./internal/obliqa -run '^$' -bench 'ScaleAfterCommits$' -benchtime 1000x -timeout 1h
func BenchmarkScaleAfterCommits(b *testing.B) {
	o := dataset(b)
	base, _ := Records(o)
	s := scaleFromEnv(b)
	root := keptScaleDir(b, s, base)
	commits := 40
	if v := os.Getenv("EVPACK_SCALE_COMMITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("EVPACK_SCALE_COMMITS=%q: want a positive number", v)
		}
		commits = n
	}
	b.Logf("scale %dx%d, %s shape: %d commits of 100 chunks, seed %d", s.Tenants, s.Versions, s.Shape(), commits, scaleCommitsSeed)
	ctx := context.Background()
	tmp := b.TempDir()
	open := func(name string) *evpack.Engine {
		dir := filepath.Join(tmp, name)
		eng, err := evpack.Open(dir, evpack.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return eng
	}
	for _, name := range []string{"as-built", "committed"} {
		if err := os.CopyFS(filepath.Join(tmp, name), os.DirFS(filepath.Join(root, "evpack"))); err != nil {
			b.Fatal(err)
		}
	}

	eng := open("committed")
	rng := rand.New(rand.NewPCG(scaleCommitsSeed, 0))
	var took []time.Duration
	record := s.Records(base)
	for c := range commits {
		recs := make([]connectors.Record, 100)
		for k := range recs {
			recs[k] = record(rng.IntN(len(base)), rng.IntN(s.Tenants), rng.IntN(s.Versions))
			recs[k].Chunk.ID += fmt.Sprintf("/c%d-%d", c, k)
		}
		t0 := time.Now()
		if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
	committed, asBuilt := open("committed"), open("as-built")
	defer committed.Close()
	defer asBuilt.Close()

	const questions = 1000 // the timed pass asks them in turn, b.N in all
	days := s.AskDays(questions, scaleAskSeed)
	req := func(i int) evpack.Request {
		i %= questions
		return evpack.Request{Question: o.Questions[i%len(o.Questions)].Text, AsOf: days[i], Tenant: s.Tenant(i % s.Tenants)}
	}
	turn := func(e *evpack.Engine, i int) time.Duration {
		t0 := time.Now()
		p, err := e.Query(ctx, req(i))
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Hash()
		return time.Since(t0)
	}
	for i := range questions { // partitions opened, pages read: the pass after is timed
		turn(asBuilt, i)
		turn(committed, i)
	}
	var before, after []time.Duration
	for i := 0; b.Loop(); i++ {
		inTurn(i, func() { before = append(before, turn(asBuilt, i)) }, func() { after = append(after, turn(committed, i)) })
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(Percentile(before, 0.5)), "as-built-p50-ms")
	b.ReportMetric(ms(Percentile(before, 0.99)), "as-built-p99-ms")
	b.ReportMetric(ms(Percentile(after, 0.5)), "committed-p50-ms")
	b.ReportMetric(ms(Percentile(after, 0.99)), "committed-p99-ms")
	b.ReportMetric(ms(Percentile(after, 0.5))/ms(Percentile(before, 0.5)), "p50-committed-vs-as-built")
	b.ReportMetric(ms(Percentile(after, 0.99))/ms(Percentile(before, 0.99)), "p99-committed-vs-as-built")
	b.ReportMetric(ms(Percentile(took, 0.5)), "commit-p50-ms")
}
