package state

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
)

// TestCloneSharesTermCountsUntilWritten: a copy of a tenant's figures reads
// the term counts of the figures it was copied from until it writes them:
// a fact leaves them shared; a chunk, or a purge's drop, copies them first,
// and the figures copied from are left as they were.
func TestCloneSharesTermCountsUntilWritten(t *testing.T) {
	orig := newTenantStats()
	orig.add(1, &evidence.Chunk{ID: "a"}, []string{"x"}, []string{"r"}, 3, 1)
	want := map[string]Series{"x": {{Gen: 1, N: 1}}}
	require.Equal(t, want, orig.LexDF)
	samemap := func(a, b map[string]Series) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}

	fact := orig.clone()
	fact.addFact(2, &evidence.Fact{ChunkID: "a"})
	require.True(t, samemap(orig.LexDF, fact.LexDF), "a fact copied the lexical counts")
	require.True(t, samemap(orig.RerankDF, fact.RerankDF), "a fact copied the reranker counts")
	again := fact.clone() // a copy of a copy still reads the first figures' counts
	require.True(t, samemap(orig.LexDF, again.LexDF))

	chunk := fact.clone()
	chunk.add(3, &evidence.Chunk{ID: "b"}, []string{"x", "y"}, []string{"r"}, 2, 1)
	require.False(t, samemap(orig.LexDF, chunk.LexDF))
	require.Equal(t, map[string]Series{"x": {{Gen: 1, N: 1}, {Gen: 3, N: 2}}, "y": {{Gen: 3, N: 1}}}, chunk.LexDF)
	require.Equal(t, map[string]Series{"r": {{Gen: 1, N: 1}, {Gen: 3, N: 2}}}, chunk.RerankDF)
	require.Equal(t, want, orig.LexDF, "the chunk changed the figures it was copied from")
	require.Equal(t, want, fact.LexDF)
	require.Equal(t, map[string]Series{"r": {{Gen: 1, N: 1}}}, orig.RerankDF)
}
