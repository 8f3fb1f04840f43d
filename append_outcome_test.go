package evpack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/evlog"
)

// lyingLog is a log whose Append may fail after it appended (an
// acknowledgement lost with the connection) or before.
type lyingLog struct {
	*evlog.Memory
	loseAck bool // Append appends, then reports failure
	noHead  bool // Head fails
	refuse  bool // Append fails without appending
}

var (
	errLostAck = errors.New("test: connection lost after the append")
)

func (l *lyingLog) Append(ctx context.Context, e evlog.Entry) error {
	if l.refuse {
		return errLostAck
	}
	if err := l.Memory.Append(ctx, e); err != nil {
		return err
	}
	if l.loseAck {
		return errLostAck
	}
	return nil
}

// TestAppendWhoseOutcomeIsUnknown: a writer's Append fails, and the log
// may hold the entry all the same (an acknowledgement lost with the
// connection). The ingest fails: its outcome is unknown, and the writer
// cannot prove an entry it sees in the log durable (a commit cancelled in
// its wait for a synchronous standby is visible on the primary and lost in
// a failover), so it acknowledges nothing. The next commit finds the log
// ahead and stops the writer (ErrBroken); reopened, it follows the log it
// leads and goes on. When the log refused the entry, the same batch again
// commits. Each case ends with a replica that follows the log holding the
// writer's files byte for byte.
func TestAppendWhoseOutcomeIsUnknown(t *testing.T) {
	cases := []struct {
		name, reason    string
		loseAck, refuse bool
		wantAgain       error // the same batch again: nil, or the error that stops the writer
	}{
		{name: "acknowledgement lost", reason: "the log holds generation 2: the writer is behind it and stops",
			loseAck: true, wantAgain: ErrBroken},
		{name: "refused", reason: "the log does not hold generation 2: the same batch commits",
			refuse: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			log := &lyingLog{Memory: evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })}
			wdir := t.TempDir()
			w := mustOpen(t, wdir)
			require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
			_, err := w.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
			require.NoError(t, err)

			log.loseAck, log.refuse = tc.loseAck, tc.refuse
			_, err = w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
			log.loseAck, log.refuse = false, false
			require.ErrorIs(t, err, errLostAck, "an append that failed is reported: %s", tc.reason)
			require.NotErrorIs(t, err, ErrBroken)
			require.Equal(t, int64(1), w.AppliedGeneration(), "nothing applied that the log did not acknowledge")
			_, err = w.Query(ctx, Request{Question: "retention records", AsOf: asof.MustDate("2030-01-01")})
			require.NoError(t, err, "the writer serves its last generation")

			_, err = w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
			if tc.wantAgain != nil {
				require.ErrorIs(t, err, tc.wantAgain, tc.reason)
				require.NoError(t, w.Close())
				w = mustOpen(t, wdir)
				require.NoError(t, w.Lead(ctx, log, "writer", time.Hour), "reopened, it follows the log it leads")
			} else {
				require.NoError(t, err, tc.reason)
			}
			require.Equal(t, int64(2), w.AppliedGeneration(), "generation 2 is the log's")
			_, err = w.Ingest(ctx, connectors.Records(replicaRecords(3)), IngestOptions{})
			require.NoError(t, err, "the writer goes on after it")
			head, err := log.Head(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(3), head.Generation)

			rdir := t.TempDir()
			r := mustOpen(t, rdir)
			require.NoError(t, r.Follow(ctx, log, FollowOptions{Until: 3}))
			requireSameFiles(t, wdir, rdir, tc.name)
		})
	}
}

// slowRenewLog is a log whose lease renewal outlives the caller's context
// (a slow round trip to PostgreSQL): Renew fails with the context's error,
// before anything is appended.
type slowRenewLog struct {
	*evlog.Memory
	cancel context.CancelFunc
}

func (l *slowRenewLog) Renew(ctx context.Context, epoch int64, lease time.Duration) error {
	if l.cancel != nil {
		l.cancel() // the deadline passes during the round trip
	}
	return l.Memory.Renew(ctx, epoch, lease)
}

// TestAppendCanceledBeforeTheLogChanges: an Ingest whose context
// ends while the lease is renewed appended nothing (Renew failed, the log
// never saw the entry); the outcome is known. The writer must report the
// context's error and go on serving.
func TestAppendCanceledBeforeTheLogChanges(t *testing.T) {
	ctx := context.Background()
	log := &slowRenewLog{Memory: evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })}
	w := mustOpen(t, t.TempDir())
	require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
	_, err := w.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	log.cancel = cancel
	_, err = w.Ingest(cctx, connectors.Records(replicaRecords(2)), IngestOptions{})
	log.cancel = nil
	require.ErrorIs(t, err, context.Canceled)
	head, herr := log.Head(ctx)
	require.NoError(t, herr)
	require.Equal(t, int64(1), head.Generation, "nothing was appended")
	require.False(t, errors.Is(err, ErrBroken), "a known outcome (nothing appended) stopped the writer: %v", err)
	_, qerr := w.Query(ctx, Request{Question: "anything", AsOf: asof.MustDate("2030-01-01")})
	require.NotErrorIs(t, qerr, ErrBroken, "queries refused after a canceled Ingest")
}

// TestFencedAfterTheSuccessorAppended: writer A's lease passes to B,
// which appends the next generation; A's next Ingest is refused by the
// fence (ErrStaleEpoch: nothing appended, a definite outcome), though the
// log holds B's entry at A's generation. A gets ErrFenced and keeps
// answering queries at its generation, as a replica behind the log does.
func TestFencedAfterTheSuccessorAppended(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	log := evlog.NewMemory(func() time.Time { return now })
	a := mustOpen(t, t.TempDir())
	require.NoError(t, a.Lead(ctx, log, "a", time.Hour))
	_, err := a.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
	require.NoError(t, err)

	now = now.Add(2 * time.Hour) // a's lease ran out
	b := mustOpen(t, t.TempDir())
	require.NoError(t, b.Lead(ctx, log, "b", time.Hour))
	_, err = b.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
	require.NoError(t, err)

	_, err = a.Ingest(ctx, connectors.Records(replicaRecords(3)), IngestOptions{})
	require.ErrorIs(t, err, ErrFenced)
	require.False(t, errors.Is(err, ErrBroken), "a fenced writer (nothing appended) stopped serving: %v", err)
	_, qerr := a.Query(ctx, Request{Question: "anything", AsOf: asof.MustDate("2030-01-01")})
	require.NotErrorIs(t, qerr, ErrBroken)
}
