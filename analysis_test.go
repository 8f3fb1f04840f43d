package evpack

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// analysisFixture returns a closed index on disk holding the test corpus,
// and the packs it answers.
func analysisFixture(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	packs := packsFor(t, e)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	return dir, packs
}

// rewriteAnalysis applies edit to the analysis file of generation 1 of the
// closed index in dir and re-seals it, the manifest's checksum included: a
// forger who knows the format.
func rewriteAnalysis(t *testing.T, dir string, edit func(a *storage.Analysis)) {
	t.Helper()
	m := storagetest.ReadManifest(t, dir)
	b := &m.Batches[0]
	require.NotEmpty(t, b.Analysis, "each commit of chunks writes an analysis file")
	name := filepath.Join(dir, storage.ChunksDir, b.Analysis)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	a, err := storage.DecodeAnalysis(name, raw)
	require.NoError(t, err)
	edit(&a)
	raw = storage.EncodeAnalysis(a)
	require.NoError(t, os.WriteFile(name, raw, 0o644))
	b.AnalysisSum = evidence.Sum(raw)
	storagetest.WriteManifest(t, dir, m)
}

// Open reads each batch's analysis file instead of analyzing the stored
// texts again, and gives the same packs as the engine that wrote it.
func TestOpenReadsTheAnalysis(t *testing.T) {
	dir, want := analysisFixture(t)
	m := storagetest.ReadManifest(t, dir)
	for _, b := range m.Batches {
		if b.Chunks > 0 {
			require.Equal(t, storage.AnalysisName(b.Generation), b.Analysis, "batch %s", b.File)
		}
	}
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, want, packsFor(t, e))
}

// An analysis file is trusted only as far as it is checked: an edited byte
// is ErrCorrupt when the state is built from the batch files alone (Check,
// and Open of an index without a checkpoint; the first write after Open
// unfolds the checkpoint and reads no analysis file, and Check names the
// file), one re-sealed to hide the edit is caught by Check (which analyzes
// every text again), one made from another batch or for another batch's
// chunks is ErrCorrupt, and one made by other analyzers is not used at all.
func TestAnalysisIsChecked(t *testing.T) {
	t.Run("a byte edited", func(t *testing.T) {
		dir, _ := analysisFixture(t)
		name := filepath.Join(dir, storage.ChunksDir, storage.AnalysisName(1))
		raw, err := os.ReadFile(name)
		require.NoError(t, err)
		raw[len(raw)/2] ^= 1
		require.NoError(t, os.WriteFile(name, raw, 0o644))
		err = loadFull(dir)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), name+" hashes to")
		require.NoError(t, openFull(dir, Options{}), "the first write reads no analysis file")
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		err = e.Check()
		require.ErrorIs(t, err, ErrCheck)
		require.Contains(t, err.Error(), name+" hashes to")
	})
	t.Run("terms forged and re-sealed", func(t *testing.T) {
		dir, _ := analysisFixture(t)
		var forged string
		rewriteAnalysis(t, dir, func(a *storage.Analysis) {
			forged = a.Chunks[0].ID
			a.Chunks[0].Rerank = slices.Concat(a.Chunks[0].Rerank, []string{"forg"})
		})
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		err = e.Check()
		require.ErrorIs(t, err, ErrCheck)
		require.Contains(t, err.Error(), storage.AnalysisName(1)+`: chunk "`+forged+`": reranker terms differ`)
	})
	t.Run("token count forged and re-sealed", func(t *testing.T) {
		dir, _ := analysisFixture(t)
		rewriteAnalysis(t, dir, func(a *storage.Analysis) { a.Chunks[1].Tokens++ })
		err := loadFull(dir)
		// The manifest's token total no longer adds up.
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), "tokens")
	})
	t.Run("made from another batch", func(t *testing.T) {
		dir, _ := analysisFixture(t)
		rewriteAnalysis(t, dir, func(a *storage.Analysis) { a.Batch = evidence.Sum([]byte("another batch")) })
		err := loadFull(dir)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), "was made from a batch")
	})
	t.Run("chunks out of the batch's order", func(t *testing.T) {
		dir, _ := analysisFixture(t)
		rewriteAnalysis(t, dir, func(a *storage.Analysis) { a.Chunks[0], a.Chunks[1] = a.Chunks[1], a.Chunks[0] })
		err := loadFull(dir)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), "entry 0 is chunk")
	})
	t.Run("other analyzers", func(t *testing.T) {
		dir, want := analysisFixture(t)
		rewriteAnalysis(t, dir, func(a *storage.Analysis) {
			a.Identity = "lexical=en rerank=terms/0"
			for i := range a.Chunks {
				a.Chunks[i].Lex, a.Chunks[i].Rerank = []string{"stale"}, []string{"stale"}
			}
		})
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		checked(t, e)
		require.Equal(t, want, packsFor(t, e), "the stale file must not be used")
	})
}

// A purge deletes the analysis file of every batch it rewrites (it holds
// the purged text's terms), and the index reopens to the same packs.
func TestPurgeDeletesTheAnalysis(t *testing.T) {
	dir, e := purgeFixture(t)
	gen := e.st.Gen
	m := e.store.Manifest()
	require.NotEmpty(t, m.Batches[gen-1].Analysis)
	require.NotEmpty(t, grepDir(t, filepath.Join(dir, storage.ChunksDir), "zqxjk"), "the analysis file holds the secret's terms before the purge")
	_, err := e.Purge(t.Context(), []string{"memo-roe"}, "court order 2026-114")
	require.NoError(t, err)
	require.Empty(t, grepDir(t, dir, "zqxjk"))
	m = e.store.Manifest()
	require.Empty(t, m.Batches[gen-1].Analysis)
	require.NoFileExists(t, filepath.Join(dir, storage.ChunksDir, storage.AnalysisName(gen)))
	reqs, err := loadRequests()
	require.NoError(t, err)
	want := packsFor(t, e)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, want, packsFor(t, e), "%d requests", len(reqs))
}
