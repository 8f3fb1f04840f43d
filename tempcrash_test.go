package evpack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
)

// tempCrashEnv names the index directory of the temp-file crash child (see
// TestMain): it ingests the secret memo and stops dead once the batch
// file's temp file is written, before its rename, printing "tmp PATH".
const tempCrashEnv = "EVPACK_TEMPCRASH_CHILD"

// tempCrashChild is that child. It blocks at the temp-file point for the
// parent's kill -9; it returns only on an error.
func tempCrashChild(dir string) error {
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	e.store.Hooks.BeforeRename = func(tmp string) error {
		if strings.Contains(filepath.Base(tmp), ".jsonl.tmp-") {
			fmt.Printf("tmp %s\n", tmp)
			select {} // the parent kills the process here
		}
		return nil
	}
	_, err = e.Ingest(context.Background(), connectors.Records([]connectors.Record{secretRecord(new(testing.T))}), IngestOptions{})
	return fmt.Errorf("the ingest returned (%v) instead of stopping at the batch's temp file", err)
}

// TestKillAtTempFile kills (SIGKILL) a process that is writing a batch at
// the point where the batch's temp file holds the text and is not yet
// renamed. The temp file is no committed data, and no commit record names
// it: the next Open removes it, so that a purge of the chunk, ingested
// again, leaves its text in no file of the index. Before the fix the temp
// file survived Open, Purge and Check (which exited 0).
func TestKillAtTempFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	require.NoError(t, e.Close())

	tmp, _ := strings.CutPrefix(killAtLine(t, tempCrashEnv+"="+dir, "tmp "), "tmp ")
	require.Equal(t, filepath.Join(dir, storage.ChunksDir), filepath.Dir(tmp))
	require.Equal(t, []string{tmp}, grepDir(t, dir, "Quillfeather"), "the temp file alone holds the text")
	require.FileExists(t, filepath.Join(dir, storage.PendingName), "killed mid-commit")

	// Open rolls the commit back and removes the temp file: Check finds
	// nothing amiss, no file holds the text.
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NoFileExists(t, tmp)
	require.Empty(t, grepDir(t, dir, "Quillfeather"))
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
	require.Empty(t, rep.Strays)

	// The chunk again, then purged: its text is in no file.
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, grepDir(t, dir, "Quillfeather"))
	_, err = e.Purge(ctx, []string{"memo-roe"}, "erasure")
	require.NoError(t, err)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	require.Empty(t, grepDir(t, dir, "Quillfeather"), "a file still holds the purged text")
}

// TestCheckReportsTextStrays: a temp file that Open could not remove, and
// a file in chunks/ that the manifest does not name (an obsolete batch file
// come back after a power cut), may hold a purged chunk's text: Check
// reports each as a problem, where it once listed them as harmless strays.
func TestCheckReportsTextStrays(t *testing.T) {
	dir, e := purgeFixture(t)
	for _, name := range []string{".00000009.jsonl.tmp-123", "00000001.jsonl.old"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, storage.ChunksDir, name)
			require.NoError(t, os.WriteFile(path, []byte("Jane Quillfeather kept the zqxjk ledger\n"), 0o644))
			defer os.Remove(path)
			rep, err := e.CheckIndex(context.Background())
			require.NoError(t, err)
			require.Equal(t, []string{storage.ChunksDir + "/" + name}, rep.Strays)
			require.Len(t, rep.Problems, 1)
			require.Contains(t, rep.Problems[0], path)
			require.Contains(t, rep.Problems[0], "may hold chunk text")
		})
	}
	// A temporary directory in the index directory (a lexical index whose
	// creation a crash interrupted) is a stray, and no problem.
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".lexical.tmp-5"), 0o755))
	rep, err := e.CheckIndex(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
	require.Equal(t, []string{".lexical.tmp-5"}, rep.Strays)
	require.NoError(t, e.Close())
}

// killAtLine runs this test binary as a child with env (NAME=VALUE) set,
// reads its standard output until a line that starts with prefix, kills
// the child there (SIGKILL) and returns that line. It fails t unless the
// child printed such a line and was killed, not ended on its own.
func killAtLine(t *testing.T, env, prefix string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	var line string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			line = sc.Text()
			require.NoError(t, cmd.Process.Kill())
			break
		}
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(werr, &exit) && !exit.Exited(), "the child was killed, not ended on its own: %v\n%s", werr, stderr.String())
	require.NotEmpty(t, line, "the child printed a line starting %q:\n%s", prefix, stderr.String())
	return line
}
