//go:build linux

package evpack

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestManifestNotDurableStopsServing: the fsync that makes the manifest's
// rename durable fails (EMFILE here: the hook just before the rename uses
// up the process's descriptors, which the rename does not need). The
// manifest on disk names the generation, and a power cut may or may not
// take it back: the engine neither serves it nor undoes it (undoing would
// remove files that manifest names). It stops serving with ErrBroken, and
// the next Open keeps the generation the disk holds, whole: packs as an
// index that committed the batch normally gives.
func TestManifestNotDurableStopsServing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	gen := e.st.Gen

	use, restore := storagetest.ExhaustDescriptors(t)
	e.store.Hooks.BeforeManifest = use
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	restore()
	e.store.Hooks.BeforeManifest = nil
	require.ErrorIs(t, err, storage.ErrNotDurable)
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorIs(t, err, syscall.EMFILE)
	_, qerr := e.Query(ctx, Request{Question: "stray", AsOf: asof.MustDate("2030-01-01")})
	require.ErrorIs(t, qerr, ErrBroken, "a generation that may not survive a power cut is not served")
	require.FileExists(t, filepath.Join(dir, storage.PendingName), "the record stays for the next Open")
	require.FileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen+1)), "the batch the manifest names stays")
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, gen+1, e.st.Gen, "the generation the disk holds is kept")
	require.Contains(t, fullState(t, e).Chunks, "stray")
	require.NoFileExists(t, filepath.Join(dir, storage.PendingName), "Open tidied up after it")
	mem := memEngine(t, Options{})
	ingestCorpus(t, mem)
	_, err = mem.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, packsFor(t, mem), packsFor(t, e))
}
