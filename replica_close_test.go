package evpack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/evlog"
)

// memoryWriter returns a log in memory that a writer leads through k
// generations (replicaRecords), and the writer.
func memoryWriter(t *testing.T, k int) (*evlog.Memory, *Engine) {
	t.Helper()
	ctx := context.Background()
	log := evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })
	w := checked(t, mustOpen(t, t.TempDir()))
	require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
	for g := 1; g <= k; g++ {
		_, err := w.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{})
		require.NoError(t, err)
	}
	return log, w
}

// TestFollowEndsWhenTheReplicaCloses: a replica following a quiet log
// (Until 0) that is closed ends its Follow with ErrClosed. It waited in
// the log's Wait until its context ended, for ever without a deadline: a
// goroutine left running after Close.
func TestFollowEndsWhenTheReplicaCloses(t *testing.T) {
	log, _ := memoryWriter(t, 2)
	r := mustOpen(t, t.TempDir())
	// The deadline only keeps a failing test from hanging: Close must end
	// Follow long before it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- r.Follow(ctx, log, FollowOptions{}) }()
	_, err := r.Query(ctx, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 2})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	err = <-got
	require.ErrorIs(t, err, ErrClosed)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}
