package state

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// TestCloneSharesTermCountsUntilWritten: a copy of a tenant's figures reads
// the term counts of the figures it was copied from until it writes them:
// a fact leaves them shared; a chunk copies them first, and the figures
// copied from are left as they were (a purge: the test below).
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

// TestPurgeLeavesItsParentsTermCounts: a purge after a commit of facts
// alone (whose figures still share the term counts of the commit before
// it) drops the purged chunk's terms from its own counts, and neither
// committed state it extends sees them change.
func TestPurgeLeavesItsParentsTermCounts(t *testing.T) {
	lex := testLexical(t)
	c := testChunk("art-1", "acme", "d", "1", "capital buffer", 18000, -1)
	chunks := extend(t, NewState(), 1, time.Unix(0, 0), []*evidence.Chunk{c}, []Analyzed{Analyze(lex, nil, nil, c.Text)}, nil)
	f := &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: c.ID, End: asof.DateFromDays(18100), Anchor: time.Unix(0, 0)}
	facts := extend(t, chunks, 2, time.Unix(60, 0), nil, nil, []*evidence.Fact{f})
	lexDF, rrDF := maps.Clone(facts.Tenants["acme"].LexDF), maps.Clone(facts.Tenants["acme"].RerankDF)
	require.Len(t, lexDF, 2, "capital, buffer")
	require.NotEmpty(t, rrDF)

	purged := facts.Purge(3, time.Unix(120, 0), []string{c.ID}, "withdrawn", lex, nil)
	for term, s := range purged.Tenants["acme"].LexDF {
		require.Zero(t, s.at(3), "term %q still counted after the purge", term)
	}
	for _, st := range []*State{chunks, facts} {
		require.Equal(t, lexDF, st.Tenants["acme"].LexDF, "generation %d: the purge wrote its lexical counts", st.Gen)
		require.Equal(t, rrDF, st.Tenants["acme"].RerankDF, "generation %d: the purge wrote its reranker counts", st.Gen)
	}
}
