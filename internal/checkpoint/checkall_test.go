package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/resident"
	"github.com/evpack/evpack/internal/storage"
)

// everyRow reads every row, ID and term list of tbl, through reads.
func everyRow(t *testing.T, tbl *Table) []string {
	t.Helper()
	out := make([]string, tbl.Len())
	for i := range out {
		w, ok := tbl.Row(i)
		require.True(t, ok, "row %d: %v", i, tbl.Err())
		id, ok := tbl.ID(w)
		require.True(t, ok, "row %d: %v", i, tbl.Err())
		nums, ok := tbl.Nums(w)
		require.True(t, ok, "row %d: %v", i, tbl.Err())
		out[i] = fmt.Sprintf("%s %d %v %v", id, w.Gen, w.Hash[:4], nums)
	}
	return out
}

// sections returns tbl's sections by the names its errors give them.
func sectionsByName(tbl *Table) map[string]*section {
	return map[string]*section{"rows": &tbl.rows, "ID order": &tbl.byID, "chunk IDs": &tbl.ids,
		"reranker terms": &tbl.numSec, "document table": &tbl.docs, "document keys": &tbl.keys}
}

// checkedBlocks counts the blocks of tbl's sections checked, and all.
func checkedBlocks(tbl *Table) (checked, all int) {
	for _, s := range sectionsByName(tbl) {
		for i := range s.done {
			if s.done[i].Load() {
				checked++
			}
		}
		all += len(s.done)
	}
	return checked, all
}

// TestCheckAll: CheckAll checks every block of a checkpoint of 20,000
// chunks (some MiB), after which every read answers as it did before, and
// the pages it read are not left in the resident set; a block edited in
// the file under the mapping is found and named, and is the table's error
// after it (Err, on which a request fails); a done context stops it with nothing checked and nothing
// failed; a closed table has nothing left to check.
func TestCheckAll(t *testing.T) {
	in := synthetic(2_000, 7)
	path, sum, raw := writeSynthetic(t, in)
	decode := func(t *testing.T) *Table {
		t.Helper()
		tbl := decodeFile(t, path, sum, in)
		t.Cleanup(func() { tbl.Close() })
		return tbl
	}
	want := everyRow(t, decode(t))

	t.Run("every block", func(t *testing.T) {
		tbl := decode(t)
		require.Greater(t, len(tbl.body), 4*checkAllRun*block, "more than a few runs")
		require.NoError(t, tbl.CheckAll(context.Background()))
		checked, all := checkedBlocks(tbl)
		require.Equal(t, all, checked, "blocks checked")
		kib, ok, err := resident.KiB(tbl.body)
		require.NoError(t, err)
		if ok && runtime.GOOS == "linux" {
			// The pages at the runs' and the sections' edges may stay.
			require.Less(t, kib, len(tbl.body)>>10/4, "KiB of a body of %d KiB resident after CheckAll", len(tbl.body)>>10)
		}
		require.Equal(t, want, everyRow(t, tbl), "reads after CheckAll")
		require.NoError(t, tbl.Err())
	})

	t.Run("an edited block", func(t *testing.T) {
		tbl := decode(t)
		s := &tbl.ids
		blk := len(s.done) / 2
		at := int64(len(raw)-len(tbl.body)) + s.off + int64(blk*s.block) + 5
		file, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		b := []byte{raw[at] ^ 0x20}
		_, err = file.WriteAt(b, at)
		require.NoError(t, errors.Join(err, file.Close()))
		t.Cleanup(func() { // as it was, for the cases after
			file, err := os.OpenFile(path, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = file.WriteAt(raw[at:at+1], at)
			require.NoError(t, errors.Join(err, file.Close()))
		})
		err = tbl.CheckAll(context.Background())
		require.ErrorIs(t, err, storage.ErrCorrupt)
		require.ErrorContains(t, err, fmt.Sprintf("chunk IDs: block %d: checksum mismatch", blk))
		require.Equal(t, err, tbl.Err(), "what every request's reads answer after it")
		for name, sec := range sectionsByName(tbl) {
			if name == "rows" || name == "ID order" { // checked before the IDs
				require.True(t, sec.done[len(sec.done)-1].Load(), "the last block of the %s", name)
			}
		}
	})

	t.Run("a done context", func(t *testing.T) {
		tbl := decode(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, tbl.CheckAll(ctx), context.Canceled)
		checked, _ := checkedBlocks(tbl)
		require.Zero(t, checked)
		require.NoError(t, tbl.Err())
		require.Equal(t, want, everyRow(t, tbl))
	})

	t.Run("closed", func(t *testing.T) {
		tbl := decode(t)
		require.NoError(t, tbl.Close())
		require.NoError(t, tbl.CheckAll(context.Background()))
		require.NoError(t, tbl.Err())
	})
}
