package evpack

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// TestChunkReadersAgree: the two chunkReaders, over the maps of a state
// built from the batch files and over the rows of the checkpoint Open
// reads, answer every chunk of lazyHistory's index the same (generation,
// tenant, the chunk up to each generation, its document), and neither
// knows a chunk that is not there. The chunks read from the rows are the
// same again after every later read: each line is read into a buffer the
// next read reuses (RowTable.lines), so a chunk must keep none of it.
func TestChunkReadersAgree(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	full := fullOf(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	mem, rows := full.Reader(), e.st.Reader()
	require.IsType(t, state.MemChunks{}, mem)
	require.IsType(t, state.Layered{}, rows)
	ids := evidence.SortedKeys(full.Chunks)
	require.NotEmpty(t, ids)
	type readChunk struct {
		c    *evidence.Chunk
		want evidence.Chunk
	}
	var read []readChunk
	for _, id := range append(ids, "no-such-chunk") {
		g1, ok1 := mem.CommittedGen(id)
		g2, ok2 := rows.CommittedGen(id)
		require.Equal(t, []any{g1, ok1}, []any{g2, ok2}, "chunk %q: generation", id)
		t1, ok1 := mem.TenantOf(id)
		t2, ok2 := rows.TenantOf(id)
		require.Equal(t, []any{t1, ok1}, []any{t2, ok2}, "chunk %q: tenant", id)
		for gen := range full.Gen + 1 {
			for _, cached := range []bool{false, true} {
				c1, ok1, err1 := mem.ReadUpTo(id, gen, cached)
				c2, ok2, err2 := rows.ReadUpTo(id, gen, cached)
				require.NoError(t, err1)
				require.NoError(t, err2)
				require.Equal(t, ok1, ok2, "chunk %q up to %d", id, gen)
				require.Equal(t, c1, c2, "chunk %q up to %d", id, gen)
				if ok2 && !cached {
					read = append(read, readChunk{c2, *c1})
				}
			}
		}
		_, okAll, err := rows.ReadUpTo(id, math.MaxInt64, false)
		require.NoError(t, err)
		require.Equal(t, id != "no-such-chunk", okAll)
		d1, gen1, ok1 := mem.DocOf(id)
		d2, gen2, ok2 := rows.DocOf(id)
		require.Equal(t, []any{gen1, ok1}, []any{gen2, ok2}, "chunk %q: document", id)
		if !ok1 {
			continue
		}
		require.True(t, d2.Fill(0, len(d2.IDs)))
		require.Equal(t, d1.IDs, d2.IDs, "chunk %q: document", id)
		require.Equal(t, d1.Pos, d2.Pos, "chunk %q: place", id)
		for k := range d1.IDs {
			require.Equal(t, d1.Gens(k), d2.Gens(k), "chunk %q: document chunk %d", id, k)
			require.Equal(t, full.TermsOf(d1.Nums[k]), e.st.TermsOf(d2.Nums[k]), "chunk %q: document chunk %d", id, k)
		}
	}
	require.NotEmpty(t, read)
	for _, r := range read {
		require.Equal(t, r.want, *r.c, "chunk %q after later reads", r.want.ID)
	}
	require.NoError(t, e.st.Rows.Err())
}
