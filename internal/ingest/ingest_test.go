package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/stretchr/testify/require"
)

func record(id, text, where string) connectors.Record {
	return connectors.Record{Where: where, Chunk: evidence.Chunk{ID: id, DocID: "doc", Version: "1", Text: text,
		SourceURL: "https://example.test/" + id, Connector: "test", RetrievedAt: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC),
		Anchor: asof.Anchor{At: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), Field: "published"}}}
}

// TestPrepareAgainstAnEmptyState: the stage alone, on a state with nothing
// committed: what a batch adds, what it repeats, what it flags, and a
// conflicting duplicate refused naming its record.
func TestPrepareAgainstAnEmptyState(t *testing.T) {
	ctx := context.Background()
	undated := record("u", "no date", "line 4")
	undated.Chunk.Anchor = asof.Anchor{}
	nourl := record("n", "no source", "line 5")
	nourl.Chunk.SourceURL = ""
	recs := []connectors.Record{record("a", "alpha", "line 1"), record("b", "beta", "line 2"), record("a", "alpha", "line 3"), undated, nourl}
	var calls [][2]int
	b, err := Prepare(ctx, state.NewState(), recs, true, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	require.NoError(t, err)
	var ids []string
	for _, c := range b.Add {
		ids = append(ids, c.ID)
	}
	require.Equal(t, []string{"a", "b", "u", "n"}, ids, "in record order; the repeat of a is not added twice")
	require.Equal(t, []string{"line 1", "line 2", "line 4", "line 5"}, b.AddWhere)
	require.Equal(t, 1, b.Unchanged, "the same chunk again changes nothing")
	require.Equal(t, []Flag{{ChunkID: "u", Reason: "undated: never eligible"}, {ChunkID: "n", Reason: b.Flagged[1].Reason}}, b.Flagged)
	require.Contains(t, b.Flagged[1].Reason, "source")
	require.Empty(t, b.Facts)
	require.Equal(t, [][2]int{{0, 5}}, calls, "progress every 1,024 records, from the first")
	require.Equal(t, "alpha", recs[0].Chunk.Text, "the caller's records are not changed")
	require.Empty(t, recs[0].Chunk.ContentHash, "Prepare works on copies")

	conflict := append(recs[:2:2], record("a", "alpha, edited", "line 9"))
	_, err = Prepare(ctx, state.NewState(), conflict, true, func(int, int) {})
	require.ErrorIs(t, err, evidence.ErrDuplicateChunk)
	var ce *evidence.ChunkError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "line 9", ce.Where)
	require.Equal(t, "a", ce.ChunkID)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Prepare(cctx, state.NewState(), recs, true, func(int, int) {})
	require.ErrorIs(t, err, context.Canceled)
}
