package evpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/retrieve"
	"github.com/evpack/evpack/retrieve/vectors"
)

// testVectors writes 16-dimensional vectors for every word of the test
// corpus and the property tests' vocabulary, each derived from BLAKE3 of the
// word: deterministic, data-free, and meaningless but for determinism tests.
func testVectors(t testing.TB) string { return testVectorsDims(t, 16) }

// testVectorsDims is testVectors with dims components (at most 32).
func testVectorsDims(t testing.TB, dims int) string {
	t.Helper()
	seen := map[string]bool{}
	var words []string
	add := func(text string) {
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	for _, name := range []string{"records-act.json", "guidance.jsonl"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
		require.NoError(t, err)
		add(string(raw))
	}
	add(strings.Join(words, " "))
	add(strings.Join(propertyWords, " "))
	vecs := make([][]float64, len(words))
	for i, w := range words {
		h := blake3.Sum256([]byte(w))
		vecs[i] = make([]float64, dims)
		for j := range vecs[i] {
			vecs[i][j] = float64(int8(h[j])) / 128
		}
	}
	path := filepath.Join(t.TempDir(), "test.evv")
	require.NoError(t, vectors.Write(path, words, vecs))
	return path
}

func testEmbedder(t testing.TB, path string) retrieve.Embedder {
	t.Helper()
	tb, err := vectors.Load(path)
	require.NoError(t, err)
	return retrieve.NewSIF(tb)
}

func TestGoldenPacksDense(t *testing.T) {
	e := memEngine(t, Options{Embedder: testEmbedder(t, testVectors(t))})
	ingestCorpus(t, e)
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		p, err := e.Query(context.Background(), r.request())
		require.NoError(t, err)
		require.Equal(t, "lexical,dense", p.Fingerprint.Get("legs"))
		path := filepath.Join("testdata", "golden-dense", r.Name+".json")
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, p.Bytes(), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -run TestGoldenPacksDense -update to create it")
		require.Equal(t, string(want), string(p.Bytes()), r.Name)
	}
}

func TestDenseReplayAcrossProcessesAndShuffles(t *testing.T) {
	vecs := testVectors(t)
	t.Run("exact", func(t *testing.T) { denseReplay(t, vecs, Options{}, nil) })
	// Every request walks the graph, which a fresh process rebuilds.
	t.Run("hnsw", func(t *testing.T) {
		denseReplay(t, vecs, Options{DenseIndex: "hnsw", Graph: retrieve.GraphOptions{ExactFactor: -1}}, []string{"EVPACK_REPLAY_HNSW=1"})
	})
}

// denseReplay builds an index on disk with the dense leg configured by opts
// and checks that a fresh process (GOMAXPROCS 1, env added) reopening it,
// and a shuffled, batched ingest, give the same packs.
func denseReplay(t *testing.T, vecs string, opts Options, env []string) {
	ctx := context.Background()
	dir := t.TempDir()
	opts.Embedder = testEmbedder(t, vecs)
	e, err := Open(dir, opts)
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	hashes := map[string]string{}
	for name, b := range want {
		hashes[name] = fmt.Sprintf("blake3:%x", blake3.Sum256(b))
	}
	require.NoError(t, e.Close())

	if !testing.Short() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), "EVPACK_REPLAY_DIR="+dir, "EVPACK_REPLAY_VECTORS="+vecs, "GOMAXPROCS=1"), env...)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, hash, _ := strings.Cut(line, " ")
			got[name] = hash
		}
		require.Equal(t, hashes, got, "a fresh process reloading the index and the vectors")
	}

	recs := corpusRecords(t)
	rng := rand.New(rand.NewPCG(7, 7))
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	s := memEngine(t, opts)
	for i := 0; i < len(recs); i += 5 { // many small batches: SIF counts grow per batch
		_, err := s.Ingest(ctx, connectors.Records(recs[i:min(i+5, len(recs))]), IngestOptions{})
		require.NoError(t, err)
	}
	require.Equal(t, withoutGeneration(t, want), withoutGeneration(t, packsFor(t, s)), "shuffled, batched ingest")
}

