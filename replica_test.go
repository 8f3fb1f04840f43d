package evpack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/pgtest"
	"github.com/evpack/evpack/internal/testsize"
	"github.com/stretchr/testify/require"
)

// replicaRecords returns generation g's batch of the replication test: a
// chunk of a tenant that turns with g ("" is the shared corpus), its text
// drawn from a small vocabulary so that commits move each other's
// statistics; every 7th generation a second version of an earlier chunk
// that ends it (a fact).
func replicaRecords(g int) []connectors.Record {
	tenants := []string{"", "acme", "globex"}
	words := []string{"retention", "records", "capital", "liquidity", "audit", "ledger", "filing", "revenue"}
	day := asof.MustDate("2023-01-01").Days() + int64(g)*3
	mk := func(id, tenant, text string, from int64, to int64) connectors.Record {
		c := evidence.Chunk{ID: id, DocID: "doc-" + tenant, Version: id, Text: text, Tenant: tenant,
			SourceURL: "https://example.test/" + id, Connector: "test", RetrievedAt: asof.DateFromDays(day).Start(),
			Anchor: asof.Anchor{At: asof.DateFromDays(from).Start(), Field: "published"}, Valid: asof.Interval{From: asof.DateFromDays(from)}}
		if to > 0 {
			c.Valid.To = asof.DateFromDays(to)
		}
		return connectors.Record{Chunk: c, Where: fmt.Sprintf("generation %d: %s", g, id)}
	}
	tenant := tenants[g%3]
	text := fmt.Sprintf("%s of %s and %s, item %d", words[g%8], words[(g*3)%8], words[(g*5+1)%8], g)
	recs := []connectors.Record{mk(fmt.Sprintf("c%03d", g), tenant, text, day, 0)}
	if g%7 == 0 && g > 7 {
		old := g - 7
		prev := mk(fmt.Sprintf("c%03d", old), tenants[old%3], fmt.Sprintf("%s of %s and %s, item %d", words[old%8], words[(old*3)%8], words[(old*5+1)%8], old),
			asof.MustDate("2023-01-01").Days()+int64(old)*3, day)
		prev.Chunk.RetrievedAt = asof.MustDate("2023-01-01").Start().AddDate(0, 0, 3*old)
		recs = append(recs, prev)
	}
	return recs
}

// logOpener returns a function that opens another connection to srv's
// log, closed when t ends.
func logOpener(t *testing.T, srv *pgtest.Server) func() *PostgresLog {
	return func() *PostgresLog {
		l, err := OpenPostgresLog(context.Background(), srv.DSN)
		require.NoError(t, err)
		t.Cleanup(l.Close)
		return l
	}
}

