package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMalformedQueryIsRefused: a query pair Go cannot parse (a semicolon, a
// bad percent escape) must be 400, never dropped so that the pack answers
// another request (here: the default k instead of the k asked).
func TestMalformedQueryIsRefused(t *testing.T) {
	s := start(t, 16<<20)
	ok := "/pack?q=retention&as_of=2026-01-15"
	for _, path := range []string{
		ok + "&k=1;x",
		ok + "&k=%zz",
		ok + "&k=1&tenant=globex;",
		ok + "&%zz=1",
	} {
		r := s.must(t, "GET", path, acmeToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		require.Contains(t, r.errorText(t), "query: ", path)
	}
	r := s.must(t, "POST", "/verify?x=%zz", acmeToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Contains(t, r.errorText(t), "query: ")
}

// TestConflictingFiltersAreRefused: the same filter key twice must be 400,
// never a pack for one of the two values silently.
func TestConflictingFiltersAreRefused(t *testing.T) {
	s := start(t, 16<<20)
	r := s.must(t, "GET", "/pack?q=retention&as_of=2026-01-15&filter=kind=a&filter=kind=b", acmeToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, `filter "kind=b": key "kind" given twice`, r.errorText(t))
}
