package evpack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/rerank"
)

// learnedOptions are the default options, whose reranker is the embedded
// learned model.
func learnedOptions(t testing.TB) Options {
	t.Helper()
	return Options{}
}

// TestGoldenPacksLearned pins the packs of the golden requests in the
// default configuration, ranked by the embedded learned model (integer
// features, integer trees): the same bytes on amd64 and arm64 (.ci/run runs
// it under qemu-aarch64). TestGoldenPacks pins the arithmetic reranker's.
func TestGoldenPacksLearned(t *testing.T) {
	e := memEngine(t, learnedOptions(t))
	_, ok := e.Options().Reranker.(*rerank.Learned)
	require.True(t, ok, "the default reranker is the learned one, not %s", e.Options().Reranker.Name())
	ingestCorpus(t, e)
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		t.Run(r.Name, func(t *testing.T) {
			p, err := e.Query(context.Background(), r.request())
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden-learned", r.Name+".json")
			got := p.Bytes()
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestGoldenPacksLearned -update to create it")
			require.Equal(t, string(want), string(got), "%s: %s", r.Name, r.Reason)
			require.True(t, strings.Contains(string(got), "learned/1 model=blake3:"), "the fingerprint names the model")
		})
	}
}

// TestShuffledIngestGivesIdenticalLearnedPacks: the learned reranker reads
// document order, which is a function of the chunks (position metadata,
// natural ID order), never of the order or batches they arrived in.
func TestShuffledIngestGivesIdenticalLearnedPacks(t *testing.T) {
	assertShuffleInvariant(t, learnedOptions)
}

// TestDocumentOrder: a chunk's place in its document comes from its
// position metadata, else from the natural order of chunk IDs.
func TestDocumentOrder(t *testing.T) {
	st, own := state.NewState(), state.NewBuilding()
	add := func(id, doc, pos string) {
		c := corpusRecords(t)[0].Chunk
		c.ID, c.DocID, c.Version, c.Meta = id, doc, "1", nil
		if pos != "" {
			c.Meta = map[string]string{state.MetaPosition: pos}
		}
		st.Add(1, &c, state.Analyzed{}, own)
	}
	add("d/art-10", "d", "")
	add("d/art-2", "d", "")
	add("d/art-1", "d", "")
	add("e/z", "e", "0")
	add("e/a", "e", "1")
	add("e/m", "e", "x") // not a number: after the positioned ones, by ID
	cases := []struct {
		id   string
		want []string
		pos  int
		why  string
	}{
		{"d/art-2", []string{"d/art-1", "d/art-2", "d/art-10"}, 1, "natural order: 2 before 10"},
		{"e/z", []string{"e/z", "e/a", "e/m"}, 0, "position 0 first, though its ID sorts last"},
		{"e/m", []string{"e/z", "e/a", "e/m"}, 2, "no usable position: after the positioned"},
	}
	for _, c := range cases {
		ids, ts, pos := st.Scope("", 1).Document(c.id)
		require.Equal(t, c.want, ids, c.why)
		require.Equal(t, c.pos, pos, c.why)
		require.Len(t, ts, len(ids), c.why)
	}
	ids, ts, pos := st.Scope("", 1).Document("nowhere")
	require.True(t, ids == nil && ts == nil && pos == -1)

	// The same document ID under another tenant is another document.
	c := corpusRecords(t)[0].Chunk
	c.ID, c.DocID, c.Version, c.Tenant, c.Meta = "acme/d/art-3", "d", "1", "acme", nil
	st.Add(1, &c, state.Analyzed{}, own)
	ids, _, pos = st.Scope("acme", 1).Document("acme/d/art-3")
	require.Equal(t, []string{"acme/d/art-3"}, ids, "a tenant's chunk is not a neighbour of the shared document's")
	require.Equal(t, 0, pos)
	requireDocPlaces(t, st)

	// A later commit into document d copies its list: the new state's
	// places point to the copy, the old state's stay as they were.
	c = corpusRecords(t)[0].Chunk
	c.ID, c.DocID, c.Version, c.Meta = "d/art-0", "d", "1", nil
	next, err := st.Extend(2, time.Unix(0, 0).UTC(), []*evidence.Chunk{&c}, []state.Analyzed{{}}, nil)
	require.NoError(t, err)
	requireDocPlaces(t, next)
	requireDocPlaces(t, st)
	ids, _, pos = next.Scope("", 2).Document("d/art-2")
	require.Equal(t, []string{"d/art-0", "d/art-1", "d/art-2", "d/art-10"}, ids)
	require.Equal(t, 2, pos)
	ids, _, pos = st.Scope("", 1).Document("d/art-2")
	require.Equal(t, []string{"d/art-1", "d/art-2", "d/art-10"}, ids)
	require.Equal(t, 1, pos)
	ids, _, pos = next.Scope("", 1).Document("d/art-0")
	require.True(t, ids == nil && pos == -1, "a scope at generation 1 does not see a chunk of generation 2")
}

// TestFallbackIsInTheTrace: a learned model that cannot be loaded falls back
// to the arithmetic reranker, and every pack says so in its trace (and its
// fingerprint), never silently.
func TestFallbackIsInTheTrace(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "model.evm")
	require.NoError(t, os.WriteFile(bad, []byte("not a model"), 0o644))
	rr, err := rerank.LearnedOrFallback(bad)
	require.ErrorIs(t, err, rerank.ErrModel)
	e := memEngine(t, Options{Reranker: rr})
	ingestCorpus(t, e)
	p, err := e.Query(context.Background(), Request{Question: "records retention", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Contains(t, strings.Join(p.Trace.Steps, "\n"), "reranker: the learned model could not be loaded (")
	require.Contains(t, p.Fingerprint.Get("reranker"), "fallback-from=learned")
}
