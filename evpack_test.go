package evpack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
	"github.com/evpack/evpack/retrieve/vectors"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMain doubles as the replay helper: a test re-executes this binary with
// EVPACK_REPLAY_DIR set, and it prints the golden packs of that index. With
// EVPACK_CRASH_CHILD set it is the process TestCrashLoop kills.
func TestMain(m *testing.M) {
	if role := os.Getenv("EVPACK_LOCK_CHILD"); role != "" {
		os.Exit(lockChild(role))
	}
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(writerChildEnv); dir != "" {
		fmt.Fprintln(os.Stderr, writerChild(dir))
		os.Exit(3)
	}
	if dir := os.Getenv(powerCutEnv); dir != "" {
		if err := powerCutChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(tempCrashEnv); dir != "" {
		fmt.Fprintln(os.Stderr, tempCrashChild(dir))
		os.Exit(3)
	}
	if arg := os.Getenv(volumeCrashEnv); arg != "" {
		fmt.Fprintln(os.Stderr, volumeCrashChild(arg))
		os.Exit(3)
	}
	if arg := os.Getenv(aheadCrashEnv); arg != "" {
		fmt.Fprintln(os.Stderr, aheadCrashChild(arg))
		os.Exit(3)
	}
	if dir := os.Getenv("EVPACK_REPLAY_DIR"); dir != "" {
		if err := replayHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func replayHelper(dir string) error {
	var opts Options
	if path := os.Getenv("EVPACK_REPLAY_VECTORS"); path != "" {
		tb, err := vectors.Load(path)
		if err != nil {
			return err
		}
		opts.Embedder = retrieve.NewSIF(tb)
	}
	if os.Getenv("EVPACK_REPLAY_HNSW") != "" { // the graph walk on every request
		opts.DenseIndex, opts.Graph = "hnsw", retrieve.GraphOptions{ExactFactor: -1}
	}
	eng, err := Open(dir, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	reqs, err := loadRequests()
	if err != nil {
		return err
	}
	for _, r := range reqs {
		p, err := eng.Query(context.Background(), r.request())
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", r.Name, p.Hash())
	}
	return nil
}

// goldenRequest is one line of testdata/requests.json.
type goldenRequest struct {
	Name     string            `json:"name"`
	Question string            `json:"question"`
	AsOf     string            `json:"as_of"`
	Tenant   string            `json:"tenant"`
	Filters  map[string]string `json:"filters"`
	K        int               `json:"k"`
	Reason   string            `json:"reason"`
}

func (g goldenRequest) request() Request {
	return Request{Question: g.Question, AsOf: asof.MustDate(g.AsOf), Tenant: g.Tenant, Filters: g.Filters, K: g.K}
}

func loadRequests() ([]goldenRequest, error) {
	raw, err := os.ReadFile(filepath.Join("testdata", "requests.json"))
	if err != nil {
		return nil, err
	}
	var rs []goldenRequest
	return rs, json.Unmarshal(raw, &rs)
}

func corpusConnectors() []connectors.Connector {
	return []connectors.Connector{
		connectors.NewStatute(filepath.Join("testdata", "corpus", "records-act.json")),
		connectors.NewJSONL(filepath.Join("testdata", "corpus", "guidance.jsonl")),
	}
}

// corpusRecords reads the test corpus through its connectors.
func corpusRecords(t testing.TB) []connectors.Record {
	t.Helper()
	var recs []connectors.Record
	for _, c := range corpusConnectors() {
		rs, err := c.Read(context.Background())
		require.NoError(t, err)
		recs = append(recs, rs...)
	}
	return recs
}

// checked registers Engine.Check and Close to run when the test ends.
func checked(t testing.TB, e *Engine) *Engine {
	t.Helper()
	t.Cleanup(func() {
		if err := e.Check(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Check: %v", err)
		}
		e.Close()
	})
	return e
}

// openFull opens dir and builds the state with every chunk in memory, as
// the first write after Open does, reading every batch file: where an
// edited or missing one is refused (Open itself reads the checkpoint; a
// query checks each chunk it reads).
func openFull(dir string, opts Options) error {
	e, err := Open(dir, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = e.writable()
	return err
}

// loadFull opens dir and builds the state from the batch files alone, as
// Check does, and Open for an index without a checkpoint: where an edited
// analysis file is refused.
func loadFull(dir string) error {
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = state.LoadState(e.store, e.lex, e.emb, e.graph)
	return err
}

// committedState returns e's committed state as a query reads it (under
// its lock): a test reading e.st itself races with History or Diff beside
// it, which swap in the unfolded state.
func committedState(e *Engine) *state.State {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.st
}

// fullState returns e's state with every chunk in memory (a test that looks
// at the chunks themselves after Open, which reads a checkpoint).
func fullState(t testing.TB, e *Engine) *state.State {
	t.Helper()
	st, err := e.unfolded() // writable under ingestMu, which writable requires
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func memEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := OpenMemory(opts)
	require.NoError(t, err)
	return checked(t, e)
}

func ingestCorpus(t testing.TB, e *Engine) {
	t.Helper()
	for _, c := range corpusConnectors() {
		_, err := e.Ingest(context.Background(), c, IngestOptions{})
		require.NoError(t, err)
	}
}

func packsFor(t testing.TB, e *Engine) map[string][]byte {
	t.Helper()
	reqs, err := loadRequests()
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, r := range reqs {
		p, err := e.Query(context.Background(), r.request())
		require.NoError(t, err, r.Name)
		out[r.Name] = p.Bytes()
	}
	return out
}

// TestGoldenPacks pins the packs of the golden requests ranked by the
// arithmetic reranker (the default before the learned one, and its
// fallback), one option away from the default configuration, whose packs
// TestGoldenPacksLearned pins.
func TestGoldenPacks(t *testing.T) {
	e := memEngine(t, Options{Reranker: rerank.DefaultArithmetic()})
	ingestCorpus(t, e)
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		t.Run(r.Name, func(t *testing.T) {
			p, err := e.Query(context.Background(), r.request())
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden", r.Name+".json")
			got := p.Bytes()
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
				require.NoError(t, os.WriteFile(strings.TrimSuffix(path, ".json")+".txt", []byte(p.Text()), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestGoldenPacks -update to create it")
			require.Equal(t, string(want), string(got), "%s: %s", r.Name, r.Reason)
			wantText, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".txt")
			require.NoError(t, err)
			require.Equal(t, string(wantText), p.Text())
		})
	}
}

// TestGoldenPackContents states what the golden packs must say, so that an
// -update cannot silently bless a wrong answer.
func TestGoldenPackContents(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	packs := map[string]*evidence.Pack{}
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		p, err := e.Query(context.Background(), r.request())
		require.NoError(t, err)
		packs[r.Name] = p
	}
	first := func(name string) evidence.Citation {
		require.NotEmpty(t, packs[name].Citations, name)
		return packs[name].Citations[0]
	}
	require.Equal(t, "records-act/art-2@2018", first("retention-2020").ChunkID)
	require.Equal(t, "records-act/art-2@2021", first("retention-2023").ChunkID)
	require.Equal(t, "records-act/art-2@2025", first("retention-2026-01-15").ChunkID)
	for _, c := range packs["retention-2026-01-15"].Citations {
		require.NotEqual(t, "gn-2026-01", c.ChunkID, "anchored 2026-01-20, asked as of 2026-01-15")
	}
	require.Contains(t, first("penalty-before-publication").Text, "50,000")
	require.Contains(t, first("penalty-published-not-in-force").Text, "50,000")
	require.Contains(t, first("penalty-in-force").Text, "250,000")
	for name, own := range map[string]string{"tenant-acme": "acme-policy-1", "tenant-globex": "globex-policy-1"} {
		ids := citedIDs(packs[name])
		require.Contains(t, ids, own)
		for _, other := range []string{"acme-policy-1", "globex-policy-1"} {
			if other != own {
				require.NotContains(t, ids, other)
			}
		}
	}
	for _, c := range packs["filter-guidance"].Citations {
		require.Equal(t, "guidance", c.Meta["kind"])
	}
	require.Equal(t, []evidence.Drop{{ChunkID: "blog-retention", Reason: "missing source URL"}}, packs["gate-drops-blog"].Trace.Dropped)
	require.Contains(t, packs["gate-drops-blog"].Trace.Steps, "dropped 1 (missing source URL: blog-retention)")
	require.Empty(t, packs["nothing-eligible"].Citations)
	require.Contains(t, packs["nothing-eligible"].Trace.Steps, "lexical: 0 chunks eligible as of 2017-01-01 match")
	require.Equal(t, "records-act/art-5@2021", first("electronic-communications").ChunkID)
}

// withoutGeneration returns packs with their generation zeroed. The
// generation counts commits, which batching changes; a test of ingest order
// or batching compares everything else.
func withoutGeneration(t testing.TB, packs map[string][]byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, raw := range packs {
		p, err := evidence.Parse(raw)
		require.NoError(t, err, name)
		p.Generation = 0
		out[name] = p.Bytes()
	}
	return out
}

func citedIDs(p *evidence.Pack) []string {
	var ids []string
	for _, c := range p.Citations {
		ids = append(ids, c.ChunkID)
	}
	return ids
}

// TestReplayAcrossProcesses persists an index, then reopens it in fresh
// processes with GOMAXPROCS 1 and 8 and compares every golden pack's hash.
func TestReplayAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := map[string]string{}
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		p, err := e.Query(context.Background(), r.request())
		require.NoError(t, err)
		want[r.Name] = p.Hash()
	}
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	for _, procs := range []string{"1", "8"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "EVPACK_REPLAY_DIR="+dir, "GOMAXPROCS="+procs)
		out, err := cmd.Output()
		require.NoError(t, err, "GOMAXPROCS=%s: %s", procs, out)
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, hash, _ := strings.Cut(line, " ")
			got[name] = hash
		}
		require.Equal(t, want, got, "GOMAXPROCS=%s", procs)
	}
}

