package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/pgtest"
)

// TestFollowCommand: ingest --log writes through a PostgreSQL log, follow
// builds a replica from it, and the replica answers with the writer's pack
// bytes; a second writer under another name leads once the first has
// exited (its lease given back); a replica of another history exits 3,
// and follow without --log is bad usage.
func TestFollowCommand(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	w, r := filepath.Join(t.TempDir(), "writer"), filepath.Join(t.TempDir(), "replica")
	code, _, errs := runCLI(t, "ingest", "--index", w, "--log", srv.DSN, "--holder", "w1", "--connector", "statute", corpus("records-act.json"))
	require.Equal(t, 0, code, errs)
	code, _, errs = runCLI(t, "ingest", "--index", w, "--log", srv.DSN, "--holder", "w2", "--connector", "jsonl", corpus("guidance.jsonl"))
	require.Equal(t, 0, code, "a second writer leads once the first gave its lease back: %s", errs)
	code, out, errs := runCLI(t, "follow", "--index", r, "--log", srv.DSN, "--until", "2", "--name", "r1")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "applied through generation 2\n", out)

	q := "How long must a licensed firm retain records of client transactions?"
	code, pw, errs := runCLI(t, "query", "--index", w, "--as-of", "2026-01-15", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	code, pr, errs := runCLI(t, "query", "--index", r, "--as-of", "2026-01-15", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	require.Equal(t, pw, pr, "the replica's pack is the writer's, byte for byte")
	for _, name := range []string{"MANIFEST.json", filepath.Join("chunks", "00000001.jsonl"), filepath.Join("chunks", "00000002.jsonl")} {
		a, err := os.ReadFile(filepath.Join(w, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(r, name))
		require.NoError(t, err)
		require.Equal(t, a, b, name)
	}
	code, out, errs = runCLI(t, "check", "--index", r, "--log", srv.DSN)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "log: generations 1 to 2 are the log's, sum for sum\n")

	other := filepath.Join(t.TempDir(), "other")
	code, _, errs = runCLI(t, "ingest", "--index", other, "--connector", "jsonl", corpus("guidance.jsonl"))
	require.Equal(t, 0, code, errs)
	code, _, errs = runCLI(t, "follow", "--index", other, "--log", srv.DSN, "--until", "2")
	require.Equal(t, 3, code, "a replica whose history is not the log's: %s", errs)
	require.Contains(t, errs, "chain")
	code, out, _ = runCLI(t, "check", "--index", other, "--log", srv.DSN)
	require.Equal(t, 1, code, "check --log finds the stray history")
	require.Contains(t, out, "problem: generation 1: the log's entry sums to ")
	code, _, _ = runCLI(t, "follow", "--index", r)
	require.Equal(t, 2, code, "no --log")
}
