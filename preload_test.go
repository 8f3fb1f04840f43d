package evpack

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// preloadOptions are the options of preloadIndex's index, with which it is
// opened again: a corpus-free embedder's vectors, which are stored, and
// their graph.
func preloadOptions(t *testing.T) Options {
	return Options{Embedder: &countingFree{Embedder: testEmbedder(t, testVectors(t))}, DenseIndex: "hnsw"}
}

// preloadIndex makes, in a new directory, an index with every kind of file
// Preload reads (a checkpoint, dense vectors and their graph, lexical
// partitions of two tenants; the vectors are a corpus-free embedder's,
// which are stored) and returns it open.
func preloadIndex(t *testing.T) (string, *Engine) {
	t.Helper()
	dir := t.TempDir()
	e, err := Open(dir, preloadOptions(t))
	require.NoError(t, err)
	checked(t, e)
	ingestCorpus(t, e)
	for _, recs := range [][]connectors.Record{vocabularyRecords(t, "acme", "a", 6, 1), vocabularyRecords(t, "globex", "g", 6, 2)} {
		_, err = e.Ingest(context.Background(), connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
	}
	m := e.store.Manifest()
	require.NotEmpty(t, m.Checkpoint)
	require.NotNil(t, m.Dense)
	require.NotEmpty(t, m.Dense.Graph)
	return dir, e
}

// Preload reads every file of the index a query reads (the batch files,
// whose lines hold the texts a pack cites, among them) but the batches'
// analysis files, the manifest and the lock, each once and whole: the
// sizes on disk add up to what it returns. The index answers as before.
func TestPreloadReadsWhatQueriesRead(t *testing.T) {
	dir, e := preloadIndex(t)
	// Opened again, so that its files stay as they are summed: the writer
	// may still be merging a partition's segments in the background (with
	// partitions of a year each took several batches, and the sum below
	// missed what a merge wrote after it), where an index opened from its
	// catalog writes nothing until a write.
	require.NoError(t, e.Close())
	e, err := Open(dir, preloadOptions(t))
	require.NoError(t, err)
	checked(t, e)
	req := Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: "acme"}
	before, err := e.Query(context.Background(), req)
	require.NoError(t, err)

	var want int64
	var lexical, batches, others int
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case rel == storage.LockName, rel == storage.ManifestName, strings.HasSuffix(rel, ".analysis"):
			return nil
		case strings.HasPrefix(rel, storage.ChunksDir+string(filepath.Separator)):
			batches++
		case strings.HasPrefix(rel, storage.LexicalDir+string(filepath.Separator)):
			lexical++
		default:
			others++
		}
		fi, err := d.Info()
		want += fi.Size()
		return err
	}))
	require.Equal(t, 3, others, "the checkpoint, the vectors and the graph")
	require.Equal(t, len(e.store.Manifest().Batches), batches, "one batch file a generation")
	require.Greater(t, lexical, 6, "two tenants' partitions and the rest")
	// A partition half made, or left by a crash, is read by no query: nor
	// by Preload.
	stray := filepath.Join(dir, storage.LexicalDir, ".p-stray.tmp-1")
	require.NoError(t, os.MkdirAll(stray, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "000000000001.zap"), make([]byte, 1000), 0o644))

	n, err := e.Preload(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, n)
	after, err := e.Query(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, before.Bytes(), after.Bytes())
	require.NoError(t, os.RemoveAll(stray))

	// The lexical index moved to another directory (another disk), a link
	// in its place: Preload follows the link.
	if runtime.GOOS == "windows" {
		return // links want privileges there
	}
	require.NoError(t, e.Close())
	moved := filepath.Join(t.TempDir(), "lexical-elsewhere")
	require.NoError(t, os.Rename(filepath.Join(dir, storage.LexicalDir), moved))
	require.NoError(t, os.Symlink(moved, filepath.Join(dir, storage.LexicalDir)))
	e2, err := Open(dir, preloadOptions(t))
	require.NoError(t, err)
	checked(t, e2)
	n, err = e2.Preload(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, n, "through the link")
}