// TestSegmentLayoutCannotChangeAPack compares a fresh in-memory index built
// in many small batches (many segments) with an on-disk index built in one,
// reopened, before and after merging to one segment.
func TestSegmentLayoutCannotChangeAPack(t *testing.T) {
	ctx := context.Background()
	recs := corpusRecords(t)
	mem := memEngine(t, Options{})
	for i := range recs { // one batch, one segment, per chunk
		_, err := mem.Ingest(ctx, connectors.Records(recs[i:i+1]), IngestOptions{})
		require.NoError(t, err)
	}
	want := withoutGeneration(t, packsFor(t, mem)) // one commit per chunk: only the generation differs

	dir := t.TempDir()
	disk, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = disk.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, disk.Close())
	disk, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, disk)
	require.Equal(t, want, withoutGeneration(t, packsFor(t, disk)), "reopened from disk")
	require.NoError(t, disk.Merge(ctx))
	require.Equal(t, want, withoutGeneration(t, packsFor(t, disk)), "after merging to one segment")
}

func TestShuffledIngestGivesIdenticalPacks(t *testing.T) {
	assertShuffleInvariant(t, func(t testing.TB) Options { return Options{} })
}

// assertShuffleInvariant ingests the test corpus at once, and shuffled in
// two batches (three seeds, logged), with the options opts gives, and
// requires the same packs (their generations aside).
func assertShuffleInvariant(t *testing.T, opts func(t testing.TB) Options) {
	ctx := context.Background()
	recs := corpusRecords(t)
	base := memEngine(t, opts(t))
	_, err := base.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	want := withoutGeneration(t, packsFor(t, base))
	for seed := uint64(1); seed <= 3; seed++ {
		t.Logf("shuffle seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, seed))
		shuffled := append([]connectors.Record(nil), recs...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		e := memEngine(t, opts(t))
		cut := rng.IntN(len(shuffled))
		for _, part := range [][]connectors.Record{shuffled[:cut], shuffled[cut:]} {
			_, err := e.Ingest(ctx, connectors.Records(part), IngestOptions{})
			require.NoError(t, err)
		}
		require.Equal(t, want, withoutGeneration(t, packsFor(t, e)), "seed %d", seed)
	}
}

// retentionPack commits the test corpus to a new index in dir and returns
// the engine, the records-retention request, and its pack, which cites the
// ten-year article first: the fixture of the tampering tests.
func retentionPack(t *testing.T, dir string) (*Engine, Request, *evidence.Pack) {
	t.Helper()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	req := Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-01-15")}
	p, err := e.Query(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "records-act/art-2@2025", p.Citations[0].ChunkID)
	return e, req, p
}

func TestTamperedChunkIsDroppedAndVerifyFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, req, p := retentionPack(t, dir)
	rep, err := e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.NoError(t, e.Close())

	// Someone edits the stored text after ingest: ten years becomes two.
	// Edited alone, the batch file fails its checksum when read whole (the
	// full state, Check).
	batches, err := filepath.Glob(filepath.Join(dir, "chunks", "*.jsonl"))
	require.NoError(t, err)
	for _, b := range batches {
		raw, err := os.ReadFile(b)
		require.NoError(t, err)
		if bytes.Contains(raw, []byte("for ten years from the date")) {
			orig := bytes.Clone(raw)
			require.NoError(t, os.WriteFile(b, bytes.Replace(raw, []byte("for ten years from the date"), []byte("for two years from the date"), 1), 0o644))
			err := openFull(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), b)
			require.NoError(t, os.WriteFile(b, orig, 0o644))
		}
	}
	// A forger who re-seals every file and the manifest gets past Open, but
	// not past the content hash taken at ingest.
	require.True(t, storagetest.ForgeBatches(t, dir, func(body []byte) []byte {
		return bytes.Replace(body, []byte("for ten years from the date"), []byte("for two years from the date"), 1)
	}))

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.ErrorIs(t, e.Check(), ErrCheck)
	p2, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p2), "records-act/art-2@2025")
	require.Contains(t, p2.Trace.Dropped, evidence.Drop{ChunkID: "records-act/art-2@2025", Reason: "content hash mismatch"})
	rep, err = e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Contains(t, strings.Join(rep.Problems, "\n"), "records-act/art-2@2025: stored chunk no longer hashes to its content hash")
}

