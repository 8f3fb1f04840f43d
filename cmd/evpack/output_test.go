package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputThatCannotBeWrittenFails: history, check and verify printed
// with fmt.Fprintf and exited 0 when nothing reached their output.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, js, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", "records")
	require.Equal(t, 0, code, errs)
	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(js), 0o644))
	for _, args := range [][]string{
		{"history", "--index", dir}, {"check", "--index", dir}, {"verify", "--index", dir, pack},
	} {
		var errb bytes.Buffer
		code := run(context.Background(), args, failWriter{}, &errb)
		require.NotEqual(t, 0, code, "%v", args)
		require.Contains(t, errb.String(), "writing the output: no space left on device", args)
	}
}

// TestHelpIsNotAnError: -h prints the flags and exits 0, without "flag:
// help requested" as if it had failed.
func TestHelpIsNotAnError(t *testing.T) {
	code, _, errs := runCLI(t, "rerank", "train", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, errs, "-trees")
	require.NotContains(t, errs, "help requested")
}

// TestPackErrorsNameTheFile and history's --tenant: a malformed pack's
// error names the pack file; a tenant name no chunk can carry is refused
// (history listed the shared corpus, exit 0).
func TestPackErrorsNameTheFile(t *testing.T) {
	dir := ingestTestCorpus(t)
	pack := filepath.Join(t.TempDir(), "cut.json")
	require.NoError(t, os.WriteFile(pack, []byte(`{"format":"evpack-pack/2",`), 0o644))
	for _, cmd := range []string{"verify", "diff"} {
		code, _, errs := runCLI(t, cmd, "--index", dir, pack)
		require.Equal(t, 2, code, errs)
		require.Contains(t, errs, pack+": evidence: malformed pack", cmd)
	}
	code, _, errs := runCLI(t, "history", "--index", dir, "--tenant", "a\x01b")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "bad tenant name")
}
