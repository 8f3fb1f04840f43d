package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
)

// TestWriteAheadFreesItsSections: a checkpoint written ahead makes its
// body's six sections outside the heap and has freed them all once its
// writer returns, the file written; the file is the bytes Checkpoint gives.
func TestWriteAheadFreesItsSections(t *testing.T) {
	st := rowsState(t, 300)
	lex := testLexical(t)
	d, err := storage.Open(t.TempDir(), storage.Options{Create: true})
	require.NoError(t, err)
	defer d.Close()
	a := WriteAhead(d, lex, st, Then{})
	a.Wait()
	require.NoError(t, a.err)
	n, held := a.sc.Made()
	require.Equal(t, [2]int{6, 0}, [2]int{n, held}, "sections made in the scratch, bytes still held")
	want, err := Checkpoint(st, lex, func([]checkpoint.Doc) ([]byte, error) { return st.Catalog, nil })
	require.NoError(t, err)
	sum, err := checkpoint.Sum(want.Head())
	require.NoError(t, err)
	require.Equal(t, sum, a.sum)
	require.NoError(t, a.Drop())
}