// TestEditedStoredFieldsAreCaught edits one field (not the text) of a stored
// chunk in its batch file and re-seals it: Check must fail and the gate must
// drop the chunk.
func TestEditedStoredFieldsAreCaught(t *testing.T) {
	ctx := context.Background()
	const id = "records-act/art-2@2025"
	req := Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-01-15")}
	cases := []struct {
		name, reason, from, to string
	}{
		{"meta", "a filter would match a kind the source never gave", `"kind":"statute"`, `"kind":"guidance"`},
		{"source url", "the citation would send a reader elsewhere", `"source_url":"https://laws.example.org/records-act/2025"`, `"source_url":"https://evil.example.org/"`},
		{"connector", "the connector vouches for the anchor", `"connector":"statute"`, `"connector":"jsonl"`},
		{"valid from", "the version would be in force on other days", `"valid_from":"2026-01-01"`, `"valid_from":"2025-06-01"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			ingestCorpus(t, e)
			require.NoError(t, e.Close())
			// A forger who re-seals the files gets past Open's checksums;
			// the content hash still catches the edit.
			edited := 0
			storagetest.ForgeBatches(t, dir, func(body []byte) []byte {
				lines := bytes.Split(body, []byte("\n"))
				for i, l := range lines {
					if bytes.Contains(l, []byte(`"id":"`+id+`"`)) && bytes.Contains(l, []byte(tc.from)) {
						lines[i] = bytes.Replace(l, []byte(tc.from), []byte(tc.to), 1)
						edited++
					}
				}
				return bytes.Join(lines, []byte("\n"))
			})
			require.Equal(t, 1, edited, "the batch line of %s holds %s", id, tc.from)
			e, err = Open(dir, Options{})
			require.NoError(t, err)
			defer e.Close()
			require.ErrorIs(t, e.Check(), ErrCheck, tc.reason)
			p, err := e.Query(ctx, req)
			require.NoError(t, err)
			require.NotContains(t, citedIDs(p), id, tc.reason)
		})
	}
}

func TestBadInputIsRefusedWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	good := `{"id":"a","doc_id":"d","text":"alpha","source_url":"u","retrieved_at":"2024-01-01T00:00:00Z"}`
	cases := []struct {
		name, body string
		want       error
		where      string
	}{
		{"malformed line names file and line", good + "\n{\"id\": \"b\", \"doc_id\":\n", connectors.ErrSyntax, "bad.jsonl:2"},
		{"unknown field is refused, not ignored", good + "\n" + `{"id":"b","doc_id":"d","text":"x","retreived_at":"2024-01-01"}`, connectors.ErrSyntax, "bad.jsonl:2"},
		{"invalid date", good + "\n" + `{"id":"b","doc_id":"d","text":"x","anchor":"2024-13-01"}`, asof.ErrBadDate, "bad.jsonl:2"},
		{"invalid instant", `{"id":"b","doc_id":"d","text":"x","retrieved_at":"yesterday"}`, asof.ErrBadDate, "bad.jsonl:1"},
		{"empty text", good + "\n" + `{"id":"b","doc_id":"d","text":"  \n "}`, evidence.ErrEmptyText, "bad.jsonl:2"},
		{"missing id", `{"doc_id":"d","text":"x"}`, evidence.ErrMissingID, "bad.jsonl:1"},
		{"interval ends before it starts", `{"id":"b","doc_id":"d","text":"x","valid_from":"2024-02-01","valid_to":"2024-01-01"}`, asof.ErrBadInterval, "bad.jsonl:1"},
		{"duplicate id with different text", good + "\n" + `{"id":"a","doc_id":"d","text":"beta"}`, evidence.ErrDuplicateChunk, "bad.jsonl:2"},
		{"bad metadata key", `{"id":"b","doc_id":"d","text":"x","meta":{"Bad Key":"v"}}`, evidence.ErrBadMeta, "bad.jsonl:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			_, err := e.Ingest(ctx, connectors.NewJSONL(write("bad.jsonl", tc.body)), IngestOptions{})
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.where)
			st := e.st
			require.Zero(t, st.Gen, "nothing of the batch applied")
			require.Empty(t, st.Chunks)
			n, err := e.lex.DocCount()
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
	t.Run("duplicate id across batches", func(t *testing.T) {
		e := memEngine(t, Options{})
		_, err := e.Ingest(ctx, connectors.NewJSONL(write("one.jsonl", good)), IngestOptions{})
		require.NoError(t, err)
		rep, err := e.Ingest(ctx, connectors.NewJSONL(write("same.jsonl", good)), IngestOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Unchanged)
		_, err = e.Ingest(ctx, connectors.NewJSONL(write("two.jsonl", `{"id":"a","doc_id":"d","text":"changed"}`)), IngestOptions{})
		require.ErrorIs(t, err, evidence.ErrDuplicateChunk)
		require.Contains(t, err.Error(), "two.jsonl:1")
		require.EqualValues(t, 1, e.st.Gen)
	})
}

func TestBadRequests(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	day := asof.MustDate("2026-01-01")
	cases := []struct {
		name string
		req  Request
	}{
		{"empty question", Request{Question: "  ", AsOf: day}},
		{"no as-of date", Request{Question: "records"}},
		{"k too large", Request{Question: "records", AsOf: day, K: MaxK + 1}},
		{"negative k", Request{Question: "records", AsOf: day, K: -1}},
		{"filter key with =", Request{Question: "records", AsOf: day, Filters: map[string]string{"a=b": "c"}}},
		// A pack as of a day outside the years asof parses would not parse
		// back; one whose seconds overflow int64 rendered as 2018-06-01 while
		// eligibility read its true day, and cited what came after.
		{"as of year 10000", Request{Question: "records", AsOf: asof.DateFromDays(asof.MustDate("9999-12-31").Days() + 1)}},
		{"as of a day whose seconds overflow", Request{Question: "records", AsOf: asof.DateFromDays(17683 + 1<<57)}},
		{"known at year 20000", Request{Question: "records", AsOf: day, KnownAt: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		// A request's cost grew with its question: 1 MiB took a second.
		{"question a byte over MaxQuestionLen", Request{Question: strings.Repeat("records ", evidence.MaxQuestionLen/8) + "x", AsOf: day}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Query(context.Background(), tc.req)
			require.ErrorIs(t, err, ErrBadRequest)
		})
	}
	long := strings.Repeat("records ", evidence.MaxQuestionLen/8-1) + "retained"
	require.Len(t, long, evidence.MaxQuestionLen)
	_, err := e.Query(context.Background(), Request{Question: long, AsOf: day})
	require.NoError(t, err, "a question of MaxQuestionLen bytes is asked")
	_, err = asof.ParseDate("15/01/2026")
	require.ErrorIs(t, err, asof.ErrBadDate)
	_, err = OpenMemory(Options{Pool: -1})
	require.ErrorIs(t, err, ErrBadOptions)
	// w < 0 alone let NaN through: the engine opened, and every query then
	// failed in fusion (or, for the year list, fused NaN into the order).
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"lexical weight NaN", Options{LexicalWeight: math.NaN()}},
		{"lexical weight +Inf", Options{LexicalWeight: math.Inf(1)}},
		{"dense weight NaN", Options{DenseWeight: math.NaN()}},
		{"period weight NaN", Options{PeriodWeight: math.NaN()}},
		{"RRFK above fuse.MaxK: k+rank overflowed", Options{RRFK: math.MaxInt}},
	} {
		_, err = OpenMemory(tc.o)
		require.ErrorIs(t, err, ErrBadOptions, tc.name)
	}
}

// TestUncommittedBatchIsRolledBackOnOpen stops a commit dead in the window
// between the lexical batch and the manifest (the ingest goroutine exits
// there, running no rollback, as a killed process would), then reopens: the
// recorded commit is rolled back and the packs are those of before.
func TestUncommittedBatchIsRolledBackOnOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	crashInCommit(t, e, strayRecord(t))
	above, err := e.lex.CountAbove(context.Background(), e.st.Gen)
	require.NoError(t, err)
	require.EqualValues(t, 1, above, "the stray reached the lexical index")
	require.FileExists(t, filepath.Join(dir, storage.PendingName))
	require.NoError(t, e.lex.Close()) // what the kernel does for a dead process
	require.NoError(t, e.store.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, want, packsFor(t, e))
	require.NoFileExists(t, filepath.Join(dir, storage.PendingName))
	require.NoFileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(e.st.Gen+1)))
}

// strayRecord is one chunk the test corpus does not hold.
func strayRecord(t *testing.T) connectors.Record {
	t.Helper()
	return connectors.Record{Chunk: evidence.Chunk{ID: "stray", DocID: "x", Text: "licensed firm retain records client transactions forever",
		SourceURL: "u", Connector: "c", RetrievedAt: asof.MustDate("2000-01-01").Start(),
		Anchor: asof.Anchor{At: asof.MustDate("2000-01-01").Start(), Field: "retrieved_at"}}}
}

// crashInCommit ingests recs and stops the ingest goroutine dead just before
// the manifest would be written: no rollback, no unlock of the directory.
func crashInCommit(t *testing.T, e *Engine, recs ...connectors.Record) {
	t.Helper()
	e.store.Hooks.BeforeManifest = func() error { runtime.Goexit(); return nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Ingest(context.Background(), connectors.Records(recs), IngestOptions{})
		t.Error("ingest returned: the hook did not stop it")
	}()
	<-done
	e.store.Hooks.BeforeManifest = nil
}

func TestConcurrentQueriesDuringIngest(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	req := Request{Question: "records retention period", AsOf: asof.MustDate("2026-02-01")}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				p, err := e.Query(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if len(p.Citations) == 0 {
					errs <- errors.New("no citations")
					return
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		recs := []connectors.Record{{Chunk: evidence.Chunk{ID: fmt.Sprintf("extra-%d", i), DocID: "extra",
			Text: fmt.Sprintf("note %d on the retention of records", i), SourceURL: "u", Connector: "test",
			RetrievedAt: asof.MustDate("2025-01-01").Start(),
			Anchor:      asof.Anchor{At: asof.MustDate("2025-01-01").Start(), Field: "retrieved_at"}}}}
		_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 2+10, e.st.Gen)
}

func TestClosedEngine(t *testing.T) {
	e, err := OpenMemory(Options{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	_, err = e.Query(context.Background(), Request{Question: "q", AsOf: asof.MustDate("2026-01-01")})
	require.ErrorIs(t, err, ErrClosed)
	_, err = e.Ingest(context.Background(), connectors.NewJSONL(), IngestOptions{})
	require.ErrorIs(t, err, ErrClosed)
}

func TestGOMAXPROCSInProcess(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	prev := runtime.GOMAXPROCS(1)
	one := packsFor(t, e)
	runtime.GOMAXPROCS(8)
	eight := packsFor(t, e)
	runtime.GOMAXPROCS(prev)
	require.Equal(t, one, eight)
}

func TestCorruptIndexFilesAreRefused(t *testing.T) {
	build := func(t *testing.T) string {
		dir := t.TempDir()
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		ingestCorpus(t, e)
		require.NoError(t, e.Close())
		return dir
	}
	batch := func(dir string) string {
		bs, _ := filepath.Glob(filepath.Join(dir, "chunks", "*.jsonl"))
		return bs[0]
	}
	cases := []struct {
		name    string
		corrupt func(dir string)
		where   string
	}{
		{"truncated batch file", func(dir string) {
			raw, _ := os.ReadFile(batch(dir))
			os.WriteFile(batch(dir), raw[:len(raw)/2], 0o644)
		}, ".jsonl hashes to"},
		{"batch file missing", func(dir string) { os.Remove(batch(dir)) }, "no such file"},
		{"manifest of a format no evpack wrote", func(dir string) {
			m := storagetest.ReadManifest(t, dir)
			m.Format = "evpack-index/0"          // a later one is ErrNewerFormat (TestNewerFormatIsNotCorrupt)
			storagetest.WriteManifest(t, dir, m) // sealed anew: only the version is wrong
		}, "evpack-index/0"},
		{"manifest edited", func(dir string) {
			raw, _ := os.ReadFile(filepath.Join(dir, storage.ManifestName))
			os.WriteFile(filepath.Join(dir, storage.ManifestName), bytes.Replace(raw, []byte(`"generation": 1`), []byte(`"generation": 0`), 1), 0o644)
		}, "checksum mismatch"},
		{"manifest not JSON", func(dir string) { os.WriteFile(filepath.Join(dir, storage.ManifestName), []byte("{"), 0o644) }, storage.ManifestName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := build(t)
			c.corrupt(dir)
			err := openFull(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), c.where)
		})
	}
}

// Merge on a memory index returns (bleve's in-memory merge would wait
// forever for a merger that never runs).
func TestMergeMemory(t *testing.T) {
	e := checked(t, memEngine(t, Options{}))
	ingestCorpus(t, e)
	require.NoError(t, e.Merge(context.Background()))
}