func TestNeverCitesTheFutureDense(t *testing.T) {
	seed := propertySeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	emb := testEmbedder(t, testVectors(t))
	for round := 0; round < 3; round++ {
		recs := randomCorpus(rng)
		byID := map[string]evidence.Chunk{}
		for _, r := range recs {
			byID[r.Chunk.ID] = r.Chunk
		}
		for _, o := range []Options{
			{Legs: "dense"},
			{Legs: "lexical,dense"},
			// Always the graph walk (ExactFactor -1): eligibility must hold
			// inside the walk too.
			{Legs: "dense", DenseIndex: "hnsw", Graph: retrieve.GraphOptions{ExactFactor: -1}},
			{Legs: "lexical,dense", DenseIndex: "hnsw"},
		} {
			o.Embedder, o.Pool = emb, 1+rng.IntN(20)
			e := memEngine(t, o)
			_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
			require.NoError(t, err)
			for q := 0; q < 40; q++ {
				randomQuery(t, e, rng, byID, seed)
			}
		}
	}
}

func TestDenseOptionsAndViews(t *testing.T) {
	_, err := OpenMemory(Options{Legs: "dense"})
	require.ErrorIs(t, err, ErrBadOptions, "a dense leg needs an embedder")
	_, err = OpenMemory(Options{Legs: "semantic"})
	require.ErrorIs(t, err, ErrBadOptions)
	vecs := testVectors(t)
	e := memEngine(t, Options{Embedder: testEmbedder(t, vecs)})
	ingestCorpus(t, e)
	_, err = e.View(Options{Embedder: testEmbedder(t, vecs)})
	require.ErrorIs(t, err, ErrBadOptions, "the embedder belongs to the index")
	lex, err := e.View(Options{Legs: "lexical"})
	require.NoError(t, err)
	p, err := lex.Query(context.Background(), Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Equal(t, "off", p.Fingerprint.Get("dense"))
	dense, err := e.View(Options{Legs: "dense"})
	require.NoError(t, err)
	p, err = dense.Query(context.Background(), Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Contains(t, p.Fingerprint.Get("dense"), "exact int8 scan, static sif")
	require.Contains(t, p.Trace.Steps[0], "dense: exact scan of")
}

// TestHNSWDenseIndex: the graph path is chosen by the measured rule and
// traced; on a corpus this small the walk finds what the exact scan finds, so
// the citations are the golden ones and only the fingerprint and the trace's
// dense line differ; packs replay; the options are validated.
func TestHNSWDenseIndex(t *testing.T) {
	ctx := context.Background()
	vecs := testVectors(t)
	emb := testEmbedder(t, vecs)
	for _, tc := range []struct {
		name, why string
		opts      Options
	}{
		{"unknown-index", "only exact and hnsw exist", Options{Embedder: emb, DenseIndex: "ivf"}},
		{"hnsw-without-embedder", "a graph needs vectors", Options{DenseIndex: "hnsw"}},
		{"graph-options-without-hnsw", "settings that would do nothing are a mistake", Options{Embedder: emb, Graph: retrieve.GraphOptions{M: 8}}},
		{"bad-graph-options", "M 1 cannot make a navigable graph", Options{Embedder: emb, DenseIndex: "hnsw", Graph: retrieve.GraphOptions{M: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenMemory(tc.opts)
			require.ErrorIs(t, err, ErrBadOptions, tc.why)
		})
	}

	exact := memEngine(t, Options{Embedder: emb})
	ingestCorpus(t, exact)
	walk := memEngine(t, Options{Embedder: emb, DenseIndex: "hnsw", Graph: retrieve.GraphOptions{ExactFactor: -1}})
	ingestCorpus(t, walk)
	scan := memEngine(t, Options{Embedder: emb, DenseIndex: "hnsw"})
	ingestCorpus(t, scan)
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		want, err := exact.Query(ctx, r.request())
		require.NoError(t, err)
		for _, tc := range []struct {
			e    *Engine
			step string
		}{
			{walk, "dense: hnsw walk, "},
			{scan, "² < 2000 × "}, // a few dozen chunks: always below the threshold
		} {
			got, err := tc.e.Query(ctx, r.request())
			require.NoError(t, err)
			require.Equal(t, want.Citations, got.Citations, r.Name)
			require.Contains(t, got.Fingerprint.Get("dense"), "hnsw m=16 ef_construction=128 ef_search=128 seed=1")
			require.Contains(t, got.Fingerprint.Get("dense"), "(approximate;")
			if len(got.Citations) > 0 {
				require.Contains(t, strings.Join(got.Trace.Steps, "\n"), tc.step, r.Name)
			}
			again, err := tc.e.Query(ctx, r.request())
			require.NoError(t, err)
			require.Equal(t, got.Bytes(), again.Bytes())
		}
	}

	_, err = exact.View(Options{DenseIndex: "hnsw"})
	require.ErrorIs(t, err, ErrBadOptions, "a view cannot add a graph the index does not keep")
	_, err = walk.View(Options{DenseIndex: "hnsw", Graph: retrieve.GraphOptions{M: 8, EfConstruction: 128, Seed: 1}})
	require.ErrorIs(t, err, ErrBadOptions, "a view cannot change how the graph was built")
	wide, err := walk.View(Options{DenseIndex: "hnsw", Graph: retrieve.GraphOptions{EfSearch: 256, ExactFactor: -1}})
	require.NoError(t, err)
	require.Equal(t, 256, wide.Options().Graph.EfSearch)
	p, err := wide.Query(ctx, Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Contains(t, strings.Join(p.Trace.Steps, "\n"), "ef 256")
	plain, err := walk.View(Options{})
	require.NoError(t, err)
	require.Equal(t, DenseExact, plain.Options().DenseIndex, "a view's options are its own")
}

// TestDensePinnedReplaysInOneScopeIndex: with a corpus-free embedder and
// HNSW, an index whose chunks are all in one scope (acme's and the shared
// corpus) walks the graph stored with the latest generation for a request
// of the latest state; a pack pinned to an earlier generation must not, or
// it would read acme's later chunks on its way and stop verifying.
func TestDensePinnedReplaysInOneScopeIndex(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{Legs: "lexical,dense", DenseIndex: "hnsw", Graph: retrieve.GraphOptions{ExactFactor: -1},
		Embedder: &countingFree{Embedder: testEmbedder(t, testVectors(t))}})
	var recs []connectors.Record
	for _, r := range corpusRecords(t) {
		if r.Chunk.Tenant != "globex" {
			recs = append(recs, r)
		}
	}
	_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	r := Request{Question: "how long must records be retained", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"}
	before, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.Contains(t, strings.Join(before.Trace.Steps, "\n"), "hnsw walk", "the latest request walks the stored graph")
	_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 50, 7)), IngestOptions{})
	require.NoError(t, err)
	v, err := e.Verify(ctx, before.Bytes())
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
}

