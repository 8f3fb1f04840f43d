package evpack

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
)

const crossProcEnv = "EVPACK_CROSSPROC_DIR"

// TestCrossChild is the second process of TestPacksReplayInAnotherProcess:
// it opens the index, says so, waits for a line on stdin, commits 70 more
// rounds (past the checkpoint's lag, with purges), then verifies every pack
// the first process wrote, printing one line per pack.
func TestCrossChild(t *testing.T) {
	dir := os.Getenv(crossProcEnv)
	if dir == "" {
		t.Skip("the second process of TestPacksReplayInAnotherProcess")
	}
	ctx := context.Background()
	e, err := Open(dir, Options{LockWait: -1})
	require.NoError(t, err)
	defer e.Close()
	fmt.Println("open")
	_, err = bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, err)
	for i := 10; i < 80; i++ {
		_, err := e.Ingest(ctx, connectors.Records(maintRecords(i)[:2]), IngestOptions{}) // shared and acme chunks, no secret
		require.NoError(t, err)
		if i%26 == 0 {
			require.NoError(t, e.Merge(ctx))
		}
	}
	packs, err := filepath.Glob(filepath.Join(dir, "..", "packs", "*.json"))
	require.NoError(t, err)
	for _, p := range packs {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		rep, err := e.Verify(ctx, raw)
		require.NoError(t, err)
		fmt.Printf("verify %s %v %q\n", filepath.Base(p), rep.OK(), rep.Problems)
	}
	require.NoError(t, e.Check())
}

// TestPacksReplayInAnotherProcess: packs made in this process (pinned at
// each generation) verify in another process after it committed 70 more
// generations (a checkpoint named on the way); while that process holds
// the index, this one's Open and RebuildLexical are ErrLocked; and the
// packs verify here again afterwards.
func TestPacksReplayInAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "idx")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "packs"), 0o755))
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	for i := range 4 {
		_, err := e.Ingest(ctx, connectors.Records(maintRecords(i)), IngestOptions{})
		require.NoError(t, err)
	}
	_, err = e.Purge(ctx, []string{maintSecretID(0)}, "cross-process test")
	require.NoError(t, err)
	reqs, err := loadRequests()
	require.NoError(t, err)
	var names []string
	for g := int64(1); g <= e.st.Gen; g++ {
		for _, r := range reqs {
			rq := r.request()
			rq.Generation = g
			p, err := e.Query(ctx, rq)
			require.NoError(t, err)
			name := fmt.Sprintf("%s-g%d-%s.json", r.Name, g, hex.EncodeToString([]byte(p.Hash()))[:8])
			require.NoError(t, os.WriteFile(filepath.Join(root, "packs", name), p.Bytes(), 0o644))
			names = append(names, name)
		}
	}
	require.NoError(t, e.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrossChild$", "-test.v")
	cmd.Env = append(os.Environ(), crossProcEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	rd := bufio.NewReader(out)
	for {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, stderr.String())
		if strings.TrimSpace(line) == "open" {
			break
		}
	}
	_, err = Open(dir, Options{LockWait: -1})
	require.ErrorIs(t, err, ErrLocked, "a second Open while another process holds the index")
	_, err = RebuildLexical(ctx, dir, Options{LockWait: -1})
	require.ErrorIs(t, err, ErrLocked, "RebuildLexical while another process holds the index")
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	var lines []string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	require.NoError(t, cmd.Wait(), "%s\n%s", strings.Join(lines, "\n"), stderr.String())
	seen := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "verify ") {
			continue
		}
		seen++
		require.Contains(t, l, " true ", l)
	}
	require.Equal(t, len(names), seen, strings.Join(lines, "\n"))

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.Greater(t, e.st.Gen, int64(70))
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(root, "packs", n))
		require.NoError(t, err)
		rep, err := e.Verify(ctx, raw)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s: %v", n, rep.Problems)
	}
}
