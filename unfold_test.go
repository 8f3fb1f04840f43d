package evpack

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storagetest"
)

// unfoldHistory is lazyHistory with one document more, of tenant acme,
// whose chunks say their place (MetaPosition, in another order than their
// IDs, one without) and arrive over two commits, the second's placed
// between the first's.
func unfoldHistory(t *testing.T, dir string) {
	lazyHistory(t, dir)
	recs := vocabularyRecords(t, "acme", "memo", 9, 11)
	for i := range recs {
		recs[i].Chunk.DocID, recs[i].Chunk.Version = "memo", "2"
		if i != 4 {
			recs[i].Chunk.Meta = map[string]string{state.MetaPosition: fmt.Sprint((7 * i) % 9)}
		}
	}
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	for _, part := range [][]connectors.Record{recs[:5], recs[5:]} {
		_, err = e.Ingest(context.Background(), connectors.Records(part), IngestOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
}

// loadedAndUnfolded opens dir twice and returns the state loadState builds
// and the one unfold builds from the checkpoint Open read.
func loadedAndUnfolded(t *testing.T, dir string) (loaded, unfolded *state.State, err error) {
	t.Helper()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	loaded, err = state.LoadState(e.store, e.lex, e.emb, e.graph)
	require.NoError(t, err)
	unfolded, err = e.st.Unfold(e.store)
	return loaded, unfolded, err
}

// TestUnfoldIsLoadState: the state unfolded from a checkpoint and the batch
// files is the one the batch files give alone, field by field (reranker
// terms compared as terms: the checkpoint numbers them its own way), after
// chunks of several tenants, a document placed over two commits, facts and
// a purge; it writes the same checkpoint, byte for byte; and the first
// write after Open builds it.
func TestUnfoldIsLoadState(t *testing.T) {
	dir := t.TempDir()
	unfoldHistory(t, dir)
	want, got, err := loadedAndUnfolded(t, dir)
	require.NoError(t, err)
	require.Nil(t, got.Rows)
	sameState(t, want, got)
	require.Len(t, got.DocOrder["acme\x00memo\x002"].IDs, 9)

	wantFile, err := state.EncodeCheckpoint(want, "x", func() ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	gotFile, err := state.EncodeCheckpoint(got, "x", func() ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	require.Equal(t, wantFile.Bytes(), gotFile.Bytes())

	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	sameState(t, want, fullState(t, e))
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "globex", "later", 5, 12)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Check(), "the commit on the unfolded state")
}

// sameState fails t unless got holds what want holds (see
// TestUnfoldIsLoadState).
func sameState(t *testing.T, want, got *state.State) {
	t.Helper()
	require.Equal(t, want.Gen, got.Gen)
	require.Equal(t, want.Commits, got.Commits)
	require.Equal(t, want.Stats, got.Stats)
	require.Equal(t, want.Bounds, got.Bounds)
	require.Equal(t, want.Committed, got.Committed)
	require.Equal(t, want.FactLog, got.FactLog)
	require.Equal(t, want.Facts, got.Facts)
	require.Equal(t, want.PurgeLog, got.PurgeLog)
	require.Equal(t, want.Purged, got.Purged)
	require.Equal(t, len(want.Entities), len(got.Entities))
	for k, v := range want.Entities {
		require.True(t, slices.Equal(v, got.Entities[k]), "entities %q", k)
	}
	require.Empty(t, got.Feats)
	require.Equal(t, slices.Sorted(maps.Keys(want.Chunks)), slices.Sorted(maps.Keys(got.Chunks)))
	for id, c := range want.Chunks {
		require.Equal(t, *c, *got.Chunks[id], "chunk %q", id)
	}
	require.Equal(t, slices.Sorted(maps.Keys(want.Tenants)), slices.Sorted(maps.Keys(got.Tenants)))
	for name, w := range want.Tenants {
		g := got.Tenants[name]
		for i, s := range []state.Series{w.Docs, w.Tokens, w.Facts, w.Purges, w.RerankTerms} {
			require.True(t, slices.Equal(s, []state.Series{g.Docs, g.Tokens, g.Facts, g.Purges, g.RerankTerms}[i]), "tenant %q, series %d", name, i)
		}
		require.Equal(t, w.ChunkIDs, g.ChunkIDs, "tenant %q", name)
		require.True(t, slices.Equal(w.Digest, g.Digest), "tenant %q", name)
		for i, df := range []map[string]state.Series{w.LexDF, w.RerankDF} {
			gdf := []map[string]state.Series{g.LexDF, g.RerankDF}[i]
			require.Equal(t, len(df), len(gdf), "tenant %q", name)
			for term, s := range df {
				require.True(t, slices.Equal(s, gdf[term]), "tenant %q, term %q", name, term)
			}
		}
	}
	require.Equal(t, slices.Sorted(maps.Keys(want.DocOrder)), slices.Sorted(maps.Keys(got.DocOrder)))
	for key, w := range want.DocOrder {
		g := got.DocOrder[key]
		require.Equal(t, w.IDs, g.IDs, "document %q", key)
		for i := range w.IDs {
			require.Equal(t, len(w.Nums[i]), len(g.Nums[i]), "chunk %q", w.IDs[i])
			if len(w.Nums[i]) > 0 {
				require.Equal(t, want.TermsOf(w.Nums[i]), got.TermsOf(g.Nums[i]), "chunk %q", w.IDs[i])
			}
		}
	}
	require.Equal(t, len(want.DocPlace), len(got.DocPlace))
	for id, w := range want.DocPlace {
		g := got.DocPlace[id]
		require.Same(t, got.DocOrder[g.Key], g.List, "chunk %q", id)
		w.List, g.List = nil, nil
		require.Equal(t, w, g, "chunk %q", id)
	}
}

// TestUnfoldRefusesADisagreeingCheckpoint: a checkpoint with a block of
// its body edited, or forged and sealed anew (a tenant's chunk count in
// its figures one more; one chunk's generation moved on), is not unfolded
// (errUnfold, naming the file, the tenant or the chunk); the first write
// then builds the state from the batch files alone, and Check still names
// the forged checkpoint.
func TestUnfoldRefusesADisagreeingCheckpoint(t *testing.T) {
	dir := t.TempDir()
	unfoldHistory(t, dir)
	m := storagetest.ReadManifest(t, dir)
	name := filepath.Join(dir, m.Checkpoint)
	orig, err := os.ReadFile(name)
	require.NoError(t, err)
	want, _, err := loadedAndUnfolded(t, dir)
	require.NoError(t, err)

	edited := slices.Clone(orig)
	edited[len(edited)-5] ^= 1 // in the last block of the number arena
	require.NoError(t, os.WriteFile(name, edited, 0o644))
	_, _, err = loadedAndUnfolded(t, dir)
	require.ErrorIs(t, err, state.ErrUnfold)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), m.Checkpoint)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	sameState(t, want, fullState(t, e))
	require.NoError(t, e.Close())

	// A tenant's chunk count in the head's figures, one more.
	counted := *want
	counted.Bounds = want.Bounds.Clone()
	counted.Bounds.Tenants["acme"]++
	forgeCheckpoint(t, dir, e, &counted, m)
	_, _, err = loadedAndUnfolded(t, dir)
	require.ErrorIs(t, err, state.ErrUnfold)
	require.Contains(t, err.Error(), `tenant "acme" has`)

	moved, id := generationMoved(t, want)
	forgeCheckpoint(t, dir, e, moved, m)
	_, _, err = loadedAndUnfolded(t, dir)
	require.ErrorIs(t, err, state.ErrUnfold)
	require.Contains(t, err.Error(), fmt.Sprintf("%q", id))

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	sameState(t, want, fullState(t, e))
	err = e.Check()
	require.ErrorIs(t, err, ErrCheck)
	require.Contains(t, err.Error(), m.Checkpoint+" differs from the checkpoint the batch files give")
}

