package evpack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/rerank"
)

// lockChild is the test binary run as a second process on an index:
// EVPACK_LOCK_CHILD is "hold DIR" (open, print "held", wait for stdin to
// close, close), "ingest DIR JSONL" (ingest one file, print the generation)
// or "query DIR" (answer one request). It returns the exit status: 0, or 3
// for a locked index and 1 for any other error, printed to stderr.
func lockChild(role string) int {
	f := strings.Fields(role)
	opts := Options{LockWait: -1}
	e, err := Open(f[1], opts)
	if err == nil {
		defer e.Close()
		switch f[0] {
		case "hold":
			fmt.Println("held")
			io.Copy(io.Discard, os.Stdin)
		case "ingest":
			var rep IngestReport
			rep, err = e.Ingest(context.Background(), connectors.NewJSONL(f[2]), IngestOptions{})
			fmt.Println("generation", rep.Generation)
		case "query":
			_, err = e.Query(context.Background(), Request{Question: "records", AsOf: asof.MustDate("2026-02-01")})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ErrLocked) {
			return 3
		}
		return 1
	}
	return 0
}

// startChild runs the test binary as a second process in role; it returns
// the command and its stdin (closing it ends a "hold").
func startChild(t *testing.T, role string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVPACK_LOCK_CHILD="+role)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewReader(out), &stderr
}

// runChild runs a child to completion and returns its exit status, stdout
// and stderr.
func runChild(t *testing.T, role string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVPACK_LOCK_CHILD="+role)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

// writeJSONL writes one chunk per id, each citable and dated 2026-01-10.
func writeJSONL(t *testing.T, ids ...string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, `{"id":%q,"doc_id":"memo-%s","text":"records of client transactions memo %s","source_url":"https://example.test/%s","retrieved_at":"2026-01-10T00:00:00Z"}`+"\n", id, id, id, id)
	}
	path := filepath.Join(t.TempDir(), "batch.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestOneWriterAcrossProcesses (issue items 1, 2 and 7): while one process
// has the index open, a second process's ingest and query, and a second
// Open in this process, are refused at once with ErrLocked naming the
// holder; nothing is lost or deleted, and once the holder lets go the other
// process's ingest commits on top of the first's.
func TestOneWriterAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	gen := e.st.Gen
	want := packsFor(t, e)

	// Same process, second Open: refused within the wait, not blocked.
	start := time.Now()
	_, err = Open(dir, Options{LockWait: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d", os.Getpid()))
	require.Less(t, time.Since(start), 10*time.Second)

	// Another process, while this one holds the index.
	code, _, stderr := runChild(t, "ingest "+dir+" "+writeJSONL(t, "other-1", "other-2"))
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "index locked")
	code, _, stderr = runChild(t, "query "+dir)
	require.Equal(t, 3, code, "a reader in another process is refused, never deletes: %s", stderr)
	require.Equal(t, want, packsFor(t, e))
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())

	// The other process holds it now: this one is refused and names it.
	cmd, stdin, out, _ := startChild(t, "hold "+dir)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	_, err = Open(dir, Options{LockWait: -1})
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid))
	stdin.Close()
	require.NoError(t, cmd.Wait())

	// Released: the other process commits on top of this one's batches.
	code, stdout, stderr := runChild(t, "ingest "+dir+" "+writeJSONL(t, "other-1", "other-2"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, fmt.Sprintf("generation %d\n", gen+1), stdout)
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, gen+1, e.st.Gen)
	require.Contains(t, fullState(t, e).Chunks, "other-1")
	require.Len(t, fullState(t, e).Chunks, len(corpusRecords(t))+2, "both processes' batches are there")
}