// On an index opened from its checkpoint and catalog, Preload opens every
// lexical partition, with Options.WarmTenants and without it, and the
// packs are the same bytes after it. It checks every block of the
// checkpoint: one edited in a body block Open does not read (the first
// row's) is ErrCorrupt from Preload, naming the file and the block, and a
// request after it fails as one that read the block would.
func TestPreloadChecksAndOpens(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	for _, warm := range []bool{false, true} {
		e, err := Open(dir, Options{WarmTenants: warm})
		require.NoError(t, err)
		checked(t, e)
		require.NotNil(t, e.st.Rows, "opened from the checkpoint")
		before, all := e.lex.Opened()
		require.Less(t, before, all, "Open opened every partition: nothing left for Preload")
		_, err = e.Preload(context.Background())
		require.NoError(t, err)
		open, _ := e.lex.Opened()
		require.Equal(t, all, open, "partitions open after Preload, warming tenants: %v", warm)
		require.Equal(t, want, packsOf(t, e, reqs), "warming tenants: %v", warm)
		require.NoError(t, e.Close())
	}
	m := storagetest.ReadManifest(t, dir)

	path := filepath.Join(dir, m.Checkpoint)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// The first row, in the body's first page after the head's.
	headEnd := len(checkpoint.Format) + 8 + int(binary.LittleEndian.Uint64(raw[len(checkpoint.Format):])) + 32
	raw[(headEnd+4095)&^4095+8] ^= 0x20
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	e2, err := Open(dir, Options{})
	require.NoError(t, err, "Open reads no row of that block")
	defer e2.Close()
	_, err = e2.Preload(context.Background())
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, m.Checkpoint)
	require.ErrorContains(t, err, "rows: block 0: checksum mismatch")
	_, err = e2.Query(context.Background(), reqs[0])
	require.ErrorIs(t, err, ErrCorrupt)
}

// What Preload refuses or has nothing to do for, each with its reason.
func TestPreloadRefuses(t *testing.T) {
	_, e := preloadIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := e.Preload(ctx)
	require.ErrorIs(t, err, context.Canceled, "a done context stops it before the first read")
	require.Zero(t, n)
	require.Contains(t, err.Error(), "preload "+e.dir, "the error names the file")

	mem := memEngine(t, Options{})
	ingestCorpus(t, mem)
	n, err = mem.Preload(context.Background())
	require.NoError(t, err, "an index in memory has nothing to read")
	require.Zero(t, n)

	require.NoError(t, e.Close())
	_, err = e.Preload(context.Background())
	require.ErrorIs(t, err, ErrClosed)
}

// Preload beside an ingest that merges (dropping segment files Preload may
// have listed) and beside queries: it never fails, and another tenant's
// pack does not move. (The first version of this test found that one did,
// through the HNSW graph the corpus-free embedder's vectors shared across
// tenants: see denseview.go.)
// Run under -race in .ci/run.
func TestPreloadDuringWrites(t *testing.T) {
	dir, e := preloadIndex(t)
	require.NoError(t, e.Close())
	// Preload opens the partitions the ingest writes to; warming tenants,
	// so do the queries' first requests.
	opts := preloadOptions(t)
	opts.WarmTenants = true
	e, err := Open(dir, opts)
	require.NoError(t, err)
	checked(t, e)
	ctx := context.Background()
	req := Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: "globex"}
	want, err := e.Query(ctx, req)
	require.NoError(t, err)
	var batches [][]connectors.Record // made here: a helper may stop the test, which only its goroutine may
	for i := range 3 {
		batches = append(batches, vocabularyRecords(t, "acme", "b"+string(rune('a'+i)), 4, uint64(3+i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, recs := range batches {
			if _, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{}); err != nil {
				errs <- err
				return
			}
			if err := e.Merge(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 6 {
			if _, err := e.Preload(ctx); err != nil {
				errs <- err
				return
			}
			p, err := e.Query(ctx, req)
			if err != nil {
				errs <- err
				return
			}
			if string(p.Bytes()) != string(want.Bytes()) {
				errs <- errors.New("globex's pack moved while acme's chunks came in")
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
