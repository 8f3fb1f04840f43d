package evpack

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
)

// TestChunkReadersAgree: the two chunkReaders, over the maps of a state
// built from the batch files and over the rows of the checkpoint Open
// reads, answer every chunk of lazyHistory's index the same (generation,
// tenant, the chunk up to each generation, its document), and neither
// knows a chunk that is not there.
func TestChunkReadersAgree(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	full := fullOf(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NotNil(t, e.st.rows, "Open read the checkpoint")
	mem, rows := full.reader(), e.st.reader()
	require.IsType(t, memChunks{}, mem)
	require.IsType(t, &rowTable{}, rows)
	ids := evidence.SortedKeys(full.chunks)
	require.NotEmpty(t, ids)
	for _, id := range append(ids, "no-such-chunk") {
		g1, ok1 := mem.committedGen(id)
		g2, ok2 := rows.committedGen(id)
		require.Equal(t, []any{g1, ok1}, []any{g2, ok2}, "chunk %q: generation", id)
		t1, ok1 := mem.tenantOf(id)
		t2, ok2 := rows.tenantOf(id)
		require.Equal(t, []any{t1, ok1}, []any{t2, ok2}, "chunk %q: tenant", id)
		for gen := range full.gen + 1 {
			for _, cached := range []bool{false, true} {
				c1, ok1, err1 := mem.readUpTo(id, gen, cached)
				c2, ok2, err2 := rows.readUpTo(id, gen, cached)
				require.NoError(t, err1)
				require.NoError(t, err2)
				require.Equal(t, ok1, ok2, "chunk %q up to %d", id, gen)
				require.Equal(t, c1, c2, "chunk %q up to %d", id, gen)
			}
		}
		_, okAll, err := rows.readUpTo(id, math.MaxInt64, false)
		require.NoError(t, err)
		require.Equal(t, id != "no-such-chunk", okAll)
		d1, gen1, ok1 := mem.docOf(id)
		d2, gen2, ok2 := rows.docOf(id)
		require.Equal(t, []any{gen1, ok1}, []any{gen2, ok2}, "chunk %q: document", id)
		if !ok1 {
			continue
		}
		require.True(t, d2.fill(0, len(d2.ids)))
		require.Equal(t, d1.ids, d2.ids, "chunk %q: document", id)
		require.Equal(t, d1.pos, d2.pos, "chunk %q: place", id)
		for k := range d1.ids {
			require.Equal(t, d1.gens(k), d2.gens(k), "chunk %q: document chunk %d", id, k)
			require.Equal(t, full.termsOf(d1.nums[k]), e.st.termsOf(d2.nums[k]), "chunk %q: document chunk %d", id, k)
		}
	}
	require.NoError(t, e.st.rows.Err())
}
