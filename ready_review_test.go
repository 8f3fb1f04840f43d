package evpack

// Adversarial tests (a helper's review of stop 53) of the commit's partitions readied beside
// it (retrieve.Lexical.Ready in Engine.apply).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// rvFailingEmbedder is an embedder whose Embed fails while fail is set.
type rvFailingEmbedder struct {
	retrieve.Embedder
	fail atomic.Bool
}

var errR53Embed = errors.New("test: the embedder is down")

func (f *rvFailingEmbedder) Embed(ctx context.Context, feats [][]int32, counts *retrieve.Counts, query bool) ([][]int8, error) {
	if f.fail.Load() && !query {
		return nil, errR53Embed
	}
	return f.Embedder.Embed(ctx, feats, counts, query)
}

// rvLexFiles lists every file under the index's lexical directory with
// its size and checksum.
func rvLexFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, storage.LexicalDir)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		rel, _ := filepath.Rel(root, p)
		out = append(out, rel+" "+hex.EncodeToString(sum[:8]))
		return nil
	}))
	return out
}

// rvDenseBase is an index of 40 chunks with a dense leg (SIF), closed.
func rvDenseBase(t *testing.T, vecs string) string {
	t.Helper()
	base := t.TempDir()
	e := mustOpenWith(t, base, Options{Embedder: testEmbedder(t, vecs)})
	_, err := e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "a", 40, 3)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	return base
}

// TestReadyEarlyFailure: a commit that fails before its lexical
// write while Ready runs, and while another holder keeps its partitions
// locked, must fail with its own error (not ErrLocked, not ErrBroken),
// leave every lexical file as it was, and leave the engine serving: once
// the lock goes, the same commit is made and the index checks clean. Two
// early failures: the embedder (an engine with a dense leg, which opens
// its partitions read-only at Open: a reader's shared lock), and the
// batch file's write (commit.Write; a plain engine: a writer's exclusive
// lock). A failed commit beside no lock is also checked for what it
// changed on disk (logged only: Ready reopens the partitions for writing,
// which persists bleve's snapshot, before the commit fails).
func TestReadyEarlyFailure(t *testing.T) {
	ctx := context.Background()
	vecs := testVectors(t)
	same := vocabularyRecords(t, "acme", "b", 40, 3) // the same partitions
	plainBase := t.TempDir()
	{
		e := mustOpen(t, plainBase)
		_, err := e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 40, 3)), IngestOptions{})
		require.NoError(t, err)
		require.NoError(t, e.Close())
	}
	errWrite := errors.New("test: no space left on device")
	for _, tc := range []struct {
		name string
		base string
		how  int
		fail func(e *Engine, emb *rvFailingEmbedder, on bool)
		want error
	}{
		{"embedder, shared lock", rvDenseBase(t, vecs), syscall.LOCK_SH, func(_ *Engine, emb *rvFailingEmbedder, on bool) { emb.fail.Store(on) }, errR53Embed},
		{"batch write, exclusive lock", plainBase, syscall.LOCK_EX, func(e *Engine, _ *rvFailingEmbedder, on bool) {
			e.store.Hooks.BeforeRename = nil
			if on {
				e.store.Hooks.BeforeRename = func(string) error { return errWrite }
			}
		}, errWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(tc.base)))
			emb := &rvFailingEmbedder{Embedder: testEmbedder(t, vecs)}
			opts := Options{LockWait: 20 * time.Millisecond}
			if tc.base != plainBase {
				opts.Embedder = emb
			}
			e, err := Open(dir, opts)
			require.NoError(t, err)
			defer e.Close()
			gen := e.st.Gen
			before := rvLexFiles(t, dir)
			release := lockEveryPartition(t, dir, tc.how)
			tc.fail(e, emb, true)
			_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
			require.ErrorIs(t, err, tc.want)
			require.NotErrorIs(t, err, ErrLocked, "the commit's own error")
			require.NotErrorIs(t, err, ErrBroken)
			require.Equal(t, gen, e.st.Gen)
			release()
			require.Equal(t, before, rvLexFiles(t, dir), "the failed commit changed the lexical files")

			_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
			require.ErrorIs(t, err, tc.want)
			if after := rvLexFiles(t, dir); !slices.Equal(before, after) {
				t.Logf("OBSERVATION: a commit that failed early changed the lexical files (Ready reopened them for writing):\nbefore %q\nafter  %q", before, after)
			}
			tc.fail(e, emb, false)
			_, err = e.Query(ctx, Request{Question: same[0].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
			require.NoError(t, err)
			require.Equal(t, gen+1, e.st.Gen)
			require.NoError(t, e.Check())
		})
	}
}

