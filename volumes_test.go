package evpack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestManifestVolumesOverALongHistory (issue 30): a commit writes a
// manifest of at most storage.VolumeSize batch entries, however long the
// history, by moving each run of them into a volume file. Over two volumes
// and a purge that rewrites an entry of the first, a replica applying the
// same entries writes the same files, and so does one that starts after the
// purge (given the batch the purge rewrote); a commit that fails at the volume's
// write (a full disk) leaves the index as it was and the next one succeeds;
// the packs at every sampled generation survive a reopen; and a volume
// edited or lost is ErrCorrupt at Open, naming it.
func TestManifestVolumesOverALongHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("commits 2×storage.VolumeSize+5 generations one by one, on a writer and a replica; run without -short")
	}
	ctx := context.Background()
	wdir, rdir := t.TempDir(), t.TempDir()
	w := mustOpen(t, wdir)
	defer func() { w.Close() }()
	r := checked(t, mustOpen(t, rdir))
	n := 2*storage.VolumeSize + 5
	recs := vocabularyRecords(t, "acme", "a", n, 1)
	commit := func(recs ...connectors.Record) {
		t.Helper()
		_, err := w.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
		require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, w.st.Gen)), "replica, generation %d", w.st.Gen)
	}
	volumes := func(dir string) []string {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(dir, "batches-*.json"))
		require.NoError(t, err)
		for i := range names {
			names[i] = filepath.Base(names[i])
		}
		return names
	}
	commit(recs...)
	for i := 1; i < n; i++ {
		if w.st.Gen+1 == storage.VolumeSize {
			// The commit that writes the first volume fails at its write:
			// nothing of it stays, and the same commit then succeeds.
			w.store.Hooks.BeforeRename = func(tmp string) error {
				if strings.Contains(filepath.Base(tmp), "batches-") {
					return fmt.Errorf("no space left on device (test, %s)", filepath.Base(tmp))
				}
				return nil
			}
			_, err := w.Ingest(ctx, connectors.Records([]connectors.Record{retraction(fmt.Sprintf("a-%04d", i))}), IngestOptions{})
			require.ErrorContains(t, err, "no space left on device")
			require.Equal(t, int64(storage.VolumeSize-1), w.st.Gen)
			require.Empty(t, volumes(wdir))
			require.NoFileExists(t, filepath.Join(wdir, storage.PendingName))
			require.NoFileExists(t, filepath.Join(wdir, storage.ChunksDir, storage.BatchName(storage.VolumeSize)))
			w.store.Hooks.BeforeRename = nil
		}
		commit(retraction(fmt.Sprintf("a-%04d", i)))
	}
	require.Equal(t, []string{"batches-00000256.00000256.json", "batches-00000512.00000512.json"}, volumes(wdir))

	// The purge of a-0001's text rewrites generation 1's batch, whose
	// entry the first volume lists: that volume is written again.
	_, err := w.Purge(ctx, []string{"a-0001"}, "erasure request")
	require.NoError(t, err)
	gen := w.st.Gen
	require.Equal(t, int64(n+1), gen)
	require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, gen)))
	require.Equal(t, []string{fmt.Sprintf("batches-00000256.%08d.json", gen), "batches-00000512.00000512.json"}, volumes(wdir),
		"the first volume written again, the one it replaced removed")
	requireSameFiles(t, wdir, rdir, "after the purge")
	for _, v := range volumes(wdir) {
		want, err := os.ReadFile(filepath.Join(wdir, v))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(rdir, v))
		require.NoError(t, err, "the replica wrote %s too", v)
		require.Equal(t, string(want), string(got), v)
	}

	// A replica that starts after the purge is handed generation 1's batch
	// as the purge left it (under its checksum as committed), and so has
	// nothing to rewrite when it applies the purge: it writes the volume
	// again all the same, and names it as the writer did.
	ldir := t.TempDir()
	late := checked(t, mustOpen(t, ldir))
	first := storagetest.ReadManifest(t, wdir).Batches[0]
	redacted, err := os.ReadFile(filepath.Join(wdir, storage.ChunksDir, first.File))
	require.NoError(t, err)
	require.NoError(t, late.applyEntry(ctx, redacted, first.Chain))
	for g := int64(2); g <= gen; g++ {
		require.NoError(t, applyBody(ctx, late, committedEntry(t, wdir, g)), "late replica, generation %d", g)
	}
	requireSameFiles(t, wdir, ldir, "the replica that started after the purge")
	require.Equal(t, volumes(wdir), volumes(ldir))

	raw, err := os.ReadFile(filepath.Join(wdir, storage.ManifestName))
	require.NoError(t, err)
	body, err := fsutil.UnsealText(raw)
	require.NoError(t, err)
	var stored struct{ Batches []storage.Batch }
	require.NoError(t, json.Unmarshal(body, &stored))
	require.Len(t, stored.Batches, int(gen)-2*storage.VolumeSize, "the stored manifest holds the entries after its volumes")
	m := storagetest.ReadManifest(t, wdir)
	require.Len(t, m.Batches, int(gen), "read with its volumes, it has every generation's")
	require.Equal(t, storage.RedactedName(1, gen), m.Batches[0].File, "as the purge left generation 1's entry")

	var reqs []Request
	for _, g := range []int64{1, 2, 255, 256, 257, 511, 512, 513, gen - 1, gen} {
		for _, q := range []string{recs[1].Chunk.Text, recs[300].Chunk.Text} {
			reqs = append(reqs, Request{Question: q, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5, Generation: g})
		}
	}
	want := packsOf(t, w, reqs)
	require.Equal(t, want, packsOf(t, r, reqs), "the replica's packs")
	require.NoError(t, w.Close())
	w = mustOpen(t, wdir)
	require.Equal(t, want, packsOf(t, w, reqs), "reopened from its volumes")
	rep, err := w.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.NoError(t, w.Close())

	second := filepath.Join(wdir, "batches-00000512.00000512.json")
	good, err := os.ReadFile(second)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, reason string
		damage       func() error
		says         string
	}{
		{"edited", "a volume is history: one changed byte is a changed entry",
			func() error { return os.WriteFile(second, flipByte(good, 100), 0o644) }, "batches-00000512.00000512.json hashes to"},
		{"lost", "without it, 256 generations have no batch",
			func() error { return os.Remove(second) }, "batches-00000512.00000512.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.damage())
			_, err := Open(wdir, Options{})
			require.True(t, errors.Is(err, ErrCorrupt), "%s: %v", tc.reason, err)
			require.ErrorContains(t, err, tc.says, tc.reason)
			require.NoError(t, os.WriteFile(second, good, 0o644))
		})
	}
	w = mustOpen(t, wdir)
	require.Equal(t, want, packsOf(t, w, reqs), "the volume put back")
}

