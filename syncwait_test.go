package evpack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/pglog"
	"github.com/evpack/evpack/internal/pgtest"
)

// stallAfterRenew is the PostgreSQL log whose next Renew, once it has
// committed, waits for the test (which then stops the synchronous standby):
// the standby dies between the lease's renewal and the append.
type stallAfterRenew struct {
	*pglog.Log
	armed            bool
	renewed, proceed chan struct{}
}

func (l *stallAfterRenew) Renew(ctx context.Context, epoch int64, lease time.Duration) error {
	err := l.Log.Renew(ctx, epoch, lease)
	if l.armed {
		l.armed = false
		l.renewed <- struct{}{}
		<-l.proceed
	}
	return err
}

// TestAppendCancelledInItsSyncWaitIsNotAcknowledged: the append's COMMIT
// waits for the synchronous standby, which is down; the backend is
// terminated (an operator, a pooler, a restart of the connection), and
// PostgreSQL commits the row locally, unreplicated ("The transaction has
// already committed locally, but might not have been replicated to the
// standby"). The entry is visible on the primary, and lost in a failover
// to the standby: the writer must not acknowledge the Ingest.
func TestAppendCancelledInItsSyncWaitIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.Start(t, pgtest.Options{Durable: true})
	plog, err := OpenPostgresLog(ctx, primary.DSN)
	require.NoError(t, err)
	standby := primary.StartStandby(t, "s1")
	log := &stallAfterRenew{Log: plog, renewed: make(chan struct{}), proceed: make(chan struct{})}
	w := mustOpen(t, t.TempDir())
	require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
	_, err = w.Ingest(ctx, connectors.Records(replicaRecords(1)), IngestOptions{})
	require.NoError(t, err)

	log.armed = true
	done := make(chan error, 1)
	go func() {
		_, err := w.Ingest(ctx, connectors.Records(replicaRecords(2)), IngestOptions{})
		done <- err
	}()
	<-log.renewed
	standby.Kill(t)
	log.proceed <- struct{}{}

	c := primary.Conn(t)
	var pid int
	// The append's backend, once it waits for the standby. No sleep: each
	// try is a round trip to the primary.
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := c.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1").Scan(&pid)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no append waiting for the standby: %v", err)
	}
	_, err = c.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	ingestErr := <-done

	primary.Kill(t)
	plog.Close()
	standby.Restart(t)
	standby.Promote(t)
	slog, err := OpenPostgresLog(ctx, standby.DSN)
	require.NoError(t, err)
	t.Cleanup(slog.Close)
	head, err := slog.Head(ctx)
	require.NoError(t, err)
	require.Error(t, ingestErr, "an append cancelled in its wait for the standby is not acknowledged")
	require.Equal(t, int64(1), head.Generation, "the promoted standby holds generation 1, the last acknowledged")
}
