package evpack

import (
	"testing"

	"github.com/evpack/evpack/rerank"
	"github.com/stretchr/testify/require"
)

// TestOptionsEqualityAsDocumented holds Options' doc to what == and String
// do: plug-ins compare by identity under ==, by what they name in String.
func TestOptionsEqualityAsDocumented(t *testing.T) {
	a, b := Options{Reranker: rerank.DefaultArithmetic()}, Options{Reranker: rerank.DefaultArithmetic()}
	require.False(t, a == b, "two separately made rerankers are two plug-ins under ==")
	require.Equal(t, a.String(), b.String(), "and one configuration by their names")
	require.True(t, Options{K: 5} == Options{K: 5}, "plain fields compare by value")
	require.NotEqual(t, Options{K: 5}.String(), Options{K: 6}.String())
}