// countingFree is a corpus-free embedder (as a model is) that counts the
// passages it embeds.
type countingFree struct {
	retrieve.Embedder
	passages int
}

func (c *countingFree) CorpusFree() bool { return true }

func (c *countingFree) Embed(ctx context.Context, f [][]int32, _ *retrieve.Counts, query bool) ([][]int8, error) {
	if !query {
		c.passages += len(f)
	}
	return c.Embedder.Embed(ctx, f, nil, query)
}

func TestCorpusFreeEmbedderEmbedsEachChunkOnce(t *testing.T) {
	emb := &countingFree{Embedder: testEmbedder(t, testVectors(t))}
	e := memEngine(t, Options{Embedder: emb})
	ingestCorpus(t, e) // two batches: 11 statute chunks, then 7 JSONL chunks
	require.Equal(t, 18, emb.passages, "the second commit embeds only its own chunks")
}

// TestDenseIndexPersistsForCorpusFreeEmbedders: a model's vectors are stored
// with the generation, loaded on Open by the same embedder, rebuilt for
// another, and refused when corrupted.
func TestDenseIndexPersistsForCorpusFreeEmbedders(t *testing.T) {
	vecs := testVectors(t)
	dir := t.TempDir()
	first := &countingFree{Embedder: testEmbedder(t, vecs)}
	e, err := Open(dir, Options{Embedder: first})
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	require.Equal(t, 18, first.passages)
	files, err := filepath.Glob(filepath.Join(dir, "dense-*.bin"))
	require.NoError(t, err)
	require.Len(t, files, 1, "a commit supersedes the previous generation's file")

	again := &countingFree{Embedder: testEmbedder(t, vecs)}
	e2, err := Open(dir, Options{Embedder: again})
	require.NoError(t, err)
	require.Zero(t, again.passages, "reopening loads the stored vectors instead of embedding")
	require.Equal(t, want, packsFor(t, e2))
	require.NoError(t, e2.Check())
	require.NoError(t, e2.Close())

	other := &countingFree{Embedder: testEmbedder(t, testVectorsDims(t, 8))}
	e3, err := Open(dir, Options{Embedder: other})
	require.NoError(t, err)
	require.Equal(t, 18, other.passages, "another embedder's vectors are not reused")
	require.NoError(t, e3.Close())

	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	raw[len(raw)/2] ^= 1
	require.NoError(t, os.WriteFile(files[0], raw, 0o644))
	_, err = Open(dir, Options{Embedder: &countingFree{Embedder: testEmbedder(t, vecs)}})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), files[0]+" hashes to")
}

