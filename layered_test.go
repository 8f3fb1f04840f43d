package evpack

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// TestCommitsAfterOpenKeepTheRows (issue 30): after Open, commits of
// chunks and of facts extend the state read from the checkpoint as it is,
// however they fall: a new document, chunks joining a stored document
// (before its first chunk, after its last, and one whose only stored chunk
// was purged), a retraction of a stored chunk, a batch of both, and a chunk
// joining a document committed since Open. The checkpoint stays
// (state.PlanCheckpoint), and the state holds in memory exactly the
// chunks committed since and those of the stored documents they joined. It
// answers every request, pinned ones included, byte for byte as an engine
// on a copy of the index does that built its state from the batch files
// before the same commits, and so does the index opened again (Open adds
// the generations after the checkpoint to it), then after one more commit.
// Check runs after each commit and at the end on both: it compares the
// checkpoint with the one the batch files give at its generation.
func TestCommitsAfterOpenKeepTheRows(t *testing.T) {
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	reqs := lazyHistory(t, dirA)
	lazyHistory(t, dirB)
	rows, err := Open(dirA, Options{})
	require.NoError(t, err)
	checked(t, rows)
	full, err := Open(dirB, Options{})
	require.NoError(t, err)
	checked(t, full)
	require.Nil(t, fullState(t, full).Rows, "the peer holds every chunk in memory")
	require.NotNil(t, rows.st.Rows)

	joining := func(id, doc, text string) connectors.Record {
		r := vocabularyRecords(t, "acme", "j", 1, uint64(len(id)))[0]
		r.Chunk.ID, r.Chunk.DocID, r.Chunk.Text = id, doc, text+" "+r.Chunk.Text
		return r
	}
	retract := func(id string) connectors.Record {
		return connectors.Record{Fact: &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: id, End: asof.MustDate("2026-03-01"), Anchor: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}, By: "test"}
	}
	commits := []struct {
		name   string
		recs   []connectors.Record
		copied []string // the stored chunks of the documents the commit's chunks join
	}{
		{"a new document", vocabularyRecords(t, "acme", "n", 3, 7), nil},
		{"chunks joining a stored document, before and after its chunk", []connectors.Record{
			joining("a-0001-0", "a-doc-1", "quernstone before"), joining("a-0001-9", "a-doc-1", "quernstone after")}, []string{"a-0001"}},
		{"a chunk joining a document whose stored chunk was purged", []connectors.Record{joining("a-0000-1", "a-doc-0", "quernstone purged")}, []string{"a-0000"}},
		{"a retraction of a stored chunk", []connectors.Record{retract("a-0002")}, nil},
		{"chunks and a fact on a chunk copied out before", append(vocabularyRecords(t, "globex", "m", 2, 9), retract("a-0001-9")), nil},
		{"a chunk joining a document a commit since Open made", []connectors.Record{joining("n-0000-1", "n-doc-0", "quernstone newer")}, nil},
	}
	ckpt := rows.store.Manifest().Checkpoint
	inMemory := []string{}
	for _, c := range commits {
		for _, e := range []*Engine{rows, full} {
			_, err := e.Ingest(ctx, connectors.Records(c.recs), IngestOptions{})
			require.NoError(t, err, c.name)
		}
		for _, r := range c.recs {
			if r.Fact == nil {
				inMemory = append(inMemory, r.Chunk.ID)
			}
		}
		inMemory = append(inMemory, c.copied...)
		st := rows.st
		require.NotNil(t, st.Rows, "%s: the state is still the rows'", c.name)
		require.ElementsMatch(t, inMemory, slices.Collect(maps.Keys(st.Chunks)), "%s: in memory", c.name)
		require.Equal(t, ckpt, rows.store.Manifest().Checkpoint, "%s: the checkpoint stays", c.name)
		require.Equal(t, full.st.Gen, st.Gen)
		for _, tenant := range []string{"", "acme", "globex"} {
			reqs = append(reqs,
				Request{Question: "quernstone", AsOf: asof.MustDate("2026-06-01"), Tenant: tenant, Generation: st.Gen},
				Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: tenant, Generation: st.Gen})
		}
		require.Equal(t, packsOf(t, full, reqs), packsOf(t, rows, reqs), c.name)
		require.NoError(t, rows.Check(), c.name)
	}
	want := packsOf(t, full, reqs)
	require.NoError(t, rows.Close())
	rows, err = Open(dirA, Options{})
	require.NoError(t, err)
	checked(t, rows)
	require.NotNil(t, rows.st.Rows)
	require.ElementsMatch(t, inMemory, slices.Collect(maps.Keys(rows.st.Chunks)), "opened again: the generations after the checkpoint added to it")
	require.Equal(t, want, packsOf(t, rows, reqs), "opened again")
	more := vocabularyRecords(t, "globex", "after", 2, 10)
	for _, e := range []*Engine{rows, full} {
		_, err := e.Ingest(ctx, connectors.Records(more), IngestOptions{})
		require.NoError(t, err)
	}
	reqs = append(reqs, Request{Question: "records retention client transactions", AsOf: asof.MustDate("2026-01-15"), Tenant: "globex"})
	require.Equal(t, packsOf(t, full, reqs), packsOf(t, rows, reqs), "a commit after the reopen")

	p, err := rows.Query(ctx, Request{Question: "quernstone", AsOf: asof.MustDate("2026-06-01"), Tenant: "acme"})
	require.NoError(t, err)
	var cited []string
	for _, c := range p.Citations {
		cited = append(cited, c.ChunkID)
	}
	require.Subset(t, cited, []string{"a-0001-0", "n-0000-1"}, "the joining chunks are found")
}
