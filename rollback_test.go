package evpack

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestCommitFailingBeforeManifestIsUndone fails a commit in the window
// between the lexical batch and the manifest, as a full disk at the
// manifest's write would: Ingest returns the error, the engine keeps
// serving the index as it was, and nothing of the batch stays on disk or
// in bleve.
func TestCommitFailingBeforeManifestIsUndone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	gen := e.st.Gen

	boom := errors.New("no space for the manifest")
	reached := false
	e.store.Hooks.BeforeManifest = func() error {
		reached = true
		above, err := e.lex.CountAbove(ctx, gen)
		require.NoError(t, err)
		require.EqualValues(t, 1, above, "the batch is in the lexical index when the hook runs")
		require.FileExists(t, filepath.Join(dir, storage.PendingName))
		require.FileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen+1)))
		return boom
	}
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	e.store.Hooks.BeforeManifest = nil
	require.True(t, reached)
	require.ErrorIs(t, err, boom)

	require.Equal(t, gen, e.st.Gen)
	require.NoError(t, e.Check())
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Strays, "nothing of the failed commit is left in the directory")
	above, err := e.lex.CountAbove(ctx, gen)
	require.NoError(t, err)
	require.Zero(t, above, "the batch was removed from the lexical index")
	require.NoFileExists(t, filepath.Join(dir, storage.PendingName))
	require.NoFileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen+1)))
	require.Equal(t, want, packsFor(t, e), "packs as before the failed commit")

	// The same batch again commits.
	added, err := e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, added.Added)
	require.Equal(t, gen+1, added.Generation)
	require.NoError(t, e.Check())
}

// TestCrashAfterManifestKeepsTheGeneration stops a commit dead after the
// manifest is written and before its record (PENDING.json) is removed. The
// generation is committed: reopening keeps it, whole, and only tidies up.
func TestCrashAfterManifestKeepsTheGeneration(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	gen := e.st.Gen

	e.store.Hooks.AfterManifest = func() { runtime.Goexit() }
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Ingest(context.Background(), connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
		t.Error("ingest returned: the hook did not stop it")
	}()
	<-done
	require.FileExists(t, filepath.Join(dir, storage.PendingName), "the crash left the record")
	require.EqualValues(t, gen+1, storagetest.ReadManifest(t, dir).Generation, "the manifest was written")
	require.NoError(t, e.lex.Close()) // what the kernel does for a dead process
	require.NoError(t, e.store.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, gen+1, e.st.Gen, "nothing lost")
	require.Contains(t, fullState(t, e).Chunks, "stray")
	require.NoFileExists(t, filepath.Join(dir, storage.PendingName), "the record was removed")
	require.FileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen+1)))
	require.NoError(t, e.Check())

	// The packs are those of an index that committed the batch normally.
	mem := memEngine(t, Options{})
	ingestCorpus(t, mem)
	_, err = mem.Ingest(context.Background(), connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, packsFor(t, mem), packsFor(t, e))
}
