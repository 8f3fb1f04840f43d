package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBeforeFirstCommitSaysWhatWasWrong: the error names what was wrong,
// without the sentinels it wraps (README: "An error answers {"error": "..."}
// with what was wrong").
func TestBeforeFirstCommitSaysWhatWasWrong(t *testing.T) {
	s := start(t, 16<<20)
	r := s.must(t, "GET", "/pack?q=retention&as_of=2026-01-15&known_at=2000-01-01T00:00:00Z", acmeToken, nil)
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	msg := r.errorText(t)
	require.True(t, strings.HasPrefix(msg, "known-at 2000-01-01T00:00:00Z is before the index's first commit (the first was committed at "), msg)
	require.NotContains(t, msg, "evpack:")
}
