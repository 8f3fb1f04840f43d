package evpack

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

// TestHistoryBesideIngest: on an engine opened from its checkpoint (rows
// mapped, nothing per chunk in memory), History and Diff unfold the state,
// swap it in and close the rows of the one they unfolded, while commits of
// one chunk each run. Every commit must succeed: before Engine.unfolded
// took ingestMu, a commit read the rows the swap had closed and failed
// with ErrCorrupt ("closed: the state that read it is gone") on an index
// that was fine (found by a helper's review, stop 52).
func TestHistoryBesideIngest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs := vocabularyRecords(t, "acme", "a", 3000+40, 7)
	e := mustOpen(t, dir)
	_, err := e.Ingest(ctx, connectors.Records(recs[:3000]), IngestOptions{})
	require.NoError(t, err)
	pack := packsOf(t, e, []Request{{Question: recs[5].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5}})[0]
	require.NoError(t, e.Close())
	for round := range 4 {
		unfold, what := func() error { _, err := e.History(); return err }, "History"
		if round%2 == 1 {
			unfold, what = func() error { _, err := e.Diff(ctx, pack); return err }, "Diff"
		}
		e = checked(t, mustOpen(t, dir))
		require.NotNil(t, e.st.Rows, "opened from the checkpoint")
		var stop atomic.Bool
		var wg sync.WaitGroup
		var herr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := unfold(); err != nil {
					herr = err
					return
				}
			}
		}()
		var ierr error
		for i := range 10 {
			n := 3000 + round*10 + i
			if _, ierr = e.Ingest(ctx, connectors.Records(recs[n:n+1]), IngestOptions{}); ierr != nil {
				break
			}
		}
		stop.Store(true)
		wg.Wait()
		require.NoError(t, herr, "round %d: %s", round, what)
		require.NoError(t, ierr, "round %d: a commit beside %s", round, what)
		require.False(t, errors.Is(ierr, ErrCorrupt))
		require.NoError(t, e.Close())
	}
}
