package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDashDashEndsTheFlags: after "--" every argument is positional; only
// the first was, and the next that began with "-" was read as a flag
// ("flag provided but not defined"). A "--" that is a flag's value is
// still its value.
func TestDashDashEndsTheFlags(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, out, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--", "records", "-retention", "--k", "3")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "Question: records -retention --k 3\n")

	code, _, errs = runCLI(t, "purge", "--index", dir, "--reason", "erasure", "--", "-a", "-b")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, `purge: chunk "-a" is not committed`)

	// "--" as --reason's value, then the end of the flags, then an ID.
	code, _, errs = runCLI(t, "purge", "--index", dir, "--reason", "--", "--", "-a")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, `purge: chunk "-a" is not committed`)

	fs := newFlags("t", nil)
	fs.Bool("json", false, "")
	fs.String("tenant", "", "")
	for _, c := range []struct {
		consumed []string
		ended    bool
	}{
		{[]string{"--"}, true},
		{[]string{"--json", "--"}, true},     // a bool flag takes no value
		{[]string{"--tenant", "--"}, false},  // the tenant is "--"
		{[]string{"-tenant", "--"}, false},   // one dash names it too
		{[]string{"--tenant=x", "--"}, true}, // its value given with "="
		{[]string{"--tenant", "--", "--"}, true},
		{[]string{"x"}, false},
	} {
		require.Equal(t, c.ended, endedByDashes(fs, c.consumed), "%q", c.consumed)
	}
}
