package evpack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/pgtest"
	"github.com/evpack/evpack/internal/storage"
)

// The figures issue 29 asks for (docs/benchmarks.md, "Replication through
// PostgreSQL"): append latency on a primary alone and with a synchronous
// standby, a replica's catch-up, a new replica from the log alone, and a
// replica's query cost while it follows against a plain engine. Each
// starts its own PostgreSQL servers (internal/pgtest) and skips where
// PostgreSQL is absent. Sizes can be lowered by environment variables so
// that a loaded machine can still run them; the doc names the sizes it ran.

// replNeedsPG skips b where PostgreSQL is absent.
func replNeedsPG(b *testing.B) {
	if pgtest.Bin() == "" {
		b.Skip("needs PostgreSQL 15 (apt-get install postgresql-15; PG_BIN=/usr/lib/postgresql/15/bin)")
	}
}

// replEnvInt reads a size from the environment, def when unset.
func replEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// replVocab is the corpus vocabulary: 2,000 made-up words.
func replVocab() []string {
	v := make([]string, 2000)
	for i := range v {
		v[i] = fmt.Sprintf("w%03x", i)
	}
	return v
}

// replBatch returns generation g's batch of n chunks: 60 words each drawn
// from a Zipf law over replVocab (seeded by g), three tenants and the
// shared corpus in turn, each chunk valid from its generation's day.
func replBatch(g, n int) []connectors.Record { return replBatchOf(g, n, replTenants) }

// replTenants are the tenants replBatch's chunks go to in turn ("" is the
// shared corpus), and replQuestions' requests ask for.
var replTenants = []string{"", "acme", "globex", "initech"}

// replBatchOf is replBatch with the chunks going to tenants in turn.
func replBatchOf(g, n int, tenants []string) []connectors.Record {
	vocab := replVocab()
	rng := rand.New(rand.NewPCG(uint64(g), 29))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	day := asof.MustDate("2020-01-01").Days() + int64(g)
	recs := make([]connectors.Record, n)
	for i := range recs {
		ws := make([]string, 60)
		for j := range ws {
			ws[j] = vocab[zipf.Uint64()]
		}
		id := fmt.Sprintf("g%05d-%04d", g, i)
		tenant := tenants[i%len(tenants)]
		c := evidence.Chunk{ID: id, DocID: fmt.Sprintf("doc-%05d-%02d", g, i/10), Version: "1", Text: strings.Join(ws, " "), Tenant: tenant,
			SourceURL: "https://example.test/" + id, Connector: "bench", RetrievedAt: asof.DateFromDays(day).Start(),
			Anchor: asof.Anchor{At: asof.DateFromDays(day).Start(), Field: "published"}, Valid: asof.Interval{From: asof.DateFromDays(day)}}
		recs[i] = connectors.Record{Chunk: c, Where: fmt.Sprintf("generation %d: %s", g, id)}
	}
	return recs
}

// replQuestions returns n questions of 2 to 4 corpus words (seeded), each
// for one of the tenants or the shared corpus.
func replQuestions(n int) []Request {
	vocab := replVocab()
	rng := rand.New(rand.NewPCG(7, 29))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	out := make([]Request, n)
	for i := range out {
		ws := make([]string, 2+rng.IntN(3))
		for j := range ws {
			ws[j] = vocab[zipf.Uint64()]
		}
		out[i] = Request{Question: strings.Join(ws, " "), AsOf: asof.MustDate("2030-01-01"),
			Tenant: replTenants[i%len(replTenants)], K: 10}
	}
	return out
}

// replPct returns the p-th percentile (nearest rank) of ds, in milliseconds.
func replPct(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}

