package evpack

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// forgedPending is PENDING.json's body (storage.pending), forged here.
type forgedPending struct {
	Format     string   `json:"format"`
	Generation int64    `json:"generation"`
	Writes     []string `json:"writes"`
	Obsolete   []string `json:"obsolete"`
}

// TestForgedPendingRecord (an adversarial review, stop 80): a commit record
// (PENDING.json) edited, truncated, naming a generation ahead or behind,
// naming committed files or hostile paths, is refused by Open with
// ErrCorrupt or settled without losing any committed file: the index
// answers every request as before and Check is clean; nothing outside the
// index directory is touched.
func TestForgedPendingRecord(t *testing.T) {
	ctx := context.Background()
	base, e := purgeFixture(t)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	m := storagetest.ReadManifest(t, base)
	gen := m.Generation
	var named []string
	for _, b := range m.Batches {
		named = append(named, storage.ChunksDir+"/"+b.File)
	}
	if m.Checkpoint != "" {
		named = append(named, m.Checkpoint)
	}
	require.NotEmpty(t, named)

	outside := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(outside, []byte("not the index's"), 0o644))

	seal := func(p forgedPending) []byte {
		if p.Format == "" {
			p.Format = "evpack-pending/1"
		}
		raw, err := json.Marshal(&p)
		require.NoError(t, err)
		return fsutil.SealText(append(raw, '\n'))
	}
	good := seal(forgedPending{Generation: gen + 1, Writes: []string{storage.ChunksDir + "/" + storage.BatchName(gen+1)}})
	cases := []struct {
		name    string
		raw     []byte
		corrupt bool // Open must refuse it with ErrCorrupt; else settle it
	}{
		{"truncated", good[:len(good)/2], true},
		{"one byte edited", func() []byte { b := append([]byte(nil), good...); b[20] ^= 1; return b }(), true},
		{"empty", []byte{}, true},
		{"generation far ahead", seal(forgedPending{Generation: gen + 5, Writes: named}), true},
		{"generation behind", seal(forgedPending{Generation: gen - 1, Writes: named, Obsolete: named}), true},
		{"negative generation", seal(forgedPending{Generation: -1}), true},
		{"parent path", seal(forgedPending{Generation: gen + 1, Writes: []string{"../victim"}}), true},
		{"absolute path", seal(forgedPending{Generation: gen + 1, Writes: []string{outside}}), true},
		{"chunks parent", seal(forgedPending{Generation: gen + 1, Writes: []string{"chunks/../MANIFEST.json"}}), true},
		{"manifest", seal(forgedPending{Generation: gen + 1, Writes: []string{storage.ManifestName}}), true},
		{"lexical", seal(forgedPending{Generation: gen + 1, Writes: []string{storage.LexicalDir}}), true},
		{"NUL byte, next generation", seal(forgedPending{Generation: gen + 1, Writes: []string{"state-\x00.bin"}}), true},
		{"NUL byte, committed generation", seal(forgedPending{Generation: gen, Obsolete: []string{"dense-\x00"}}), true},
		{"other format", seal(forgedPending{Format: "evpack-pending/2", Generation: gen + 1}), true},
		// Settled: nothing committed is lost.
		{"next generation naming every committed file", seal(forgedPending{Generation: gen + 1, Writes: named, Obsolete: named}), false},
		{"committed generation making every file obsolete", seal(forgedPending{Generation: gen, Writes: named, Obsolete: named}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, storage.PendingName), tc.raw, 0o644))
			e, err := Open(dir, Options{})
			if tc.corrupt {
				require.ErrorIs(t, err, ErrCorrupt)
				require.FileExists(t, outside)
				for _, f := range named {
					require.FileExists(t, filepath.Join(dir, f), "nothing committed deleted")
				}
				// The record removed by hand, the index is as it was.
				require.NoError(t, os.Remove(filepath.Join(dir, storage.PendingName)))
				e, err = Open(dir, Options{})
			}
			require.NoError(t, err)
			defer e.Close()
			require.Equal(t, gen, committedState(e).Gen)
			require.Equal(t, want, packsFor(t, e))
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%q", rep.Problems)
			require.NoError(t, e.Check())
			require.FileExists(t, outside)
		})
	}
}
