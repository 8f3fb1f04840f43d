package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// readChunk is what a request reads of one chunk through its document's
// rows: the document's chunk IDs, and the chunk's terms and generation.
type readChunk struct {
	ids  []string
	nums []uint32
	gen  int64
}

// readThrough reads chunk id's document through rows' cache as Scope.Place
// does (DocOf, then Fill), here the whole document.
func readThrough(t *testing.T, rows *RowTable, id string) (readChunk, *docRows) {
	t.Helper()
	v, gen, ok := rows.DocOf(id)
	require.True(t, ok, "chunk %s", id)
	require.True(t, v.Fill(0, len(v.IDs)), "chunk %s", id)
	return readChunk{ids: slices.Clone(v.IDs), nums: slices.Clone(v.Nums[v.Pos]), gen: gen}, v.rows
}

// TestDocRowsCacheBounded: the rows requests read stay under the cache's
// bound whatever they read and in whatever order, what is read through it
// is what the table holds whether or not it was dropped in between, a
// document read again at once, or read often, is not read again, and its
// byte count is the sum of what its documents hold. Under the default
// bound a small table's documents all stay.
func TestDocRowsCacheBounded(t *testing.T) {
	st := rowsState(t, 600)
	rows := st.Rows
	var ids []string
	for i := range rows.Len() {
		w, ok := rows.Row(i)
		require.True(t, ok)
		id, ok := rows.ID(w)
		require.True(t, ok)
		ids = append(ids, id)
	}
	want := map[string]readChunk{}
	for _, id := range ids {
		want[id], _ = readThrough(t, rows, id)
	}
	docs, _ := rows.docs.held()
	require.Equal(t, 600, docs, "under the default bound this small table's documents all stay")

	// A bound of a few documents a shard.
	const bound = 16 * 2 * 1000
	// Above what any document here holds (three chunks):
	// what a shard may hold past its share, the document it just made.
	largest := docRowsSize(3) + 3*rowSize(ids[len(ids)-1])
	seed := uint64(20261206)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rows.docs = rowCache{max: bound}
	for pass := range 3 {
		order := slices.Clone(ids)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, id := range order {
			got, d := readThrough(t, rows, id)
			require.Equal(t, want[id], got, "pass %d, chunk %s", pass, id)
			_, again := readThrough(t, rows, id)
			require.Same(t, d, again, "a document read again at once is the one the cache holds")
			n, held := rows.docs.held()
			require.LessOrEqual(t, held, int64(bound)+rowCacheShards*largest, "pass %d: %d documents held", pass, n)
			require.Equal(t, heldSum(&rows.docs), held, "the count is what the documents hold")
		}
	}
	n, _ := rows.docs.held()
	require.Less(t, n, 600/2, "the bound dropped documents")

	// A document read between every two others is never dropped (the
	// others read once each: a sweep finds it used, and passes it at most
	// once before it is read again), where a cache that drops the oldest
	// first would drop it at its turn.
	rows.docs = rowCache{max: 16 * 8000}
	hot := ids[len(ids)/2]
	_, hotRows := readThrough(t, rows, hot)
	for _, id := range ids {
		readThrough(t, rows, id)
		_, h := readThrough(t, rows, hot)
		require.Same(t, hotRows, h, "after chunk %s: the document read between every two was dropped", id)
	}

	// Readers on several goroutines share it and read what the table holds.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range 4 {
		order := slices.Clone(ids)
		rand.New(rand.NewPCG(seed, uint64(g+2))).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		wg.Go(func() {
			for _, id := range order {
				v, gen, ok := rows.DocOf(id)
				if !ok || !v.Fill(0, len(v.IDs)) {
					errs[g] = fmt.Errorf("chunk %s: not read", id)
					return
				}
				w := want[id]
				if !slices.Equal(w.ids, v.IDs) || !slices.Equal(w.nums, v.Nums[v.Pos]) || w.gen != gen {
					errs[g] = fmt.Errorf("chunk %s: read %v %v %d, the table holds %v %v %d", id, v.IDs, v.Nums[v.Pos], gen, w.ids, w.nums, w.gen)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// heldSum is the sum of what c's documents hold.
func heldSum(c *rowCache) int64 {
	var sum int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, d := range s.slots {
			if d != nil {
				sum += d.size()
			}
		}
		s.mu.Unlock()
	}
	return sum
}

// held returns the documents the cache holds and what they hold, in
// bytes, as charged.
func (c *rowCache) held() (docs int, bytes int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		docs += len(s.at)
		bytes += s.bytes.Load()
		s.mu.Unlock()
	}
	return docs, bytes
}