func replOpen(b *testing.B, dir string) *Engine {
	b.Helper()
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

func replLog(b *testing.B, dsn string) *PostgresLog {
	b.Helper()
	l, err := OpenPostgresLog(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	return l
}

// replSameManifest fails b unless the two index directories hold the same
// MANIFEST.json (which names every batch's and the checkpoint's sum).
func replSameManifest(b *testing.B, a, c string) {
	b.Helper()
	ra, err := os.ReadFile(filepath.Join(a, storage.ManifestName))
	if err != nil {
		b.Fatal(err)
	}
	rc, err := os.ReadFile(filepath.Join(c, storage.ManifestName))
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Equal(ra, rc) {
		b.Fatalf("MANIFEST.json of %s and %s differ", a, c)
	}
}

// BenchmarkPGAppend appends one real sealed batch (the batch file of a
// commit of 100 chunks) to two PostgreSQL logs taking turns append by
// append: one on a primary alone, one on a primary with a synchronous
// standby (synchronous_commit on, FIRST 1 (s1)), both with fsync on. It
// reports each one's p50 and p99 (ms) over EVPACK_BENCH_APPENDS appends
// (200) and the body's size. An append is pglog's one transaction (lock
// the writer row, check the epoch and chain, insert, notify), without the
// lease renewal a writer makes before it.
//
//	PG_BIN=/usr/lib/postgresql/15/bin go test -run '^$' -bench BenchmarkPGAppend -benchtime 1x .
func BenchmarkPGAppend(b *testing.B) {
	replNeedsPG(b)
	ctx := context.Background()
	n := replEnvInt(b, "EVPACK_BENCH_APPENDS", 200)
	// A real body: the batch file a commit of 100 chunks writes.
	dir := b.TempDir()
	e := replOpen(b, dir)
	if _, err := e.Ingest(ctx, connectors.Records(replBatch(1, 100)), IngestOptions{}); err != nil {
		b.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, storage.ChunksDir, storage.BatchName(1)))
	if err != nil {
		b.Fatal(err)
	}
	sum := evidence.Sum(body)

	alone := pgtest.Start(b, pgtest.Options{Durable: true})
	primary := pgtest.Start(b, pgtest.Options{Durable: true})
	primary.StartStandby(b, "s1")
	type side struct {
		name  string
		log   *PostgresLog
		epoch int64
		prev  string
		lat   []time.Duration
	}
	sides := []*side{{name: "alone", log: replLog(b, alone.DSN)}, {name: "standby", log: replLog(b, primary.DSN)}}
	for _, s := range sides {
		if s.epoch, err = s.log.Acquire(ctx, "bench", time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		base := make([]int64, len(sides))
		for i, s := range sides {
			s.lat = s.lat[:0]
			h, err := s.log.Head(ctx)
			if err != nil {
				b.Fatal(err)
			}
			base[i], s.prev = h.Generation, h.Sum
		}
		for g := 1; g <= n; g++ {
			for k := range sides {
				// Take turns, and swap who goes first each round.
				i := k
				if g%2 == 0 {
					i = len(sides) - 1 - k
				}
				s := sides[i]
				en := evlog.Entry{Generation: base[i] + int64(g), Prev: s.prev, Sum: sum, CommittedAt: at, Epoch: s.epoch, Body: body}
				t0 := time.Now()
				if err := s.log.Append(ctx, en); err != nil {
					b.Fatalf("%s: %v", s.name, err)
				}
				s.lat = append(s.lat, time.Since(t0))
				s.prev = sum
			}
		}
	}
	for _, s := range sides {
		b.ReportMetric(replPct(s.lat, 50), s.name+"-p50-ms")
		b.ReportMetric(replPct(s.lat, 99), s.name+"-p99-ms")
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
	b.ReportMetric(float64(n), "appends-each")
}

// replRun is what replWriterThenReplica measured.
type replRun struct {
	commit    time.Duration // the writer's commits, all of them
	follow    time.Duration // the new replica's follow to the head
	logBytes  int64         // the bodies appended
	chunks    int
	gens      int
	batchSize int
}

// replWriterThenReplica has a writer lead a log on a durable server and
// commit gens generations of size chunks each, then an engine on an empty
// directory (generation 0) follows the log to its head. Both indexes end
// with the same MANIFEST.json.
func replWriterThenReplica(b *testing.B, gens, size int) replRun {
	ctx := context.Background()
	srv := pgtest.Start(b, pgtest.Options{Durable: true})
	wdir, rdir := b.TempDir(), b.TempDir()
	w := replOpen(b, wdir)
	if err := w.Lead(ctx, replLog(b, srv.DSN), "writer", time.Hour); err != nil {
		b.Fatal(err)
	}
	batches := make([][]connectors.Record, gens)
	for g := range batches {
		batches[g] = replBatch(g+1, size)
	}
	run := replRun{gens: gens, batchSize: size, chunks: gens * size}
	t0 := time.Now()
	for g, recs := range batches {
		if _, err := w.Ingest(ctx, connectors.Records(recs), IngestOptions{}); err != nil {
			b.Fatalf("generation %d: %v", g+1, err)
		}
	}
	run.commit = time.Since(t0)
	if got := w.AppliedGeneration(); got != int64(gens) {
		b.Fatalf("writer at generation %d, want %d", got, gens)
	}
	rlog := replLog(b, srv.DSN)
	if err := rlog.Read(ctx, 1, func(en evlog.Entry) error { run.logBytes += int64(len(en.Body)); return nil }); err != nil {
		b.Fatal(err)
	}
	r := replOpen(b, rdir)
	t0 = time.Now()
	if err := r.Follow(ctx, rlog, FollowOptions{Until: int64(gens)}); err != nil {
		b.Fatal(err)
	}
	run.follow = time.Since(t0)
	replSameManifest(b, wdir, rdir)
	return run
}

func (r replRun) report(b *testing.B) {
	b.ReportMetric(r.follow.Seconds(), "follow-s")
	b.ReportMetric(float64(r.follow.Milliseconds())/float64(r.gens), "follow-ms/gen")
	b.ReportMetric(r.commit.Seconds(), "writer-s")
	b.ReportMetric(float64(r.commit.Milliseconds())/float64(r.gens), "writer-ms/commit")
	b.ReportMetric(float64(r.chunks)/r.follow.Seconds(), "follow-chunks/s")
	b.ReportMetric(float64(r.gens), "generations")
	b.ReportMetric(float64(r.chunks), "chunks")
	b.ReportMetric(float64(r.logBytes), "log-bytes")
	b.Logf("%d generations of %d chunks (%d bytes in the log): writer %s (%.1f ms a commit), replica from generation 0 %s (%.1f ms a generation)",
		r.gens, r.batchSize, r.logBytes, r.commit.Round(time.Millisecond), float64(r.commit.Microseconds())/1e3/float64(r.gens),
		r.follow.Round(time.Millisecond), float64(r.follow.Microseconds())/1e3/float64(r.gens))
}

// BenchmarkReplicaCatchUp: a writer commits EVPACK_BENCH_GENS generations
// (500) of 100 chunks, appending each to a PostgreSQL log (fsync on); a
// replica stopped at generation 0 then follows to the head. It reports the
// replica's wall time and time per generation beside the writer's own time
// per commit (which applies each entry through the same path, plus the
// append and the preparation of the batch).
//
//	PG_BIN=/usr/lib/postgresql/15/bin go test -run '^$' -bench BenchmarkReplicaCatchUp -benchtime 1x -timeout 30m .
func BenchmarkReplicaCatchUp(b *testing.B) {
	replNeedsPG(b)
	gens := replEnvInt(b, "EVPACK_BENCH_GENS", 500)
	var run replRun
	for b.Loop() {
		run = replWriterThenReplica(b, gens, 100)
	}
	run.report(b)
}

// BenchmarkReplicaFromLog: a new replica built from the log alone at
// EVPACK_BENCH_CHUNKS chunks (100,000) committed in batches of 1,000, against
// the writer's ingest of the same batches.
//
//	PG_BIN=/usr/lib/postgresql/15/bin go test -run '^$' -bench BenchmarkReplicaFromLog -benchtime 1x -timeout 30m .
func BenchmarkReplicaFromLog(b *testing.B) {
	replNeedsPG(b)
	chunks := replEnvInt(b, "EVPACK_BENCH_CHUNKS", 100_000)
	if chunks%1000 != 0 {
		b.Fatalf("EVPACK_BENCH_CHUNKS=%d: want a multiple of 1,000", chunks)
	}
	var run replRun
	for b.Loop() {
		run = replWriterThenReplica(b, chunks/1000, 1000)
	}
	run.report(b)
}

// replCopyDir copies the regular files under src to dst (an index directory:
// MANIFEST.json, chunks/, the checkpoint, the lexical index).
func replCopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// BenchmarkReplicaQueries: a replica that keeps following a log while its
// writer commits a batch of 10 chunks every EVPACK_BENCH_COMMIT_MS (1000)
// milliseconds, against a plain engine opened on a copy of the writer's
// directory taken before those commits (it follows nothing). The corpus:
// EVPACK_BENCH_GENS generations (100) of 100 chunks. Both answer the same
// EVPACK_BENCH_QUESTIONS questions (200), EVPACK_BENCH_ROUNDS times over
// (20), taking turns question by question (who goes first alternates), once
// latest and once pinned to the generation before the plain engine's head,
// where their packs must be equal (their hashes are compared). The rounds
// make the turns last long enough for the writer to commit and the replica
// to apply meanwhile; no result cache is set. The same turns then run
// again with the writer stopped (idle-), the replica at the writer's head
// against a plain engine on a copy of it (both compared, latest too). It
// reports each one's throughput and p50/p99, the ratio of the replica's
// throughput to the plain engine's, the packs that differ (want 0) and the
// generations the replica applied during the turns. With
// EVPACK_BENCH_FOLLOW_TENANT set, the writer's commits during the turns go
// to that tenant, which no question asks: the questions' scopes are then
// the same on both engines, and the latest packs are compared too. With
// EVPACK_BENCH_PLAIN_INGESTS=1 the plain engine commits each of the
// writer's batches as well (locally, no log), so that the two differ only
// in how the commits reach them. With EVPACK_BENCH_BACKLOG=N the writer
// commits N batches of 10 before the turns and stops, and the replica
// applies them from the log during the turns, back to back, with no
// writer on its cores (backlog-left: what it had not applied when they
// ended).
//
//	PG_BIN=/usr/lib/postgresql/15/bin go test -run '^$' -bench BenchmarkReplicaQueries -benchtime 1x .
func BenchmarkReplicaQueries(b *testing.B) {
	replNeedsPG(b)
	ctx := context.Background()
	gens := replEnvInt(b, "EVPACK_BENCH_GENS", 100)
	nq := replEnvInt(b, "EVPACK_BENCH_QUESTIONS", 200)
	rounds := replEnvInt(b, "EVPACK_BENCH_ROUNDS", 20)
	every := time.Duration(replEnvInt(b, "EVPACK_BENCH_COMMIT_MS", 1000)) * time.Millisecond
	// EVPACK_BENCH_FOLLOW_TENANT: the tenant of every chunk the writer
	// commits during the turns; unset, they go to the questions' tenants in
	// turn. A tenant no question asks ("umbrella") leaves the questions'
	// scopes as the plain engine has them (their lexical partitions too),
	// so that what the replica pays is the applying alone, not a larger
	// corpus.
	followTenants := replTenants
	if t := os.Getenv("EVPACK_BENCH_FOLLOW_TENANT"); t != "" {
		followTenants = []string{t}
	}
	// EVPACK_BENCH_PLAIN_INGESTS=1: the plain engine commits each of the
	// writer's batches too, on its own directory and no log, as one machine
	// serving a daily mirror does. Both engines then hold the same chunks
	// in the same scopes and take a commit as often, so what the replica
	// pays beyond the plain engine is following a log, not the commits'
	// data; their latest packs are not compared (one may be a commit ahead).
	plainIngests := os.Getenv("EVPACK_BENCH_PLAIN_INGESTS") == "1"
	// EVPACK_BENCH_BACKLOG=N: the writer commits its N batches of 10 before
	// the turns, and stops; during the turns the replica applies them from
	// the log as fast as it can. The replica's machine then does what a
	// replica does, and no writer shares its cores (a writer runs on its
	// own machine); the turns show whether the replica still had entries to
	// apply when they ended (backlog-left > 0), else the row understates
	// what following costs.
	backlog := replEnvInt(b, "EVPACK_BENCH_BACKLOG", 0)
	srv := pgtest.Start(b, pgtest.Options{Durable: true})
	wdir, rdir, pdir := b.TempDir(), b.TempDir(), b.TempDir()
	w := replOpen(b, wdir)
	if err := w.Lead(ctx, replLog(b, srv.DSN), "writer", time.Hour); err != nil {
		b.Fatal(err)
	}
	for g := 1; g <= gens; g++ {
		if _, err := w.Ingest(ctx, connectors.Records(replBatch(g, 100)), IngestOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// The plain engine's directory is a copy of the writer's, taken while
	// the writer is idle, so it is the index at generation gens.
	if err := replCopyDir(wdir, pdir); err != nil {
		b.Fatal(err)
	}
	plain := replOpen(b, pdir)
	r := replOpen(b, rdir)
	rlog := replLog(b, srv.DSN)
	if err := r.Follow(ctx, rlog, FollowOptions{Until: int64(gens)}); err != nil {
		b.Fatal(err)
	}
	// Pinned requests name the generation before the plain engine's head,
	// so that both engines answer through the same path (a request pinned
	// to an engine's head is answered as its latest).
	pin := int64(gens - 1)
	qs := replQuestions(nq)
	var backlogBatches [][]connectors.Record
	for g := gens + 1; g <= gens+backlog; g++ {
		batch := replBatchOf(g, 10, followTenants)
		if _, err := w.Ingest(ctx, connectors.Records(batch), IngestOptions{}); err != nil {
			b.Fatal(err)
		}
		backlogBatches = append(backlogBatches, batch)
	}
	// Warm both: each answers every question once, latest and pinned,
	// before the timed turns (first touches of the index files are not the
	// cost measured here).
	for _, q := range qs {
		for _, e := range []*Engine{r, plain} {
			for _, g := range []int64{0, pin} {
				q.Generation = g
				if _, err := e.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		}
	}

	// The background: the writer commits, the replica follows.
	bg, stop := context.WithCancel(ctx)
	writerDone, followDone := make(chan error, 1), make(chan error, 1)
	commits := 0
	go func() {
		if backlog > 0 { // the writer is done; the plain engine takes its batches, back to back, if asked to
			for _, batch := range backlogBatches {
				if !plainIngests || bg.Err() != nil {
					break
				}
				if _, err := plain.Ingest(bg, connectors.Records(batch), IngestOptions{}); err != nil && bg.Err() == nil {
					writerDone <- err
					return
				}
				commits++
			}
			writerDone <- nil
			return
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for g := gens + 1; ; g++ {
			select {
			case <-bg.Done():
				writerDone <- nil
				return
			case <-tick.C:
			}
			batch := replBatchOf(g, 10, followTenants)
			_, err := w.Ingest(bg, connectors.Records(batch), IngestOptions{})
			if err == nil && plainIngests {
				_, err = plain.Ingest(bg, connectors.Records(batch), IngestOptions{})
			}
			if err != nil {
				if bg.Err() != nil {
					writerDone <- nil
				} else {
					writerDone <- err
				}
				return
			}
			commits++
		}
	}()
	go func() { followDone <- r.Follow(bg, rlog, FollowOptions{}) }()

	startGen := r.AppliedGeneration()
	var latest, pinned replTurns
	for b.Loop() {
		latest = replTurnsOf(b, "following-latest", qs, rounds, r, plain, 0, !plainIngests && !slices.Equal(followTenants, replTenants))
		pinned = replTurnsOf(b, "following-pinned", qs, rounds, r, plain, pin, true)
	}
	applied := r.AppliedGeneration() - startGen
	left := w.AppliedGeneration() - r.AppliedGeneration()
	stop()
	if err := <-writerDone; err != nil {
		b.Fatalf("background writer: %v", err)
	}
	if err := <-followDone; err != nil && bg.Err() == nil {
		b.Fatalf("replica follow: %v", err)
	}
	// The same turns once more with the writer stopped, against a plain
	// engine on a copy of the writer's directory at its head, which the
	// replica then reaches: the same corpus on both, so both answers are
	// compared, latest too. What the replica loses here is the cost of
	// having followed (none is expected: its files are the writer's); what
	// it loses only above is the cost of applying while it answers, and of
	// holding more chunks than the plain engine.
	head := w.AppliedGeneration()
	if err := r.Follow(ctx, rlog, FollowOptions{Until: head}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil { // a quiet directory to copy
		b.Fatal(err)
	}
	pdir2 := b.TempDir()
	if err := replCopyDir(wdir, pdir2); err != nil {
		b.Fatal(err)
	}
	plain2 := replOpen(b, pdir2)
	replTurnsOf(b, "warm", qs, 1, r, plain2, 0, true) // warm the new engine
	replTurnsOf(b, "warm", qs, 1, r, plain2, pin, true)
	idleLatest := replTurnsOf(b, "idle-latest", qs, rounds, r, plain2, 0, true)
	idlePinned := replTurnsOf(b, "idle-pinned", qs, rounds, r, plain2, pin, true)
	for _, t := range []replTurns{latest, pinned, idleLatest, idlePinned} {
		if t.mismatches != 0 {
			b.Errorf("%d of %d packs differ between the replica and the plain engine", t.mismatches, len(t.latR))
		}
	}
	latest.report(b, "latest-")
	pinned.report(b, "pinned-")
	idleLatest.report(b, "idle-latest-")
	idlePinned.report(b, "idle-pinned-")
	b.ReportMetric(float64(applied), "gens-applied")
	if backlog > 0 {
		b.ReportMetric(float64(left), "backlog-left")
	}
	b.ReportMetric(float64(len(latest.latR)), "queries-each")
	if backlog > 0 {
		b.Logf("backlog: the writer committed %d batches of 10 before the turns (tenants %q in turn) and stopped; the replica applied %d of them during the turns, %d left; the plain engine took %d of them", backlog, followTenants, applied, left, commits)
	}
	b.Logf("corpus %d chunks, the plain engine at generation %d (taking the writer's commits too: %t), pins at %d; %d questions %d times each, latest then pinned; the writer committed %d batches of 10 (tenants %q in turn, one every %s) and the replica applied %d generations during the turns; idle: both at generation %d",
		gens*100, gens, plainIngests, pin, nq, rounds, commits, followTenants, every, applied, head)
}

// replTurns is what replTurnsOf measured: each engine's latencies (r the
// replica, p the plain engine) and the pairs whose packs differ.
type replTurns struct {
	latR, latP []time.Duration
	totR, totP time.Duration
	mismatches int
}

// replTurnsOf asks r and plain each question of qs, rounds times over, pinned
// to generation pin (0: latest), taking turns question by question (who
// goes first alternates), each query labelled with row and its engine. With compare it counts the questions whose packs'
// hashes differ (the engines must then answer at the same generation).
func replTurnsOf(b *testing.B, row string, qs []Request, rounds int, r, plain *Engine, pin int64, compare bool) replTurns {
	ctx := context.Background()
	var t replTurns
	for i := range rounds * len(qs) {
		q := qs[i%len(qs)]
		q.Generation = pin
		order := []*Engine{r, plain}
		if i%2 == 1 {
			order = []*Engine{plain, r}
		}
		var hashes [2]string
		for _, e := range order {
			t0 := time.Now()
			var p *evidence.Pack
			var err error
			who := "plain"
			if e == r {
				who = "replica"
			}
			// Labelled, so that a CPU profile of the run splits by engine
			// and row (go tool pprof -tags): what each query cost in CPU,
			// beside what it took in time; and a region of an execution
			// trace (-test.trace; go tool trace, "User-defined regions"),
			// which splits each one's time into running, waiting for a
			// core and blocked, by what.
			pprof.Do(ctx, pprof.Labels("turns", row, "engine", who), func(ctx context.Context) {
				trace.WithRegion(ctx, row+"/"+who, func() { p, err = e.Query(ctx, q) })
			})
			d := time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if e == r {
				t.latR, t.totR, hashes[0] = append(t.latR, d), t.totR+d, p.Hash()
			} else {
				t.latP, t.totP, hashes[1] = append(t.latP, d), t.totP+d, p.Hash()
			}
		}
		if compare && hashes[0] != hashes[1] {
			t.mismatches++
		}
	}
	return t
}

func (t replTurns) report(b *testing.B, prefix string) {
	qpsR, qpsP := float64(len(t.latR))/t.totR.Seconds(), float64(len(t.latP))/t.totP.Seconds()
	b.ReportMetric(qpsR, prefix+"replica-q/s")
	b.ReportMetric(qpsP, prefix+"plain-q/s")
	b.ReportMetric(qpsR/qpsP, prefix+"ratio")
	b.ReportMetric(replPct(t.latR, 50), prefix+"replica-p50-ms")
	b.ReportMetric(replPct(t.latR, 99), prefix+"replica-p99-ms")
	b.ReportMetric(replPct(t.latP, 50), prefix+"plain-p50-ms")
	b.ReportMetric(replPct(t.latP, 99), prefix+"plain-p99-ms")
	b.ReportMetric(float64(t.mismatches), prefix+"mismatches")
}

// BenchmarkLiveEngines: what answering from an engine that has taken its
// commits in this process costs, against one opened afresh on the same
// files. A writer commits EVPACK_BENCH_GENS generations (100) of 100 chunks
// and then EVPACK_BENCH_SMALL (300) of 10, and a replica follows it to
// the head. Then each of these takes idle turns (EVPACK_BENCH_ROUNDS
// rounds, 20, of EVPACK_BENCH_QUESTIONS questions, 200, latest) against
// an engine opened on a copy of the writer's directory, twice, in this
// order: the live replica; the live writer; an engine opened on a copy
// of the replica's directory; the same after one commit into a tenant no
// question asks (its first write unfolds the state into memory at once).
// It reports each one's throughput ratio (want 1: the same files, the
// same chunks) and p50s; packs are not compared (the unfolded one holds
// a chunk more).
//
//	PG_BIN=/usr/lib/postgresql/15/bin go test -run '^$' -bench BenchmarkLiveEngines -benchtime 1x .
func BenchmarkLiveEngines(b *testing.B) {
	replNeedsPG(b)
	ctx := context.Background()
	gens := replEnvInt(b, "EVPACK_BENCH_GENS", 100)
	small := replEnvInt(b, "EVPACK_BENCH_SMALL", 300)
	rounds := replEnvInt(b, "EVPACK_BENCH_ROUNDS", 20)
	qs := replQuestions(replEnvInt(b, "EVPACK_BENCH_QUESTIONS", 200))
	srv := pgtest.Start(b, pgtest.Options{Durable: true})
	wdir, rdir := b.TempDir(), b.TempDir()
	w := replOpen(b, wdir)
	if err := w.Lead(ctx, replLog(b, srv.DSN), "writer", time.Hour); err != nil {
		b.Fatal(err)
	}
	for g := 1; g <= gens+small; g++ {
		batch := replBatch(g, 100)
		if g > gens {
			batch = replBatch(g, 10)
		}
		if _, err := w.Ingest(ctx, connectors.Records(batch), IngestOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	r := replOpen(b, rdir)
	if err := r.Follow(ctx, replLog(b, srv.DSN), FollowOptions{Until: int64(gens + small)}); err != nil {
		b.Fatal(err)
	}
	copyOf := func(dir string) *Engine {
		to := b.TempDir()
		if err := replCopyDir(dir, to); err != nil {
			b.Fatal(err)
		}
		return replOpen(b, to)
	}
	peer, copyR, unfolded := copyOf(wdir), copyOf(rdir), copyOf(rdir)
	if _, err := unfolded.Ingest(ctx, connectors.Records(replBatchOf(gens+small+1, 1, []string{"umbrella"})), IngestOptions{}); err != nil {
		b.Fatal(err)
	}
	engines := []struct {
		name string
		e    *Engine
	}{{"replica", r}, {"writer", w}, {"copy-of-replica", copyR}, {"unfolded", unfolded}}
	for _, e := range []*Engine{r, w, copyR, unfolded, peer} { // first touches of the files are not what is measured
		for _, q := range qs {
			if _, err := e.Query(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	ratios := map[string][]float64{}
	for b.Loop() {
		for range 2 {
			for _, v := range engines {
				t := replTurnsOf(b, "live-"+v.name, qs, rounds, v.e, peer, 0, false)
				ratio := (float64(len(t.latR)) / t.totR.Seconds()) / (float64(len(t.latP)) / t.totP.Seconds())
				ratios[v.name] = append(ratios[v.name], ratio)
				b.Logf("%-16s against a fresh copy of the writer: throughput ratio %.4f, p50 %.4f / %.4f ms", v.name, ratio, replPct(t.latR, 50), replPct(t.latP, 50))
			}
		}
	}
	for _, v := range engines {
		rs := ratios[v.name]
		b.ReportMetric(rs[len(rs)-2], v.name+"-ratio-1")
		b.ReportMetric(rs[len(rs)-1], v.name+"-ratio-2")
	}
}
