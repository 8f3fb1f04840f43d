package evpack

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

// readManifest reads and checks the manifest of the closed index in dir.
func readManifest(t *testing.T, dir string) *storage.Manifest {
	t.Helper()
	name := filepath.Join(dir, storage.ManifestName)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	m, err := storage.DecodeManifest(name, raw)
	require.NoError(t, err)
	return m
}

// writeManifest seals and writes m as dir's manifest, as a forger who
// knows the format would.
func writeManifest(t *testing.T, dir string, m *storage.Manifest) {
	t.Helper()
	raw, err := storage.EncodeManifest(m)
	require.NoError(t, err)
	require.NoError(t, fsutil.WriteAtomic(filepath.Join(dir, storage.ManifestName), raw))
}

// forgeBatches rewrites every batch file of the closed index in dir with
// edit applied to each body, and re-seals everything as a forger who knows
// the formats would: each file's checksum line, the chain of prev links and
// the manifest's checksums. It reports whether edit changed anything.
func forgeBatches(t *testing.T, dir string, edit func(body []byte) []byte) bool {
	t.Helper()
	m := readManifest(t, dir)
	changed, prev := false, ""
	for i, b := range m.Batches {
		name := filepath.Join(dir, storage.ChunksDir, b.File)
		raw, err := os.ReadFile(name)
		require.NoError(t, err)
		h, chunks, err := storage.DecodeBatch(name, raw)
		require.NoError(t, err)
		body, err := fsutil.UnsealText(raw)
		require.NoError(t, err)
		edited := edit(bytes.Clone(body))
		changed = changed || !bytes.Equal(edited, body)
		// Re-link: the header names the previous file's new checksum.
		h.Prev = prev
		fresh, err := storage.EncodeBatch(h, chunks)
		require.NoError(t, err)
		freshBody, _ := fsutil.UnsealText(fresh)
		first := bytes.IndexByte(freshBody, '\n') + 1
		rest := edited[bytes.IndexByte(edited, '\n')+1:]
		out := fsutil.SealText(append(freshBody[:first:first], rest...))
		require.NoError(t, os.WriteFile(name, out, 0o644))
		m.Batches[i].Sum = evidence.Sum(out)
		prev = m.Batches[i].Sum
	}
	writeManifest(t, dir, m)
	return changed
}
