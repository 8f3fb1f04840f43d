package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKnownAtOfYearOneIsNotTheLatest: known_at=0001-01-01T00:00:00Z is
// Go's zero time, which a Request reads as "the latest". It must be refused
// as any instant before the supported years is, never answered with the
// latest pack.
func TestKnownAtOfYearOneIsNotTheLatest(t *testing.T) {
	s := start(t, 16<<20)
	ok := "/pack?q=retention&as_of=2026-01-15"
	r := s.must(t, "GET", ok+"&known_at=0500-01-01T00:00:00Z", acmeToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, `known_at "0500-01-01T00:00:00Z": want an instant in the years 1000 to 9999`, r.errorText(t))
	for _, at := range []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00+00:00"} {
		r := s.must(t, "GET", ok+"&known_at="+strings.ReplaceAll(at, "+", "%2B"), acmeToken, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "known_at %s answered: %.200s", at, r.body)
		require.Equal(t, `known_at "`+at+`": want an instant in the years 1000 to 9999`, r.errorText(t))
	}
}
