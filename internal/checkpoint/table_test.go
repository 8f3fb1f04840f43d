package checkpoint

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindWithEqualKeys looks up every chunk of a table whose ID order has
// long runs of equal keys, across fences: BLAKE3 keys of real IDs do not
// collide, so the keys here are made to (findKey takes them). Each ID must
// be found at its row, and an ID that is not there, with a key that is or
// is not, must not be.
func TestFindWithEqualKeys(t *testing.T) {
	const n = 7*fenceEvery + 5
	key := func(id string) uint64 { return uint64(len(id)%3+1) * 10 }
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("%s%d", "cccc"[:i%4], (i*7919)%1000))
	}
	var rows, arena, order []byte
	for _, id := range ids {
		row := make([]byte, rowSize)
		binary.LittleEndian.PutUint32(row, uint32(len(arena)))
		binary.LittleEndian.PutUint32(row[4:], uint32(len(id)))
		rows, arena = append(rows, row...), append(arena, id...)
	}
	byKey := make([]int, n)
	for i := range byKey {
		byKey[i] = i
	}
	slices.SortFunc(byKey, func(a, b int) int {
		return cmp.Or(cmp.Compare(key(ids[a]), key(ids[b])), strings.Compare(ids[a], ids[b]))
	})
	var fences []uint64
	for k, r := range byKey {
		order = binary.LittleEndian.AppendUint32(order, uint32(r))
		order = binary.LittleEndian.AppendUint64(order, key(ids[r]))
		if k%fenceEvery == 0 {
			fences = append(fences, key(ids[r]))
		}
	}
	checked := func(data []byte, block int) section {
		s := section{data: data, length: len(data), block: block, done: make([]atomic.Bool, (len(data)+block-1)/block)}
		for i := range s.done {
			s.done[i].Store(true)
		}
		return s
	}
	tbl := &Table{n: n, fences: fences, name: "test",
		rows: checked(rows, rowsPerBlock*rowSize), byID: checked(order, orderPerBlock*orderSize), ids: checked(arena, block)}
	spans := 0 // fences inside a run of equal keys
	for k := fenceEvery; k < n; k += fenceEvery {
		if key(ids[byKey[k-1]]) == key(ids[byKey[k]]) {
			spans++
		}
	}
	require.Greater(t, spans, 1, "runs of equal keys go past fences")
	for i, id := range ids {
		got, _, ok := tbl.findKey(id, key(id))
		require.True(t, ok, "chunk %q", id)
		require.Equal(t, i, got, "chunk %q", id)
	}
	for _, c := range []struct {
		name, id string
		key      uint64
	}{
		{"an absent ID whose key is in a run", "cc-absent", 20},
		{"an absent ID whose key is the first", "x", 10},
		{"a key below every key", "x", 0},
		{"a key between two runs", "x", 15},
		{"a key above every key", "x", 99},
	} {
		_, _, ok := tbl.findKey(c.id, c.key)
		require.False(t, ok, c.name)
	}
	require.NoError(t, tbl.Err())
}