// TestOpenDeletesNothingItCannotExplain (items 3 and 4): a lost manifest,
// or one forged to an earlier generation (sealed anew, so only the
// lexical documents above it give it away), is ErrCorrupt naming the file;
// nothing is deleted, and putting the true manifest back restores
// everything.
func TestOpenDeletesNothingItCannotExplain(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	name := filepath.Join(dir, storage.ManifestName)
	orig, err := os.ReadFile(name)
	require.NoError(t, err)
	m := storagetest.ReadManifest(t, dir)
	require.Greater(t, m.Generation, int64(1))

	cases := []struct {
		name, why string
		damage    func()
		want      string
	}{
		{"manifest missing", "the old engine took this for a new index and deleted every lexical document",
			func() { require.NoError(t, os.Remove(name)) }, "MANIFEST.json is missing but the directory holds an index's files"},
		{"generation lowered", "the old engine deleted the later generation from bleve for good",
			func() {
				low := m.Clone()
				low.Generation--
				low.Docs -= int64(low.Batches[len(low.Batches)-1].Chunks)
				low.Batches = low.Batches[:len(low.Batches)-1]
				low.Checkpoint, low.CheckpointSum = "", "" // the later generation's
				storagetest.WriteManifest(t, dir, low)
			}, "no unfinished commit (PENDING.json) explains them; nothing was deleted"},
		{"manifest edited by hand", "an edit without re-sealing fails the checksum",
			func() {
				require.NoError(t, os.WriteFile(name, bytes.Replace(orig, []byte(`"docs": `), []byte(`"docs": 1`), 1), 0o644))
			}, "MANIFEST.json: checksum mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			_, err := Open(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt, c.why)
			require.Contains(t, err.Error(), c.want)
			_, err = OpenExisting(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt, "a second try finds the same: the first deleted nothing")
			require.NoError(t, os.WriteFile(name, orig, 0o644))
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			require.Equal(t, want, packsFor(t, e), "every committed chunk is still there")
			require.NoError(t, e.Check())
			require.NoError(t, e.Close())
		})
	}
}

// TestEveryStoredFieldIsSealed (item 9): an edit to any field of a stored
// chunk, or to the manifest, is ErrCorrupt naming the file once the batch
// is read whole (TestEditedLineIsDropped: a query reading the line).
func TestEveryStoredFieldIsSealed(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	require.NoError(t, e.Close())
	batch := filepath.Join(dir, storage.ChunksDir, storage.BatchName(1))
	orig, err := os.ReadFile(batch)
	require.NoError(t, err)
	cases := []struct{ name, from, to string }{
		{"anchor moved a century back", `"anchor":"2025-`, `"anchor":"1925-`},
		{"validity ended", `"valid_to":""`, `"valid_to":"2025-02-01"`},
		{"source URL changed", `"source_url":"https://`, `"source_url":"http://`},
		{"retrieval time changed", `"retrieved_at":"20`, `"retrieved_at":"19`},
		{"tenant changed", `"tenant":""`, `"tenant":"acme"`},
		{"text and content hash both edited", `"content_hash":"blake3:`, `"content_hash":"blake3:0`},
		{"a chunk deleted", "\n{\"id\"", "\n{\"Id\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.True(t, bytes.Contains(orig, []byte(c.from)), "fixture holds %s", c.from)
			require.NoError(t, os.WriteFile(batch, bytes.Replace(orig, []byte(c.from), []byte(c.to), 1), 0o644))
			err := openFull(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), batch+" hashes to")
		})
	}
	require.NoError(t, os.WriteFile(batch, orig, 0o644))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
}

// TestOpenRefusesForeignDirectories (item 8): a directory that holds other
// files is ErrNotIndex and is left exactly as it was; an empty one becomes
// an index.
func TestOpenRefusesForeignDirectories(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("mine"), 0o644))
	_, err := Open(dir, Options{})
	require.ErrorIs(t, err, ErrNotIndex)
	require.Contains(t, err.Error(), "thesis.tex")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing written")

	_, err = OpenExisting(filepath.Join(dir, "missing"), Options{})
	require.ErrorIs(t, err, ErrNotIndex)
	require.NoDirExists(t, filepath.Join(dir, "missing"))

	fresh := t.TempDir()
	e, err := Open(fresh, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.FileExists(t, filepath.Join(fresh, storage.ManifestName))
}