// flipByte returns b with byte i changed.
func flipByte(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x20
	return out
}

// volumeCrashEnv names the index directory and the kill point of the
// volume crash child (see TestMain), as "DIR|POINT".
const volumeCrashEnv = "EVPACK_VOLUMECRASH_CHILD"

// volumeCrashChild commits the retraction that brings the index in dir to
// generation storage.VolumeSize, whose commit writes the first volume, and
// stops dead at point, printing "at POINT": "temp" (the volume's temp file
// written and synced, not renamed), "renamed" (every file in place, the
// manifest not written) or "committed" (the manifest written, its record
// not yet removed). It returns only on an error.
func volumeCrashChild(arg string) error {
	dir, point, _ := strings.Cut(arg, "|")
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	stop := func() {
		fmt.Printf("at %s\n", point)
		select {} // the parent kills the process here
	}
	switch point {
	case "temp":
		e.store.Hooks.BeforeRename = func(tmp string) error {
			if strings.Contains(filepath.Base(tmp), "batches-") {
				stop()
			}
			return nil
		}
	case "renamed":
		e.store.Hooks.BeforeManifest = func() error { stop(); return nil }
	case "committed":
		e.store.Hooks.AfterManifest = stop
	default:
		return fmt.Errorf("no kill point %q", point)
	}
	_, err = e.Ingest(context.Background(), connectors.Records([]connectors.Record{retraction("a-0255")}), IngestOptions{})
	return fmt.Errorf("the ingest returned (%v) instead of stopping at %s", err, point)
}

// TestKillAtVolume kills (SIGKILL) a process in the commit that writes the
// index's first volume, at three points: the volume's temp file written,
// every file renamed but the manifest not written, the manifest written
// but its record not removed. Open then rolls the commit back (the first
// two: no volume, no temp file, generation VolumeSize-1) or finishes it
// (the third: the volume named, the record gone); either way Check finds
// nothing amiss, and the next commits reach the same files as a process
// that was never killed.
func TestKillAtVolume(t *testing.T) {
	if testing.Short() {
		t.Skip("commits storage.VolumeSize generations; run without -short")
	}
	ctx := context.Background()
	base := t.TempDir()
	e := mustOpen(t, base)
	recs := vocabularyRecords(t, "acme", "a", storage.VolumeSize+1, 1)
	_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	for i := 1; i < storage.VolumeSize-1; i++ {
		retractOne(t, e, i)
	}
	require.Equal(t, int64(storage.VolumeSize-1), e.st.Gen)
	require.NoError(t, e.Close())

	for _, tc := range []struct {
		point, reason string
		gen           int64 // after Open
	}{
		{"temp", "before the commit point: rolled back, the temp file removed", storage.VolumeSize - 1},
		{"renamed", "before the commit point: rolled back, the volume its record names removed", storage.VolumeSize - 1},
		{"committed", "after the commit point: kept, the record tidied", storage.VolumeSize},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
			require.Equal(t, "at "+tc.point, killAtLine(t, volumeCrashEnv+"="+dir+"|"+tc.point, "at "))
			require.FileExists(t, filepath.Join(dir, storage.PendingName), "killed mid-commit")

			e, err := Open(dir, Options{})
			require.NoError(t, err)
			defer func() { e.Close() }()
			require.Equal(t, tc.gen, e.st.Gen, tc.reason)
			require.NoFileExists(t, filepath.Join(dir, storage.PendingName), tc.reason)
			temps, err := filepath.Glob(filepath.Join(dir, ".batches-*"))
			require.NoError(t, err)
			require.Empty(t, temps, "no temp file stays")
			named, err := filepath.Glob(filepath.Join(dir, "batches-*"))
			require.NoError(t, err)
			if tc.gen == storage.VolumeSize {
				require.Equal(t, []string{filepath.Join(dir, "batches-00000256.00000256.json")}, named, tc.reason)
			} else {
				require.Empty(t, named, tc.reason)
			}
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%q", rep.Problems)
			require.Empty(t, rep.Strays)

			// The commits a process never killed makes: the same manifest.
			for i := e.st.Gen; i <= storage.VolumeSize; i++ {
				retractOne(t, e, int(i))
			}
			m := storagetest.ReadManifest(t, dir)
			require.Equal(t, int64(storage.VolumeSize+1), m.Generation)
			require.Len(t, m.Volumes, 1)
			require.Equal(t, "batches-00000256.00000256.json", m.Volumes[0].File)
			require.NoError(t, e.Check())
		})
	}
}
