package evpack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/storage"
	"github.com/stretchr/testify/require"
)

// committedEntry returns the batch file of generation gen of the index in
// dir, as its commit wrote it: the log entry a replica applies.
func committedEntry(t *testing.T, dir string, gen int64) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen)))
	require.NoError(t, err)
	return raw
}

// requireSameFiles checks that the two index directories hold the same
// MANIFEST.json, the same files under chunks/ and the same checkpoint,
// byte for byte.
func requireSameFiles(t *testing.T, writer, replica, when string) {
	t.Helper()
	read := func(dir, name string) []byte {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, when)
		return raw
	}
	list := func(dir string) []string {
		ents, err := os.ReadDir(filepath.Join(dir, storage.ChunksDir))
		require.NoError(t, err, when)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	require.Equal(t, string(read(writer, storage.ManifestName)), string(read(replica, storage.ManifestName)), "%s: MANIFEST.json", when)
	names := list(writer)
	require.Equal(t, names, list(replica), "%s: the files under chunks/", when)
	for _, n := range names {
		require.Equal(t, read(writer, filepath.Join(storage.ChunksDir, n)), read(replica, filepath.Join(storage.ChunksDir, n)), "%s: chunks/%s", when, n)
	}
	ckpts, err := filepath.Glob(filepath.Join(writer, "state-*.bin"))
	require.NoError(t, err)
	require.Len(t, ckpts, 1, when)
	name := filepath.Base(ckpts[0])
	require.Equal(t, read(writer, name), read(replica, name), "%s: %s", when, name)
}

// TestApplyEntriesToAnEmptyDirectory commits the test corpus, two ALFRED
// fetches (the second ends a vintage: a fact), a tenant's chunk and its
// purge, and applies each generation's entry, as committed, to an index in
// a second, empty directory: after every generation the two directories
// hold the same MANIFEST.json, batch and analysis files and checkpoint, byte
// for byte, and answer every golden request and a request at every
// generation with the same pack.
func TestApplyEntriesToAnEmptyDirectory(t *testing.T) {
	ctx := context.Background()
	wdir, rdir := t.TempDir(), t.TempDir()
	w := checked(t, mustOpen(t, wdir))
	r := checked(t, mustOpen(t, rdir))
	// The writer's clock is a year behind and ticks a minute a commit: a
	// replica that took commit times from its own clock would differ.
	tick := time.Now().AddDate(-1, 0, 0)
	w.now = func() time.Time { tick = tick.Add(time.Minute); return tick }
	first, second := gdpFetches(t)
	steps := []func() error{}
	for _, c := range corpusConnectors() {
		steps = append(steps, func() error { _, err := w.Ingest(ctx, c, IngestOptions{}); return err })
	}
	for _, recs := range [][]connectors.Record{first, second, {secretRecord(t)}} {
		steps = append(steps, func() error { _, err := w.Ingest(ctx, connectors.Records(recs), IngestOptions{}); return err })
	}
	steps = append(steps, func() error { _, err := w.Purge(ctx, []string{"memo-roe"}, "erasure request"); return err })
	gdp := Request{Question: "GDP growth 2020Q1 percent", AsOf: asof.MustDate("2020-07-15"), K: 3}
	for i, step := range steps {
		gen := int64(i + 1)
		require.NoError(t, step(), "writer, generation %d", gen)
		require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, gen)), "replica, generation %d", gen)
		when := fmt.Sprintf("after generation %d", gen)
		requireSameFiles(t, wdir, rdir, when)
		for g := int64(1); g <= gen; g++ {
			req := gdp
			req.Generation = g
			pw, err := w.Query(ctx, req)
			require.NoError(t, err)
			pr, err := r.Query(ctx, req)
			require.NoError(t, err)
			require.Equal(t, string(pw.Bytes()), string(pr.Bytes()), "%s: the GDP pack at generation %d", when, g)
		}
	}
	require.Equal(t, packsFor(t, w), packsFor(t, r), "the golden requests")
	wh, err := w.History()
	require.NoError(t, err)
	rh, err := r.History()
	require.NoError(t, err)
	require.Equal(t, wh, rh, "the history: commit times come from the entries")

	// A replica reopened from its own files is the same index again.
	require.NoError(t, r.Close())
	r2 := checked(t, mustOpen(t, rdir))
	require.Equal(t, packsFor(t, w), packsFor(t, r2))
}

// TestApplyEntryRefusals: an entry that does not follow the index's head
// (a gap, the same generation again, a broken chain) and an edited one are
// refused, and change nothing; a batch a later purge rewrote is applied as
// the purge left it, and the purge then gives the writer's files.
func TestApplyEntryRefusals(t *testing.T) {
	ctx := context.Background()
	wdir, rdir := t.TempDir(), t.TempDir()
	w := checked(t, mustOpen(t, wdir))
	r := checked(t, mustOpen(t, rdir))
	ingestCorpus(t, w) // generations 1 and 2
	other := checked(t, mustOpen(t, t.TempDir()))
	_, err := other.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	_, err = other.Ingest(ctx, connectors.Records(corpusRecords(t)), IngestOptions{})
	require.NoError(t, err)

	e1, e2 := committedEntry(t, wdir, 1), committedEntry(t, wdir, 2)
	require.ErrorIs(t, applyBody(ctx, r, e2), evlog.ErrGap, "generation 2 before 1")
	require.NoError(t, applyBody(ctx, r, e1))
	require.ErrorIs(t, applyBody(ctx, r, e1), evlog.ErrGap, "generation 1 again")
	err = applyBody(ctx, r, committedEntry(t, other.dir, 2))
	require.ErrorIs(t, err, evlog.ErrChain, "another index's generation 2 links to another generation 1")
	require.ErrorIs(t, err, ErrCorrupt)
	edited := slices.Clone(e2)
	edited[len(edited)/2] ^= 1
	require.ErrorIs(t, applyBody(ctx, r, edited), ErrCorrupt, "a flipped byte breaks the batch's seal")
	h, err := r.History()
	require.NoError(t, err)
	require.Len(t, h, 1, "nothing refused was committed")
	require.NoError(t, applyBody(ctx, r, e2))

	_, err = w.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	e3 := committedEntry(t, wdir, 3)
	_, err = w.Purge(ctx, []string{"memo-roe"}, "erasure request")
	require.NoError(t, err)
	redacted, err := os.ReadFile(filepath.Join(wdir, storage.ChunksDir, storage.RedactedName(3, 4)))
	require.NoError(t, err)
	require.ErrorIs(t, applyBody(ctx, r, redacted), ErrCorrupt, "a rewritten batch under its own checksum: the next generation would not link")
	require.NoError(t, r.applyEntry(ctx, redacted, evidence.Sum(e3)), "generation 3 as the purge rewrote it, under its checksum as committed")
	require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, 4)))
	requireSameFiles(t, wdir, rdir, "after the purge, applied to a replica that got generation 3 rewritten")

	mem := memEngine(t, Options{})
	require.ErrorIs(t, applyBody(ctx, mem, e1), ErrBadOptions, "an index in memory keeps no log")
}

func mustOpen(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	return e
}

// applyBody applies a batch as committed: its checksum is its own.
func applyBody(ctx context.Context, e *Engine, body []byte) error {
	return e.applyEntry(ctx, body, evidence.Sum(body))
}