// TestReplicasFollowTheWriter: a writer leads a PostgreSQL log and two
// replicas follow it, one at every generation, the other in jumps, over
// generations mixing tenants, the shared corpus, facts and a purge. At every
// generation the first replica's MANIFEST.json, batch files and checkpoint
// are the writer's, byte for byte, and its packs (latest and pinned) are the
// writer's; the second catches up and ends the same; every writer's pack
// verifies on both replicas; both record audit rows that match. Then the
// lease passes to another writer and the first is fenced, having written
// nothing; a replica asked for a generation it lacks says ErrBehind, and one
// whose history differs from the log stops with ErrCorrupt.
func TestReplicasFollowTheWriter(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, pgtest.Options{})
	openLog := logOpener(t, srv)
	wdir, r1dir, r2dir := t.TempDir(), t.TempDir(), t.TempDir()
	w := checked(t, mustOpen(t, wdir))
	wlog := openLog()
	require.NoError(t, w.Lead(ctx, wlog, "writer-a", time.Hour))
	r1, r2 := checked(t, mustOpen(t, r1dir)), checked(t, mustOpen(t, r2dir))
	log1, log2 := openLog(), openLog()

	n := 20
	if testsize.Long() {
		n = 60
	}
	purgeAt := n / 2
	requests := func(gen int64) []Request {
		var out []Request
		for i, tenant := range []string{"", "acme", "globex"} {
			for _, q := range []string{"retention records", "capital liquidity audit"} {
				r := Request{Question: q, AsOf: asof.MustDate("2023-06-01"), Tenant: tenant, K: 4}
				out = append(out, r)
				r.Generation = 1 + (gen+int64(i))%gen // pinned to an earlier generation
				out = append(out, r)
			}
		}
		return out
	}
	for g := 1; g <= n; g++ {
		if g == purgeAt {
			_, err := w.Purge(ctx, []string{fmt.Sprintf("c%03d", purgeAt-1)}, "erasure request")
			require.NoError(t, err)
		} else {
			_, err := w.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{})
			require.NoError(t, err, "generation %d", g)
		}
		gen := w.AppliedGeneration()
		require.Equal(t, int64(g), gen)
		require.NoError(t, r1.Follow(ctx, log1, FollowOptions{Until: gen, Replica: "r1"}))
		require.Equal(t, gen, r1.AppliedGeneration())
		when := fmt.Sprintf("generation %d", g)
		requireSameFiles(t, wdir, r1dir, when)
		for _, r := range requests(gen) {
			pw, err := w.Query(ctx, r)
			require.NoError(t, err)
			pr, err := r1.Query(ctx, r)
			require.NoError(t, err)
			require.Equal(t, pw.Hash(), pr.Hash(), "%s: %+v", when, r)
		}
		// The second replica follows in jumps (across the purge too).
		if g%6 == 0 || g == n {
			require.NoError(t, r2.Follow(ctx, log2, FollowOptions{Until: gen, Replica: "r2"}), "r2 catches up to %d", gen)
		}
	}
	requireSameFiles(t, wdir, r2dir, "the second replica at the end")
	for _, r := range requests(int64(n)) {
		p, err := w.Query(ctx, r)
		require.NoError(t, err)
		for name, rep := range map[string]*Engine{"r1": r1, "r2": r2} {
			v, err := rep.Verify(ctx, p.Bytes())
			require.NoError(t, err)
			require.True(t, v.OK(), "%s verifies the writer's pack %+v: %v", name, r, v.Problems)
		}
	}
	for _, rep := range []*Engine{r1, r2} {
		problems, err := rep.CheckLog(ctx, wlog)
		require.NoError(t, err)
		require.Empty(t, problems, "a replica's history is the log's")
	}
	// Each entry names the tenants it touches: generation 1 adds acme's
	// chunk; 14 adds globex's and ends acme's chunk of 7 (a fact); the
	// purge takes the text of the chunk of generation purgeAt-1, whose
	// tenant turns with its number.
	tenants := map[int64][]string{}
	require.NoError(t, wlog.Read(ctx, 1, func(e evlog.Entry) error { tenants[e.Generation] = e.Tenants; return nil }))
	require.Equal(t, []string{"acme"}, tenants[1])
	require.Equal(t, []string{"acme", "globex"}, tenants[14])
	require.Equal(t, []string{[]string{"", "acme", "globex"}[(purgeAt-1)%3]}, tenants[int64(purgeAt)])
	rows, err := wlog.AppliedAt(ctx, int64(n))
	require.NoError(t, err)
	require.Len(t, rows, 2)
	manifest, err := os.ReadFile(filepath.Join(wdir, "MANIFEST.json"))
	require.NoError(t, err)
	for _, row := range rows {
		require.Equal(t, evidence.Sum(manifest), row.ManifestSum, "%s's audit row", row.Replica)
	}

	// The lease passes: writer-a gives it up (as one whose lease ran out)
	// and the first replica leads in its place; writer-a is then fenced,
	// having written nothing.
	require.ErrorIs(t, r1.Lead(ctx, log1, "writer-b", time.Hour), ErrLeaseHeld)
	require.NoError(t, wlog.Release(ctx, w.writer.Epoch))
	require.NoError(t, r1.Lead(ctx, log1, "writer-b", time.Hour))
	_, err = w.Ingest(ctx, connectors.Records(replicaRecords(n+1)), IngestOptions{})
	require.ErrorIs(t, err, ErrFenced)
	require.Equal(t, int64(n), w.AppliedGeneration(), "the fenced writer applied nothing")
	_, err = os.Stat(filepath.Join(wdir, "chunks", fmt.Sprintf("%08d.jsonl", n+1)))
	require.ErrorIs(t, err, os.ErrNotExist, "nor wrote its batch")
	_, err = r1.Ingest(ctx, connectors.Records(replicaRecords(n+1)), IngestOptions{})
	require.NoError(t, err)

	// A replica behind: a request that must see generation n+1 waits for
	// it, or says ErrBehind when its context ends first.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r2.Query(done, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: int64(n + 1)})
	require.ErrorIs(t, err, ErrBehind)
	follow := make(chan error, 1)
	go func() { follow <- r2.Follow(ctx, log2, FollowOptions{Until: int64(n + 1), Replica: "r2"}) }()
	p, err := r2.Query(ctx, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: int64(n + 1)})
	require.NoError(t, err)
	require.NoError(t, <-follow)
	require.Equal(t, int64(n+1), r2.AppliedGeneration())
	require.NotNil(t, p)

	// A replica whose history is not the log's stops, and repairs nothing.
	// (Its first generation holds another chunk than the log's: the same
	// chunk committed within the same second as the writer's would be the
	// same entry, byte for byte, on a fast run.)
	stray := checked(t, mustOpen(t, t.TempDir()))
	_, err = stray.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
	require.NoError(t, err)
	err = stray.Follow(ctx, openLog(), FollowOptions{Until: 2})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, evlog.ErrChain)
	require.Equal(t, int64(1), stray.AppliedGeneration())
	problems, err := stray.CheckLog(ctx, wlog)
	require.NoError(t, err)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "generation 1: the log's entry sums to ")

	// A new replica from the log alone, after the purge: it gets the
	// generations the purge rewrote as the log now holds them, and ends
	// with the new writer's files, byte for byte.
	ldir := t.TempDir()
	late := checked(t, mustOpen(t, ldir))
	require.NoError(t, late.Follow(ctx, openLog(), FollowOptions{Until: int64(n + 1)}))
	requireSameFiles(t, r1dir, ldir, "a replica from the log alone")
}

