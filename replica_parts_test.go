package evpack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/pgtest"
)

// logWithWriter starts a PostgreSQL server whose log a writer leads through
// k generations (replicaRecords), and returns the server, the writer and an
// opener of more connections to the log.
func logWithWriter(t *testing.T, k int) (*pgtest.Server, *Engine, func() *PostgresLog) {
	ctx := context.Background()
	srv := pgtest.Start(t, pgtest.Options{})
	openLog := logOpener(t, srv)
	w := checked(t, mustOpen(t, t.TempDir()))
	require.NoError(t, w.Lead(ctx, openLog(), "writer-a", time.Hour))
	for g := 1; g <= k; g++ {
		_, err := w.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{})
		require.NoError(t, err)
	}
	return srv, w, openLog
}

// forkAt1 returns an index that followed log to generation 1 and then
// committed other chunks on its own as generation 2, and that batch's bytes:
// a history that parts from the log's after generation 1.
func forkAt1(t *testing.T, log *PostgresLog) (*Engine, []byte) {
	ctx := context.Background()
	dir := t.TempDir()
	f := checked(t, mustOpen(t, dir))
	require.NoError(t, f.Follow(ctx, log, FollowOptions{Until: 1}))
	_, err := f.Ingest(ctx, connectors.Records(replicaRecords(102)), IngestOptions{})
	require.NoError(t, err)
	return f, committedEntry(t, dir, 2)
}

// TestFollowRefusesALogThatParts: a replica whose log parts from its history
// stops with ErrCorrupt, at the generation where they part, and serves
// nothing of the other history. Each case found evpack applying or waiting
// instead (an adversarial review, stop 79).
func TestFollowRefusesALogThatParts(t *testing.T) {
	ctx := context.Background()
	t.Run("a generation deleted from the log", func(t *testing.T) {
		// Read's evlog.ErrGap went out bare: no error evpack exports.
		srv, _, openLog := logWithWriter(t, 3)
		_, err := srv.Conn(t).Exec(ctx, `DELETE FROM evpack_log WHERE generation = 2`)
		require.NoError(t, err)
		r := checked(t, mustOpen(t, t.TempDir()))
		require.ErrorIs(t, r.Follow(ctx, openLog(), FollowOptions{Until: 3}), ErrCorrupt)
		require.EqualValues(t, 1, r.AppliedGeneration())
	})
	t.Run("the log lost the replica's last generation", func(t *testing.T) {
		// Follow(Until: 3) at 3 returned nil without asking the log, and a
		// follow without Until read from 4 and said so untyped.
		srv, _, openLog := logWithWriter(t, 3)
		log := openLog()
		r := checked(t, mustOpen(t, t.TempDir()))
		require.NoError(t, r.Follow(ctx, log, FollowOptions{Until: 3}))
		_, err := srv.Conn(t).Exec(ctx, `DELETE FROM evpack_log WHERE generation = 3`)
		require.NoError(t, err)
		require.ErrorIs(t, r.Follow(ctx, log, FollowOptions{Until: 3}), ErrCorrupt)
		require.ErrorIs(t, r.Follow(ctx, log, FollowOptions{}), ErrCorrupt)
	})
	t.Run("a row's body replaced and marked redacted", func(t *testing.T) {
		// The sum was checked only of rows not marked redacted, and a body
		// without the markers a purge writes was never checked against it:
		// the replica served the forged generation 2.
		srv, _, openLog := logWithWriter(t, 3)
		log := openLog()
		_, forged := forkAt1(t, log)
		_, err := srv.Conn(t).Exec(ctx, `UPDATE evpack_log SET body = $1, redacted_by = 3 WHERE generation = 2`, forged)
		require.NoError(t, err)
		r := checked(t, mustOpen(t, t.TempDir()))
		require.ErrorIs(t, r.Follow(ctx, log, FollowOptions{Until: 2}), ErrCorrupt)
		require.EqualValues(t, 1, r.AppliedGeneration())
	})
	t.Run("the replica's head is not the log's entry", func(t *testing.T) {
		// CheckLog saw the fork; Follow(Until: 2) returned nil, and without
		// Until it waited, serving the fork, until the writer's next append.
		_, _, openLog := logWithWriter(t, 2)
		log := openLog()
		f, _ := forkAt1(t, log)
		problems, err := f.CheckLog(ctx, log)
		require.NoError(t, err)
		require.NotEmpty(t, problems)
		require.ErrorIs(t, f.Follow(ctx, log, FollowOptions{Until: 2}), ErrCorrupt)
	})
}

