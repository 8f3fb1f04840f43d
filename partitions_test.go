package evpack

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
)

// The lexical index's layout changes no pack: one bleve index, partitions of
// a day (every version of the statute its own) and the default partitions
// give the same bytes for every golden request, on disk and reopened.
func TestPartitionLayoutCannotChangeAPack(t *testing.T) {
	ctx := context.Background()
	recs := corpusRecords(t)
	packs := map[int64]map[string][]byte{}
	for _, days := range []int64{-1, 1, 0} {
		dir := t.TempDir()
		e, err := Open(dir, Options{PartitionDays: days})
		require.NoError(t, err)
		_, err = e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
		require.NoError(t, e.Close())
		e, err = Open(dir, Options{})
		require.NoError(t, err)
		checked(t, e)
		packs[days] = packsFor(t, e)
		parts, _ := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
		switch days {
		case -1:
			require.Empty(t, parts, "one index has no partitions")
		case 1:
			require.Greater(t, len(parts), 3, "a partition a day")
		}
	}
	require.Equal(t, packs[-1], packs[1], "one index against a partition a day")
	require.Equal(t, packs[-1], packs[0], "one index against the default partitions")
}

// A partition's summary decides which partitions a search reads, so an edited
// summary that no longer covers a document it holds (here: every document
// said to end before any began) is a problem Check reports, naming the
// document and the partition.
func TestEditedPartitionSummaryIsCaught(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())

	parts, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	idx, err := bleve.Open(parts[0])
	require.NoError(t, err)
	raw, err := idx.GetInternal([]byte("evpack.summary"))
	require.NoError(t, err)
	var sum map[string]any
	require.NoError(t, json.Unmarshal(raw, &sum))
	sum["max_end"], sum["max_to"] = -2_000_000, -2_000_000
	raw, err = json.Marshal(sum)
	require.NoError(t, err)
	require.NoError(t, idx.SetInternal([]byte("evpack.summary"), raw))
	require.NoError(t, idx.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	found := false
	for _, p := range rep.Problems {
		if strings.Contains(p, "summary does not cover it") && strings.Contains(p, filepath.Base(parts[0])) {
			found = true
		}
	}
	require.True(t, found, "problems: %q", rep.Problems)
}