// TestQueriesDuringTheFirstWrite: requests keep being answered, each pack
// as before, while the writes after Open commit, each replacing the rows
// the requests read by those of the checkpoint it wrote (under -race in
// .ci/run); the requests are pinned to the generation Open read, so the
// commits cannot move them.
func TestQueriesDuringTheFirstWrite(t *testing.T) {
	dir := t.TempDir()
	unfoldHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	gen := e.st.Gen
	var reqs []Request
	for _, tenant := range []string{"", "acme", "globex"} {
		reqs = append(reqs,
			Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: tenant, Generation: gen},
			Request{Question: "memo notes on the retention of records", AsOf: asof.MustDate("2026-06-01"), Tenant: tenant, Generation: gen})
	}
	want := packsOf(t, e, reqs)
	// Opened again: the packs above read (and cached) chunks of e's state.
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)

	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		wg.Go(func() {
			for i := range 30 {
				k := (w + i) % len(reqs)
				p, err := e.Query(ctx, reqs[k])
				if err == nil && !bytes.Equal(p.Bytes(), want[k]) {
					err = fmt.Errorf("request %d: the pack moved", k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range 2 {
		_, err := e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", fmt.Sprintf("during%d", i), 4, uint64(20+i))), IngestOptions{})
		require.NoError(t, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NotNil(t, e.st.Rows, "the writes' states are read from the checkpoints they wrote")
	require.Equal(t, gen+2, e.st.Gen)
}
