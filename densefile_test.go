package evpack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/retrieve"
)

// TestStoredDenseOfOtherDimensions: a stored dense file, well sealed and
// named by the manifest's checksum, whose vectors have other dimensions than
// the embedder the manifest names (which makes vectors of Dims()) is damage:
// Open refuses it with ErrCorrupt. It opened, and every query that reached
// the dense leg failed with ErrDims.
func TestStoredDenseOfOtherDimensions(t *testing.T) {
	vecs := testVectors(t)
	dir := t.TempDir()
	e, err := Open(dir, Options{Embedder: &countingFree{Embedder: testEmbedder(t, vecs)}})
	require.NoError(t, err)
	ingestCorpus(t, e)
	require.NoError(t, e.Close())

	m := storagetest.ReadManifest(t, dir)
	require.NotNil(t, m.Dense)
	name := filepath.Join(dir, m.Dense.File)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	dn, err := retrieve.DecodeDense(name, raw)
	require.NoError(t, err)
	ids := dn.IDs()
	short := make([][]int8, len(ids))
	for i, id := range ids {
		if v, ok := dn.Vector(id); ok && v != nil {
			short[i] = append([]int8(nil), v[:len(v)-1]...)
		}
	}
	forged := retrieve.NewDense(ids, short).Encode()
	require.NoError(t, os.WriteFile(name, forged, 0o644))
	m.Dense.Sum = evidence.Sum(forged)
	storagetest.WriteManifest(t, dir, m)

	e2, err := Open(dir, Options{Embedder: &countingFree{Embedder: testEmbedder(t, vecs)}})
	if err == nil {
		_, qerr := e2.Query(context.Background(), Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01")})
		e2.Close()
		t.Fatalf("Open accepted vectors of %d dimensions for an embedder of 16; a query then says %v", 15, qerr)
	}
	require.ErrorIs(t, err, ErrCorrupt)
}
