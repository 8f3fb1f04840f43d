package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

// TestSharedCacheAcrossReopenAndPurge: a cache that outlives the engine
// (a service's store, shared by the next process on the index) never
// serves a purged chunk, pinned or latest, nor a pack of another index
// state: a purge in a later engine, then the same requests.
func TestSharedCacheAcrossReopenAndPurge(t *testing.T) {
	ctx := context.Background()
	cache, err := NewMemoryCache(100, 1<<24)
	require.NoError(t, err)
	dir := t.TempDir()
	e, err := Open(dir, Options{Cache: cache})
	require.NoError(t, err)
	ingestCorpus(t, e)
	rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	reqs := []Request{
		{Question: "who kept the zqxjk ledger Quillfeather", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", K: 3, Generation: rep.Generation},
		{Question: "who kept the zqxjk ledger Quillfeather", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", K: 3},
	}
	for _, r := range reqs {
		p, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.Contains(t, citedIDs(p), "memo-roe")
	}
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{Cache: cache})
	require.NoError(t, err)
	_, err = e.Purge(ctx, []string{"memo-roe"}, "erasure")
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{Cache: cache})
	require.NoError(t, err)
	defer e.Close()
	for _, r := range reqs {
		p, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.NotContains(t, citedIDs(p), "memo-roe")
	}
}