// TestGraphPersistsWithTheDenseIndex: with a corpus-free embedder the graph
// is stored beside the vectors, each commit superseding the last; Open
// loads it (a corrupted one fails the open); other build settings build a
// new graph instead.
func TestGraphPersistsWithTheDenseIndex(t *testing.T) {
	vecs := testVectors(t)
	dir := t.TempDir()
	opts := func(g retrieve.GraphOptions) Options {
		return Options{Embedder: &countingFree{Embedder: testEmbedder(t, vecs)}, DenseIndex: "hnsw", Graph: g}
	}
	walk := retrieve.GraphOptions{ExactFactor: -1}
	e, err := Open(dir, opts(walk))
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	graphs, err := filepath.Glob(filepath.Join(dir, "graph-*.bin"))
	require.NoError(t, err)
	require.Len(t, graphs, 1, "a commit supersedes the previous generation's graph")
	m := storagetest.ReadManifest(t, dir)
	require.Equal(t, filepath.Base(graphs[0]), m.Dense.Graph)
	require.Equal(t, "m=16 ef_construction=128 seed=1", m.Dense.GraphBuild)

	e2, err := Open(dir, opts(walk))
	require.NoError(t, err)
	require.Equal(t, want, packsFor(t, e2), "packs from the loaded graph")
	require.NoError(t, e2.Close())

	e3, err := Open(dir, opts(retrieve.GraphOptions{M: 8, ExactFactor: -1}))
	require.NoError(t, err, "other build settings: built anew, not refused")
	require.NoError(t, e3.Close())

	// The round build is named wherever the sequential one is implied: in
	// the manifest, in the stored graph and in every pack's fingerprint.
	rounds := retrieve.GraphOptions{ExactFactor: -1, Build: retrieve.BuildRounds(retrieve.DefaultGraphRounds)}
	rdir := t.TempDir()
	er, err := Open(rdir, opts(rounds))
	require.NoError(t, err)
	ingestCorpus(t, er)
	wantRounds := packsFor(t, er)
	p, err := er.Query(context.Background(), Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Contains(t, p.Fingerprint.Get("dense"), "exact_factor=-1 build=rounds/64 (approximate;")
	_, err = er.View(Options{DenseIndex: "hnsw", Graph: retrieve.GraphOptions{Build: retrieve.BuildSequential}})
	require.ErrorIs(t, err, ErrBadOptions, "a view cannot change the build")
	same, err := er.View(Options{DenseIndex: "hnsw", Graph: retrieve.GraphOptions{EfSearch: 64}})
	require.NoError(t, err, "a view without a build keeps the index's")
	require.Equal(t, rounds.Build, same.Options().Graph.Build)
	require.NoError(t, er.Close())
	require.Equal(t, "m=16 ef_construction=128 seed=1 build=rounds/64", storagetest.ReadManifest(t, rdir).Dense.GraphBuild)
	er2, err := Open(rdir, opts(rounds))
	require.NoError(t, err)
	require.Equal(t, wantRounds, packsFor(t, er2), "packs from the loaded round graph")
	require.NoError(t, er2.Close())
	er3, err := Open(rdir, opts(walk))
	require.NoError(t, err, "the sequential build over a stored round graph: built anew, not refused")
	require.NoError(t, er3.Close())

	raw, err := os.ReadFile(graphs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(graphs[0], raw[:len(raw)-7], 0o644))
	_, err = Open(dir, opts(walk))
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), graphs[0]+" hashes to", "the manifest's checksum catches it before the graph's own seal")
}

// wrongDims returns vectors one component short for texts containing word.
type wrongDims struct {
	retrieve.Embedder
	word string
}

func (w wrongDims) Analyze(text string) []int32 {
	f := w.Embedder.Analyze(text)
	if strings.Contains(text, w.word) {
		f = append(f, -1) // a marker Embed sees
	}
	return f
}

func (w wrongDims) Embed(ctx context.Context, f [][]int32, c *retrieve.Counts, query bool) ([][]int8, error) {
	clean := make([][]int32, len(f))
	for i, x := range f {
		clean[i] = slices.DeleteFunc(slices.Clone(x), func(v int32) bool { return v < 0 })
	}
	vs, err := w.Embedder.Embed(ctx, clean, c, query)
	for i, x := range f {
		if slices.Contains(x, -1) && vs[i] != nil {
			vs[i] = vs[i][1:]
		}
	}
	return vs, err
}