// TestFailoverKeepsTheIndex: a writer leads a log on a primary with a
// synchronous standby; the primary is killed (SIGKILL) mid-stream and the
// standby promoted. Every generation the writer acknowledged is on the
// standby; a replica follows it there to the writer's files, byte for byte;
// once the old lease runs out (set in the past, as time would) the replica
// leads, and the old writer, reaching the new primary with its old epoch, is
// fenced and writes nothing.
func TestFailoverKeepsTheIndex(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.Start(t, pgtest.Options{Durable: true})
	plog, err := OpenPostgresLog(ctx, primary.DSN) // the schema exists before the standby copies it
	require.NoError(t, err)
	standby := primary.StartStandby(t, "s1")
	wdir, rdir := t.TempDir(), t.TempDir()
	w := checked(t, mustOpen(t, wdir))
	require.NoError(t, w.Lead(ctx, plog, "writer-a", time.Hour))
	r := checked(t, mustOpen(t, rdir))
	const k = 8
	for g := 1; g <= k; g++ {
		_, err := w.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{})
		require.NoError(t, err, "generation %d acknowledged", g)
		if g == k/2 {
			require.NoError(t, r.Follow(ctx, plog, FollowOptions{Until: int64(g)}))
		}
	}
	primary.Kill(t)
	plog.Close()
	standby.Promote(t)

	slog, err := OpenPostgresLog(ctx, standby.DSN)
	require.NoError(t, err)
	t.Cleanup(slog.Close)
	head, err := slog.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(k), head.Generation, "every acknowledged generation is on the standby")
	require.NoError(t, r.Follow(ctx, slog, FollowOptions{Until: k}))
	requireSameFiles(t, wdir, rdir, "after the failover")

	require.ErrorIs(t, r.Lead(ctx, slog, "writer-b", time.Hour), ErrLeaseHeld, "the old lease came over with the standby")
	c := standby.Conn(t)
	_, err = c.Exec(ctx, "UPDATE evpack_writer SET expires_at = now() - interval '1 second'") // its hour has passed
	require.NoError(t, err)
	require.NoError(t, r.Lead(ctx, slog, "writer-b", time.Hour))
	w.writer.Log, w.writer.Fence = slog, slog // the old writer reaches the new primary, with its old epoch
	_, err = w.Ingest(ctx, connectors.Records(replicaRecords(k+1)), IngestOptions{})
	require.ErrorIs(t, err, ErrFenced)
	require.Equal(t, int64(k), w.AppliedGeneration())
	_, err = r.Ingest(ctx, connectors.Records(replicaRecords(k+1)), IngestOptions{})
	require.NoError(t, err)
	head, err = slog.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(k+1), head.Generation)
}

