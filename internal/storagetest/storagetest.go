// Package storagetest lets tests act as a forger who knows evpack's stored
// formats: read a closed index's manifest, write one back sealed, and
// rewrite batch files with every checksum and chain link made consistent
// again. What such a forger changes must still be caught, by content hashes
// (Check, the citation gate) or by Open's cross-checks. On Linux it also
// plays a process out of file descriptors (ExhaustDescriptors), which fails
// a directory's fsync after a rename that needed none.
package storagetest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
)

// ReadManifest reads and checks the manifest of the closed index in dir.
func ReadManifest(t testing.TB, dir string) *storage.Manifest {
	t.Helper()
	name := filepath.Join(dir, storage.ManifestName)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	m, err := storage.DecodeManifest(name, raw, func(file string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, file)) })
	require.NoError(t, err)
	return m
}

// WriteManifest seals m and writes it as dir's manifest, its volumes
// written again from its entries (an edit to an entry a volume lists would
// otherwise not reach the disk).
func WriteManifest(t testing.TB, dir string, m *storage.Manifest) {
	t.Helper()
	for i, v := range m.Volumes {
		raw, err := storage.EncodeVolume(m.VolumeEntries(i))
		require.NoError(t, err)
		require.NoError(t, fsutil.WriteAtomic(filepath.Join(dir, v.File), raw))
		m.Volumes[i].Sum = evidence.Sum(raw)
	}
	raw, err := storage.EncodeManifest(m)
	require.NoError(t, err)
	require.NoError(t, fsutil.WriteAtomic(filepath.Join(dir, storage.ManifestName), raw))
}

// ForgeBatches rewrites every batch file of the closed index in dir with
// edit applied to the chunk lines of each, then re-seals everything: each
// file's checksum line, the chain of prev links, each analysis file's link
// to its batch (its terms left as they were) and the manifest's checksums. It reports whether edit changed anything.
func ForgeBatches(t testing.TB, dir string, edit func(lines []byte) []byte) bool {
	t.Helper()
	m := ReadManifest(t, dir)
	changed, prev := false, ""
	for i, b := range m.Batches {
		name := filepath.Join(dir, storage.ChunksDir, b.File)
		raw, err := os.ReadFile(name)
		require.NoError(t, err)
		h, c, err := storage.DecodeBatch(name, raw)
		require.NoError(t, err)
		body, err := fsutil.UnsealText(raw)
		require.NoError(t, err)
		lines := body[bytes.IndexByte(body, '\n')+1:]
		edited := edit(bytes.Clone(lines))
		changed = changed || !bytes.Equal(edited, lines)
		// The header names the previous file's new checksum.
		h.Prev = prev
		fresh, err := storage.EncodeBatch(h, storage.Contents{Facts: c.Facts, Purges: c.Purges, Redacted: c.Redacted, Chunks: c.Chunks})
		require.NoError(t, err)
		header, err := fsutil.UnsealText(fresh)
		require.NoError(t, err)
		header = header[:bytes.IndexByte(header, '\n')+1]
		out := fsutil.SealText(append(header, edited...))
		require.NoError(t, os.WriteFile(name, out, 0o644))
		m.Batches[i].Sum = evidence.Sum(out)
		prev = m.Batches[i].Sum
		if b.Analysis != "" { // the forger re-points it at the forged batch, terms unchanged
			aname := filepath.Join(dir, storage.ChunksDir, b.Analysis)
			raw, err := os.ReadFile(aname)
			require.NoError(t, err)
			a, err := storage.DecodeAnalysis(aname, raw)
			require.NoError(t, err)
			a.Batch = m.Batches[i].Sum
			araw := storage.EncodeAnalysis(a)
			require.NoError(t, os.WriteFile(aname, araw, 0o644))
			m.Batches[i].AnalysisSum = evidence.Sum(araw)
		}
	}
	WriteManifest(t, dir, m)
	return changed
}