// TestEmbedderOfWrongDimensions: a vector of the wrong size is an error
// that names the chunk, at ingest (nothing committed) and at query time.
func TestEmbedderOfWrongDimensions(t *testing.T) {
	ctx := context.Background()
	emb := wrongDims{Embedder: testEmbedder(t, testVectors(t)), word: "Penalties"}
	e := memEngine(t, Options{Embedder: emb})
	_, err := e.Ingest(ctx, connectors.Records(corpusRecords(t)), IngestOptions{})
	require.ErrorIs(t, err, retrieve.ErrDims)
	require.Contains(t, err.Error(), "chunk records-act/art-4@")
	require.Zero(t, e.st.Gen, "nothing committed")
	q := wrongDims{Embedder: testEmbedder(t, testVectors(t)), word: "xyzzy"}
	e2 := memEngine(t, Options{Embedder: q})
	ingestCorpus(t, e2)
	_, err = e2.Query(ctx, Request{Question: "xyzzy retention", AsOf: asof.MustDate("2026-02-01")})
	require.ErrorIs(t, err, retrieve.ErrDims)
}

// TestChunkWithNoKnownWords: a chunk the embedder has no features for keeps
// a row (without a vector) in the dense index, so a stored index and Check
// agree with the store.
func TestChunkWithNoKnownWords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	emb := &countingFree{Embedder: testEmbedder(t, testVectors(t))}
	e, err := Open(dir, Options{Embedder: emb, DenseIndex: "hnsw"})
	require.NoError(t, err)
	checked(t, e)
	rec := corpusRecords(t)[0]
	rec.Chunk.ID, rec.Chunk.Text = "qqq-1", "zzzqx vvvqy" // no word the vectors know
	rec.Chunk.ContentHash = rec.Chunk.ComputeHash()
	_, err = e.Ingest(ctx, connectors.Records(append(corpusRecords(t), rec)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	e2, err := Open(dir, Options{Embedder: emb, DenseIndex: "hnsw"})
	require.NoError(t, err, "the stored dense index covers every chunk")
	more := rec
	more.Chunk.ID = "qqq-2"
	_, err = checked(t, e2).Ingest(ctx, connectors.Records([]connectors.Record{more}), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e2.Check(), "a later commit keeps the row too")
	require.NoError(t, e2.Close())
	e3, err := Open(dir, Options{Embedder: emb, DenseIndex: "hnsw"})
	require.NoError(t, err)
	require.NoError(t, checked(t, e3).Check())
}

// TestDenseScopeIsSealed: a dense pack is a function of its scope at its
// generation, with SIF over static vectors (word weights from corpus
// frequencies) and with a corpus-free embedder (a model's vectors, kept
// with the index, and its stored graph). Another tenant's ingest leaves it
// byte-identical; a later commit to its own scope moves the latest pack but
// the pack still verifies at its generation, exactly and through the HNSW
// graph, whether the request walks it or scans its few eligible chunks.
func TestDenseScopeIsSealed(t *testing.T) {
	ctx := context.Background()
	vecs := testVectors(t)
	sif := func() retrieve.Embedder { return testEmbedder(t, vecs) }
	model := func() retrieve.Embedder { return &countingFree{Embedder: testEmbedder(t, vecs)} }
	walk := retrieve.GraphOptions{ExactFactor: -1}
	for _, tc := range []struct {
		name string
		emb  func() retrieve.Embedder
		opts Options
	}{
		{"exact", sif, Options{Legs: "lexical,dense"}},
		{"hnsw", sif, Options{Legs: "lexical,dense", DenseIndex: "hnsw", Graph: walk}},
		{"model exact", model, Options{Legs: "lexical,dense"}},
		// The graph over the whole index walked through globex's vectors,
		// and its trace counted them: globex's ingest moved acme's pack.
		{"model hnsw walk", model, Options{Legs: "lexical,dense", DenseIndex: "hnsw", Graph: walk}},
		{"model hnsw small scope", model, Options{Legs: "lexical,dense", DenseIndex: "hnsw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Embedder = tc.emb()
			e := checked(t, memEngine(t, tc.opts))
			ingestCorpus(t, e)
			r := Request{Question: "how long must records be retained", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"}
			before, err := e.Query(ctx, r)
			require.NoError(t, err)

			_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "globex", "g", 50, 7)), IngestOptions{})
			require.NoError(t, err)
			after, err := e.Query(ctx, r)
			require.NoError(t, err)
			require.Equal(t, string(before.Bytes()), string(after.Bytes()), "another tenant's words moved acme's dense pack")

			_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "", "s", 50, 8)), IngestOptions{})
			require.NoError(t, err)
			moved, err := e.Query(ctx, r)
			require.NoError(t, err)
			require.NotEqual(t, string(before.Bytes()), string(moved.Bytes()), "the shared corpus is in acme's scope")
			v, err := e.Verify(ctx, before.Bytes())
			require.NoError(t, err)
			require.True(t, v.OK(), "%v", v.Problems)
		})
	}
}