// TestOldFormatSaysHowToRebuild: an index of the unsealed format is refused
// with advice, not read and not changed.
func TestOldFormatSaysHowToRebuild(t *testing.T) {
	dir := t.TempDir()
	old := `{"format":"evpack-index/1","generation":1,"docs":1,"tokens":3,"batches":["00000001.jsonl"]}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, storage.ManifestName), []byte(old), 0o644))
	_, err := Open(dir, Options{})
	require.ErrorIs(t, err, ErrOldFormat)
	require.Contains(t, err.Error(), "rebuild the index by ingesting its sources into a new directory")
	raw, err := os.ReadFile(filepath.Join(dir, storage.ManifestName))
	require.NoError(t, err)
	require.Equal(t, old, string(raw))
}

// TestNewerFormatIsNotCorrupt: an index whose manifest names a later
// format (with a field this build does not know, as a later format may
// add) is refused as ErrNewerFormat, not ErrCorrupt, and not one of its
// files is changed, removed or added.
func TestNewerFormatIsNotCorrupt(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = e.Ingest(context.Background(), connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	name := filepath.Join(dir, storage.ManifestName)
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	body, err := fsutil.UnsealText(raw)
	require.NoError(t, err)
	later := strings.Replace(string(body), `"format": "`+storage.Format+`",`, `"format": "evpack-index/4",`+"\n"+`  "levels": [1],`, 1)
	require.NotEqual(t, string(body), later, "the manifest's format line")
	require.NoError(t, os.WriteFile(name, fsutil.SealText([]byte(later)), 0o644))
	before := filesUnder(t, dir)

	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrNewerFormat)
	require.NotErrorIs(t, err, ErrCorrupt, "a later evpack's index is not damaged")
	require.ErrorContains(t, err, "format evpack-index/4, this evpack reads "+storage.Format+" and earlier")
	require.Equal(t, before, filesUnder(t, dir), "nothing written")
}

// filesUnder returns every file under dir by its path there, with its
// bytes.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		out[path] = string(raw)
		return err
	}))
	return out
}

// TestInputThatGrowsInStorage (item 5): text that grows when stored (bad
// bytes become U+FFFD, U+2028 is escaped) is stored and read back whatever
// its length, and a field that would read back changed is refused before
// anything is written.
func TestInputThatGrowsInStorage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	// 25 MiB of input that grows to 67 MiB in the batch file: past the
	// 64 MiB line cap that once made every later Open fail.
	n := 1 << 16
	if testing.Short() {
		n = 1 << 10
	}
	big := strings.Repeat(strings.Repeat("\xff", 384)+" retain\u2028", n)
	rec := strayRecord(t)
	rec.Chunk.ID, rec.Chunk.Text = "big", big
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, evidence.Normalize(big), fullState(t, e).Chunks["big"].Text)

	bad := strayRecord(t)
	bad.Chunk.ID = "doc\xff-1"
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t), bad}), IngestOptions{})
	require.Error(t, err)
	require.ErrorIs(t, err, evidence.ErrNotUTF8, "refused at Prepare, before storage would have changed it")
	require.Contains(t, err.Error(), `id "doc\xff-1"`)
	require.NotContains(t, fullState(t, e).Chunks, "stray", "nothing of the batch was committed")
	gen := e.st.Gen
	require.NoError(t, e.Close())
	require.Equal(t, gen, storagetest.ReadManifest(t, dir).Generation)
}

// blockingReranker holds every Rerank call until release is closed,
// standing in for a slow remote model.
type blockingReranker struct {
	rerank.Reranker
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReranker) Rerank(ctx context.Context, q string, c []rerank.Candidate, s rerank.Stats) ([]evidence.Scored, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Reranker.Rerank(ctx, q, c, s)
}

// TestCommitsDoNotWaitForModels (item 15): a query stuck in a model call
// holds no lock a commit needs; the commit lands, and the stuck query still
// answers from the state it started on.
func TestCommitsDoNotWaitForModels(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	req := Request{Question: "records retention period", AsOf: asof.MustDate("2026-02-01")}
	first, err := e.Query(ctx, req)
	require.NoError(t, err)
	slow := &blockingReranker{Reranker: e.opts.Reranker, entered: make(chan struct{}), release: make(chan struct{})}
	v, err := e.View(Options{Reranker: slow})
	require.NoError(t, err)
	type result struct {
		p   *evidence.Pack
		err error
	}
	got := make(chan result, 1)
	go func() {
		p, err := v.Query(ctx, req)
		got <- result{p, err}
	}()
	<-slow.entered // the query is inside the model call
	rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
	require.NoError(t, err, "the commit did not wait for the model")
	require.Equal(t, 1, rep.Added)
	close(slow.release)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, first.Generation, r.p.Generation, "the stuck query answered from the state it started on")
	require.Equal(t, first.Fingerprint.Get("corpus"), r.p.Fingerprint.Get("corpus"))
	after, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, rep.Generation, after.Generation, "the stray joined the shared scope")
}

// TestHalfCreatedIndexIsMadeAgain: a crash while bleve was creating the
// lexical directory of a new index (nothing committed yet) does not make the
// index unopenable.
func TestHalfCreatedIndexIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	lexDir := filepath.Join(dir, storage.LexicalDir)
	require.NoError(t, os.RemoveAll(lexDir))
	require.NoError(t, os.MkdirAll(lexDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lexDir, "index_meta.json"), []byte(`{"storage":"sco`), 0o644))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	ingestCorpus(t, e)
}
