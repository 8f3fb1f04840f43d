package evpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
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
	ctx := context.Background()
	vecs := testVectors(t)
	dir := t.TempDir()
	e, err := Open(dir, Options{Embedder: testEmbedder(t, vecs)})
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
		cmd.Env = append(os.Environ(), "EVPACK_REPLAY_DIR="+dir, "EVPACK_REPLAY_VECTORS="+vecs, "GOMAXPROCS=1")
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
	s := memEngine(t, Options{Embedder: testEmbedder(t, vecs)})
	for i := 0; i < len(recs); i += 5 { // many small batches: SIF counts grow per batch
		_, err := s.IngestRecords(ctx, recs[i:min(i+5, len(recs))])
		require.NoError(t, err)
	}
	require.Equal(t, want, packsFor(t, s), "shuffled, batched ingest")
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
		for _, legs := range []string{"dense", "lexical,dense"} {
			e := memEngine(t, Options{Embedder: emb, Legs: legs, Pool: 1 + rng.IntN(20)})
			_, err := e.IngestRecords(ctx, recs)
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
	require.Contains(t, err.Error(), "checksum mismatch")
}