// TestReadyCancelledAndClose: a commit whose context is
// cancelled while Ready reopens its partitions (from the reopen's hook)
// fails with context.Canceled and is undone (not ErrBroken); commits that
// fail in the embedder run beside queries and a Close (-race: Ready's
// goroutine must be waited for before Close, on every path); after Close,
// a commit gets ErrClosed; reopened, the index checks clean.
func TestReadyCancelledAndClose(t *testing.T) {
	vecs := testVectors(t)
	base := rvDenseBase(t, vecs)
	same := vocabularyRecords(t, "acme", "b", 40, 3)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
	emb := &rvFailingEmbedder{Embedder: testEmbedder(t, vecs)}
	e, err := Open(dir, Options{Embedder: emb})
	require.NoError(t, err)
	gen := e.st.Gen

	ctx, cancel := context.WithCancel(context.Background())
	e.lex.Hooks.ReadOnlyClosed = func(string) { cancel() }
	_, err = e.Ingest(ctx, connectors.Records(same), IngestOptions{})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrBroken)
	require.Equal(t, gen, e.st.Gen)
	e.lex.Hooks.ReadOnlyClosed = nil
	require.NoError(t, e.Check())

	emb.fail.Store(true)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Close comes once each goroutine has gone round three times (or
	// given up): Close then meets commits and queries in flight.
	var warm sync.WaitGroup
	warm.Add(3)
	// Made here: vocabularyRecords may stop the test, which only the
	// test's goroutine may do. Every commit fails, so a batch can come again.
	var batches [2][4][]connectors.Record
	for i := range batches {
		for k := range batches[i] {
			batches[i][k] = vocabularyRecords(t, "acme", "x", 5, uint64(100+10*i+k))
		}
	}
	for i := range 2 {
		wg.Go(func() {
			warmed := sync.OnceFunc(warm.Done)
			defer warmed()
			for k := 0; ; k++ {
				if k == 3 {
					warmed()
				}
				select {
				case <-stop:
					return
				default:
				}
				recs := batches[i][k%len(batches[i])]
				_, err := e.Ingest(context.Background(), connectors.Records(recs), IngestOptions{})
				if err == nil || !(errors.Is(err, errR53Embed) || errors.Is(err, ErrClosed)) {
					t.Errorf("a commit beside Close: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		req := Request{Question: same[1].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5}
		warmed := sync.OnceFunc(warm.Done)
		defer warmed()
		for k := 0; ; k++ {
			if k == 3 {
				warmed()
			}
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.Query(context.Background(), req); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errR53Embed) {
				t.Errorf("a query beside Close: %v", err)
				return
			}
		}
	})
	warm.Wait()
	require.NoError(t, e.Close())
	close(stop)
	wg.Wait()
	_, err = e.Ingest(context.Background(), connectors.Records(same), IngestOptions{})
	require.ErrorIs(t, err, ErrClosed)

	emb.fail.Store(false)
	e = checked(t, mustOpenWith(t, dir, Options{Embedder: emb}))
	require.Equal(t, gen, e.st.Gen)
	_, err = e.Ingest(context.Background(), connectors.Records(same), IngestOptions{})
	require.NoError(t, err)
}