// writerChildEnv names the index directory of a child process that leads
// the log at EVPACK_WRITER_DSN with a lease of childLease, commits one
// generation after another, and prints "acked G" after each, until killed.
const writerChildEnv = "EVPACK_WRITER_CHILD"

// childLease is long enough for a commit under the race detector on a busy
// machine (the lease must be live at each renewal), short enough to wait.
const childLease = 3 * time.Second

func writerChild(dir string) error {
	ctx := context.Background()
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	log, err := OpenPostgresLog(ctx, os.Getenv("EVPACK_WRITER_DSN"))
	if err != nil {
		return err
	}
	if err := e.Lead(ctx, log, "child", childLease); err != nil {
		return err
	}
	for g := 1; ; g++ {
		if _, err := e.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{}); err != nil {
			return err
		}
		fmt.Printf("acked %d\n", g)
	}
}

// TestSecondWriterTakesOver: a writer process leads with a short lease; a second writer is refused while it lives; once it is killed
// (SIGKILL, mid-stream), the second takes over within two lease periods,
// holding every generation the first acknowledged, and the log never forks.
// The wait for the lease to run out is the one clock this test reads: a
// lease is time by definition.
func TestSecondWriterTakesOver(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, pgtest.Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerChildEnv+"="+t.TempDir(), "EVPACK_WRITER_DSN="+srv.DSN)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	acked := 0
	for acked < 3 && lines.Scan() {
		_, err := fmt.Sscanf(lines.Text(), "acked %d", &acked)
		require.NoError(t, err, lines.Text())
	}
	if acked != 3 {
		cmd.Wait() // its stderr is complete once it has exited
		t.Fatalf("the child acknowledged %d generations, not 3: %s", acked, stderr.String())
	}

	b := checked(t, mustOpen(t, t.TempDir()))
	log, err := OpenPostgresLog(ctx, srv.DSN)
	require.NoError(t, err)
	t.Cleanup(log.Close)
	require.ErrorIs(t, b.Lead(ctx, log, "second", time.Minute), ErrLeaseHeld, "while the first lives")

	require.NoError(t, cmd.Process.Kill()) // mid-stream: it may be inside a commit
	go io.Copy(io.Discard, stdout)
	killed := time.Now()
	for {
		_, err = log.Acquire(ctx, "second", time.Minute)
		if !errors.Is(err, ErrLeaseHeld) {
			break
		}
		require.Less(t, time.Since(killed), 2*childLease, "taken over within two lease periods")
		<-time.After(50 * time.Millisecond) // the lease runs on the server's clock
	}
	require.NoError(t, err)
	took := time.Since(killed)
	require.Less(t, took, 2*childLease, "taken over within two lease periods")
	t.Logf("lease taken over %v after the kill", took)
	require.NoError(t, b.Lead(ctx, log, "second", time.Minute), "its own lease: catch up and lead")
	head, err := log.Head(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, head.Generation, int64(acked), "every acknowledged generation is in the log")
	require.Equal(t, head.Generation, b.AppliedGeneration(), "the new writer caught up before leading")
	// The new writer's clock is a year behind the log: its commit time is
	// clamped to the head's, and its entry says so.
	b.now = func() time.Time { return time.Now().AddDate(-1, 0, 0) }
	_, err = b.Ingest(ctx, connectors.Records(replicaRecords(int(head.Generation)+1)), IngestOptions{})
	require.NoError(t, err)
	prev, n := "", int64(0)
	var last evlog.Entry
	require.NoError(t, log.Read(ctx, 1, func(e evlog.Entry) error {
		n++
		require.Equal(t, n, e.Generation)
		require.Equal(t, prev, e.Prev, "generation %d links to the one before", e.Generation)
		require.False(t, e.CommittedAt.Before(last.CommittedAt), "commit times never go backwards")
		require.Equal(t, e.Generation == head.Generation+1, e.Clamped, "generation %d clamped", e.Generation)
		prev, last = e.Sum, e
		return nil
	}))
	require.Equal(t, head.Generation+1, n, "one chain, no fork")
	require.Equal(t, head.CommittedAt, last.CommittedAt, "raised to the head's commit time")
}