// TestLeadRefusesAHistoryThatParts: Lead on an index whose history is not
// the log's is ErrCorrupt, and gives its lease back so that a writer whose
// history is the log's can lead at once. Lead succeeded, and every later
// ingest failed with an error no evpack sentinel named; a Lead that failed
// catching up kept the lease for its whole term.
func TestLeadRefusesAHistoryThatParts(t *testing.T) {
	ctx := context.Background()
	t.Run("forked at the log's head", func(t *testing.T) {
		_, w, openLog := logWithWriter(t, 2)
		log := openLog()
		require.NoError(t, w.Resign(ctx))
		f, _ := forkAt1(t, log)
		require.ErrorIs(t, f.Lead(ctx, log, "writer-b", time.Hour), ErrCorrupt)
		require.NoError(t, w.Lead(ctx, log, "writer-c", time.Hour), "the failed Lead gave its lease back")
	})
	t.Run("ahead of the log", func(t *testing.T) {
		srv, w, openLog := logWithWriter(t, 3)
		require.NoError(t, w.Resign(ctx))
		_, err := srv.Conn(t).Exec(ctx, `DELETE FROM evpack_log WHERE generation = 3`)
		require.NoError(t, err)
		require.ErrorIs(t, w.Lead(ctx, openLog(), "writer-a", time.Hour), ErrCorrupt)
	})
}

// TestLeadFencesTheSameHolder: a second Lead under a holder's name (a
// restarted process beside the one it replaces) fences the first writer.
// Both got one epoch: the first appended, and the second broke.
func TestLeadFencesTheSameHolder(t *testing.T) {
	ctx := context.Background()
	_, a, openLog := logWithWriter(t, 2)
	b := checked(t, mustOpen(t, t.TempDir()))
	require.NoError(t, b.Lead(ctx, openLog(), "writer-a", time.Hour))
	_, err := a.Ingest(ctx, connectors.Records(replicaRecords(3)), IngestOptions{})
	require.ErrorIs(t, err, ErrFenced)
	_, err = b.Ingest(ctx, connectors.Records(replicaRecords(3)), IngestOptions{})
	require.NoError(t, err)
}

// parkCtx says, by closing parked, that its Done was first asked: a
// request waiting for a generation asks it as it parks.
type parkCtx struct {
	context.Context
	once   sync.Once
	parked chan struct{}
}

func (c *parkCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.parked) })
	return c.Context.Done()
}

// TestCloseWakesMinGeneration: Close ends a request waiting for a
// generation with ErrClosed; it waited for its deadline (ErrBehind), or for
// ever without one.
func TestCloseWakesMinGeneration(t *testing.T) {
	e := mustOpen(t, t.TempDir())
	_, err := e.Ingest(context.Background(), connectors.Records(replicaRecords(1)), IngestOptions{})
	require.NoError(t, err)
	ctx := &parkCtx{Context: context.Background(), parked: make(chan struct{})}
	got := make(chan error, 1)
	go func() {
		_, err := e.Query(ctx, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 5})
		got <- err
	}()
	<-ctx.parked
	require.NoError(t, e.Close())
	require.ErrorIs(t, <-got, ErrClosed)
}

// TestBrokenWakesMinGeneration: a writer that stops (ErrBroken) applies
// nothing more until it is reopened, so a request waiting for a later
// generation ends with that error; it waited for its deadline (ErrBehind),
// or for ever without one.
func TestBrokenWakesMinGeneration(t *testing.T) {
	ctx := context.Background()
	log := &lyingLog{Memory: evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })}
	w := mustOpen(t, t.TempDir())
	require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
	_, err := w.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
	require.NoError(t, err)
	log.loseAck = true // the log takes generation 2, the writer does not
	_, err = w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
	require.ErrorIs(t, err, errLostAck)
	log.loseAck = false

	parked := &parkCtx{Context: ctx, parked: make(chan struct{})}
	got := make(chan error, 1)
	go func() {
		_, err := w.Query(parked, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 3})
		got <- err
	}()
	<-parked.parked
	_, err = w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
	require.ErrorIs(t, err, ErrBroken, "the log holds generation 2 already")
	err = <-got
	require.ErrorIs(t, err, ErrBroken)
	require.NotErrorIs(t, err, ErrBehind)
}
