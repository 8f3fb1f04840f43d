package evpack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/evlog"
)

// TestTwoFollowsOfOneReplica: two Follows of one replica over a healthy
// log both end with nil and the replica equals the writer. One of them
// read a generation the other applied meanwhile, and stopped with
// ErrCorrupt, as if the log parted from the index's history.
func TestTwoFollowsOfOneReplica(t *testing.T) {
	const gens = 12
	log, w := memoryWriter(t, gens)
	for range 3 {
		r := checked(t, mustOpen(t, t.TempDir()))
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- r.Follow(context.Background(), log, FollowOptions{Until: gens}) }()
		}
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		require.EqualValues(t, gens, r.AppliedGeneration())
		_, wsum := w.appliedHead()
		_, rsum := r.appliedHead()
		require.Equal(t, wsum, rsum)
	}
}

// TestFollowRefusesANegativeUntil: FollowOptions.Until below 0 is refused
// (ErrBadOptions); it followed for ever, as 0 does.
func TestFollowRefusesANegativeUntil(t *testing.T) {
	log, _ := memoryWriter(t, 1)
	r := checked(t, mustOpen(t, t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // keeps a failing test from hanging
	defer cancel()
	err := r.Follow(ctx, log, FollowOptions{Until: -1})
	require.ErrorIs(t, err, ErrBadOptions)
	require.EqualValues(t, 0, r.AppliedGeneration())
}

// TestFollowRefusesAMemoryIndex: an index in memory cannot follow a log
// (ErrBadOptions, as Lead says), at once: on a log with no entry yet it
// waited for the first one, for ever on a quiet log, to refuse it then.
func TestFollowRefusesAMemoryIndex(t *testing.T) {
	r := memEngine(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // keeps a failing test from hanging
	defer cancel()
	err := r.Follow(ctx, evlog.NewMemory(nil), FollowOptions{})
	require.ErrorIs(t, err, ErrBadOptions)
}

// TestFollowRefusesABadReplicaName: a replica name the log cannot record
// (NUL, bytes that are not UTF-8) is refused before anything is applied
// (ErrBadOptions). Follow applied generation 1 and then failed on the
// server's refusal of the audit row, with an error evpack does not export,
// once per generation.
func TestFollowRefusesABadReplicaName(t *testing.T) {
	_, _, openLog := logWithWriter(t, 2)
	log := openLog()
	for _, name := range []string{"r\x00", "\xff", "r\n1"} {
		r := checked(t, mustOpen(t, t.TempDir()))
		err := r.Follow(context.Background(), log, FollowOptions{Until: 2, Replica: name})
		require.ErrorIs(t, err, ErrBadOptions, "%q", name)
		require.EqualValues(t, 0, r.AppliedGeneration(), "%q", name)
	}
	r := checked(t, mustOpen(t, t.TempDir()))
	require.NoError(t, r.Follow(context.Background(), log, FollowOptions{Until: 2, Replica: "r1 (Zürich)"}))
}

// TestLeadRefusesBadHolders: Lead with no holder, a holder the log cannot
// record or no lease is refused by name (ErrBadOptions), before the log is
// asked: it failed with evlog.ErrBadEntry, which evpack does not export, or
// PostgreSQL's refusal of a NUL.
func TestLeadRefusesBadHolders(t *testing.T) {
	log := evlog.NewMemory(nil)
	w := checked(t, mustOpen(t, t.TempDir()))
	for _, c := range []struct {
		holder string
		lease  time.Duration
	}{{"", time.Hour}, {"w\x00", time.Hour}, {"\xff", time.Hour}, {"w", 0}, {"w", -time.Second}} {
		require.ErrorIs(t, w.Lead(context.Background(), log, c.holder, c.lease), ErrBadOptions, "%q %s", c.holder, c.lease)
	}
	require.NoError(t, w.Lead(context.Background(), log, "w (Zürich)", time.Hour))
}
