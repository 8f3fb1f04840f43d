package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
)

// TestRefusedCommandsCreateNoIndex: an ingest or a follow refused before
// it commits anything leaves no index behind. Open, which creates one, ran
// before the sources were read and before the log was reached (an
// adversarial review, stop 79).
func TestRefusedCommandsCreateNoIndex(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	for _, c := range []struct{ conn, path string }{
		{"jsonl", missing + ".jsonl"}, {"statute", missing + ".json"}, {"files", missing}, {"fred", missing},
		{"edgar", missing}, // Glob found nothing in a missing root: a mistyped path ingested 0 records
	} {
		dir := filepath.Join(root, c.conn)
		code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", c.conn, c.path)
		require.Equal(t, 2, code, "--connector %s: %s", c.conn, errs)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "--connector %s: the refused ingest made %s", c.conn, dir)
	}
	dsn := "postgres://nobody@127.0.0.1:1/x?connect_timeout=1" // nothing listens on port 1
	for _, args := range [][]string{
		{"ingest", "--index", filepath.Join(root, "writer"), "--connector", "jsonl", "--log", dsn, corpus("guidance.jsonl")},
		{"follow", "--index", filepath.Join(root, "replica"), "--log", dsn},
	} {
		code, _, errs := runCLI(t, args...)
		require.NotEqual(t, 0, code, "%s: %s", args[0], errs)
		_, err := os.Stat(args[2])
		require.True(t, os.IsNotExist(err), "%s with its log unreachable made %s", args[0], args[2])
	}
}

// TestRepeatedFilterKeyIsRefused: a request holds one value a filter key;
// a second --filter of the key replaced the first without a word.
func TestRepeatedFilterKeyIsRefused(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, _, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--filter", "kind=guidance", "--filter", "kind=statute", "records")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--filter kind given twice")
	code, _, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--filter", "kind=guidance", "--filter", "kind=guidance", "records")
	require.Equal(t, 0, code, "the same pair twice is one filter: %s", errs)
}

// TestLockWaitZeroMeansTheDefaultEverywhere: --lock-wait 0 waits the
// default 2s in every command, as the usage says; rebuild-lexical read it
// as "do not wait".
func TestLockWaitZeroMeansTheDefaultEverywhere(t *testing.T) {
	dir := ingestTestCorpus(t)
	holder, err := evpack.OpenExisting(dir, evpack.Options{})
	require.NoError(t, err)
	defer holder.Close()
	for _, cmd := range []string{"check", "rebuild-lexical"} {
		code, _, errs := runCLI(t, cmd, "--index", dir, "--lock-wait", "0")
		require.Equal(t, 3, code, "%s: %s", cmd, errs)
		require.Contains(t, errs, "(waited 2s)", cmd)
	}
}
