package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
)

// TestVerifyOldPackBesideAStateSwap: Engine.Verify of an
// evpack-pack/1 pack (no generation: it is not replayed, each citation is
// checked against the stored chunk) reads the state it took (e.verify:
// Parse, snapshot, audit.Verify). On an index opened from its checkpoint,
// a History, Diff or the first commit beside it unfolds the state and
// closes the rows it took: the citation reads then failed ("stored chunk
// cannot be read: … index corrupt … closed: the state that read it is
// gone") and a pack that holds was reported as not holding, with no error,
// so Verify did not start again (a replayed pack's replay query notices
// the move; this form runs no query). The interleaving is forced here step
// by step as e.verify runs it: the check must hold or say the index moved
// (errMoved, on which Verify starts again).
func TestVerifyOldPackBesideAStateSwap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	_, err = e.Purge(ctx, []string{"memo-roe"}, "erasure") // writes a checkpoint
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.NotNil(t, e.st.Rows, "opened from the checkpoint")

	raw := oldPack(t, "pack1-5fda4c6-retention.json")
	rep, err := e.Verify(ctx, raw)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()

	// e.verify, with a History landing between its snapshot and its reads.
	p, err := evidence.Parse(raw)
	require.NoError(t, err)
	st, err := e.snapshot()
	require.NoError(t, err)
	_, err = e.History() // unfolds the state: st's rows are closed
	require.NoError(t, err)
	rep, err = audit.Verify(ctx, engineRanker{e}, st, p, raw)
	if err == nil {
		require.True(t, rep.OK(), "a pack that holds, verified beside a state swap: %q", rep.Problems)
	} else {
		require.ErrorIs(t, err, errMoved)
	}
	rep, err = e.Verify(ctx, raw)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
}
