package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWrongMethodAndPathAnswerJSON: README: "An error answers
// {"error": "..."}". A wrong method or an unknown path answered net/http's
// text/plain "Method Not Allowed" / "404 page not found".
func TestWrongMethodAndPathAnswerJSON(t *testing.T) {
	s := start(t, 16<<20)
	for _, tc := range []struct {
		method, path string
		status       int
		allow, want  string
	}{
		{"POST", "/pack?q=x&as_of=2026-01-15", http.StatusMethodNotAllowed, "GET, HEAD", "method POST: /pack wants GET"},
		{"DELETE", "/pack", http.StatusMethodNotAllowed, "GET, HEAD", "method DELETE: /pack wants GET"},
		{"GET", "/verify", http.StatusMethodNotAllowed, "POST", "method GET: /verify wants POST"},
		{"GET", "/nope", http.StatusNotFound, "", `no such path "/nope": want /pack or /verify`},
		{"GET", "/pack/", http.StatusNotFound, "", `no such path "/pack/": want /pack or /verify`},
	} {
		for _, token := range []string{acmeToken, ""} {
			r := s.must(t, tc.method, tc.path, token, nil)
			require.Equal(t, tc.status, r.status, "%s %s: %s", tc.method, tc.path, r.body)
			require.Equal(t, tc.allow, r.header.Get("Allow"), "%s %s", tc.method, tc.path)
			require.Equal(t, tc.want, r.errorText(t), "%s %s", tc.method, tc.path)
		}
	}
}
