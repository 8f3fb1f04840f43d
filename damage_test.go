package evpack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// truncateHalf cuts file name to half its size.
func truncateHalf(t *testing.T, name string) {
	t.Helper()
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(name, fi.Size()/2))
}

// truncateToMeta cuts bbolt file name to its two meta pages (of the
// page size bbolt took when it made the file: the machine's): every other
// page it reads is past the end. (Cut to half, a file whose current pages
// all lie in the first half, as bleve's persister may leave them, still
// opens.)
func truncateToMeta(t *testing.T, name string) {
	t.Helper()
	fi, err := os.Stat(name)
	require.NoError(t, err)
	size := int64(2 * os.Getpagesize())
	require.Greater(t, fi.Size(), size, "%s holds no page past its meta pages", name)
	require.NoError(t, os.Truncate(name, size))
}

// TestTruncatedBoltFile: one partition's bleve root file (store/root.bolt)
// cut to its meta pages. bbolt asserts (panics) on such a file; a query that
// reads the partition gets ErrCorrupt naming its directory instead of the
// process dying, a query of another tenant is still answered as before,
// and Check fails with ErrCorrupt naming the partition.
func TestTruncatedBoltFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := partIndex(t, dir, 3)
	want := partPacks(t, e)
	require.NoError(t, e.Close())

	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	victim := parts[len(parts)-1]
	truncateToMeta(t, filepath.Join(victim, "store", "root.bolt"))

	e, err = Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err, "Open reads no partition (the checkpoint's catalog)")
	defer e.Close()
	var failed, answered int
	for _, tenant := range partTenants {
		for day := -1; day <= 190; day += 11 {
			q := crashWords[0] + " " + crashWords[3] + " " + crashWords[11]
			p, err := e.Query(ctx, Request{Question: q, AsOf: partDay(day), Tenant: tenant, K: 6, Generation: 3})
			if err != nil {
				require.ErrorIs(t, err, ErrCorrupt, "tenant %q day %d", tenant, day)
				require.Contains(t, err.Error(), filepath.Base(victim), "the error names the partition")
				failed++
				continue
			}
			require.Equal(t, string(want[keyOfPack(tenant, day, 0, 3)]), string(p.Bytes()), "tenant %q day %d", tenant, day)
			answered++
		}
	}
	require.Positive(t, failed, "some query read the damaged partition")
	require.Positive(t, answered, "the other partitions are answered")
	err = e.Check()
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, retrieve.ErrDamaged)
	require.Contains(t, err.Error(), filepath.Base(victim))
	t.Logf("%d queries failed with ErrCorrupt, %d answered as before; check: %v", failed, answered, err)
}

// keyOfPack is partPacks's key of a pack.
func keyOfPack(tenant string, day, qi int, gen int64) string {
	return fmt.Sprintf("%q day %d q%d gen %d", tenant, day, qi, gen)
}

// TestRebuildLexical: the lexical index of the partition fixture (facts
// and a purge included), one partition's root file truncated and another
// partition's directory removed, rebuilt from the batch files: the index
// opens, passes Check, and gives every pack (each tenant, day, question and
// generation) byte for byte as before the damage; the purged texts are in
// no file, and nothing of the old index is left beside the new one.
func TestRebuildLexical(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := partIndex(t, dir, 4)
	want := partPacks(t, e)
	require.NoError(t, e.Close())
	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.Greater(t, len(parts), 2)
	truncateHalf(t, filepath.Join(parts[0], "store", "root.bolt"))
	require.NoError(t, os.RemoveAll(parts[1]))
	_, err = Open(dir, Options{PartitionDays: partFixtureDays})
	require.ErrorIs(t, err, ErrCorrupt, "a partition the catalog names is missing")

	n, err := RebuildLexical(ctx, dir, Options{})
	require.NoError(t, err)
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	m := e.store.Manifest()
	require.Equal(t, uint64(m.Docs-m.Purged), n)
	require.NoError(t, e.Check())
	require.Equal(t, want, partPacks(t, e))
	for _, id := range []string{"base-00", "base-05", "more-06"} {
		require.Empty(t, grepDir(t, dir, partText(id)), "purged chunk %s", id)
	}
	left, err := filepath.Glob(filepath.Join(dir, ".lexical*"))
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestFirstCommitDamagedPartition: an index that never committed, whose
// lexical directory holds a partition bleve cannot open (what a power cut
// during the first commit can leave: TestPowerCut met one whose newest
// snapshot named a lost segment, its older one no mapping). Nothing in it
// was ever the index's, so Open makes the lexical directory again: it opens
// at generation 0, passes Check, and takes its first commit.
func TestFirstCommitDamagedPartition(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, partIndex(t, src, 1).Close())
	parts, err := filepath.Glob(filepath.Join(src, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)

	dir := t.TempDir()
	e, err := Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	victim := filepath.Join(dir, storage.LexicalDir, filepath.Base(parts[0]))
	require.NoError(t, os.CopyFS(victim, os.DirFS(parts[0])))
	truncateToMeta(t, filepath.Join(victim, "store", "root.bolt"))

	e, err = Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err, "a partition of an index that never committed")
	defer e.Close()
	require.Zero(t, e.st.Gen)
	require.NoError(t, e.Check())
	_, err = os.Stat(victim)
	require.ErrorIs(t, err, os.ErrNotExist, "the damaged partition is gone")
	require.NoError(t, partSteps()[0].run(context.Background(), e))
	require.EqualValues(t, 1, e.st.Gen)
	require.NoError(t, e.Check())
}
