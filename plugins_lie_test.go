package evpack

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// tamperCache hands back each stored pack with its first citation's text
// edited: canonical bytes, header and fingerprint untouched.
type tamperCache struct{ *MemoryCache }

func (c tamperCache) Get(k string) ([]byte, bool) {
	raw, ok := c.MemoryCache.Get(k)
	if !ok {
		return nil, false
	}
	p, err := evidence.Parse(raw)
	if err != nil || len(p.Citations) == 0 {
		return raw, ok
	}
	p.Citations[0].Text = "Records may be destroyed at once."
	return p.Bytes(), true
}

// TestCacheHitsAreCheckedCitationByCitation: a pack read from a cache is
// served only if the index cites its citations as it shows them. The check
// covered the header and the fingerprint alone, so a cached pack from before
// a purge cited the purged chunk's text to a pinned request, and a cache
// that edited a citation's text had it served (an adversarial review, stop
// 79).
func TestCacheHitsAreCheckedCitationByCitation(t *testing.T) {
	ctx := context.Background()
	t.Run("a pack from before a purge", func(t *testing.T) {
		mc, err := NewMemoryCache(100, 1<<20)
		require.NoError(t, err)
		e := memEngine(t, Options{Cache: mc})
		ingestCorpus(t, e)
		_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
		require.NoError(t, err)
		r := Request{Question: "who kept the zqxjk ledger Quillfeather", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", K: 3, Generation: e.st.Gen}
		before, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, "memo-roe", before.Citations[0].ChunkID)
		_, err = e.Purge(ctx, []string{"memo-roe"}, "erasure request")
		require.NoError(t, err)
		after, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.NotContains(t, citedIDs(after), "memo-roe", "the purged chunk is cited from the cache")
	})
	t.Run("a citation's text edited", func(t *testing.T) {
		mc, err := NewMemoryCache(10, 1<<20)
		require.NoError(t, err)
		e := memEngine(t, Options{Cache: tamperCache{mc}})
		ingestCorpus(t, e)
		r := Request{Question: "How long must records be retained?", AsOf: asof.MustDate("2026-02-01")}
		first, err := e.Query(ctx, r)
		require.NoError(t, err)
		second, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, first.Bytes(), second.Bytes(), "the edited hit is recomputed")
	})
}

// ascendingModel is a model reranker (not bit-stable) that scores its pool
// as a distance: lower is better, the opposite of what Reranker asks.
type ascendingModel struct{}

func (ascendingModel) Name() string { return "test/ascending" }
func (ascendingModel) Rerank(ctx context.Context, _ string, cands []rerank.Candidate, _ rerank.Stats) ([]evidence.Scored, error) {
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: int64(i)}
	}
	return out, nil
}

// idSwapper edits the ID of the last candidate it was handed to inject's,
// then ranks that one first.
type idSwapper struct{ inject string }

func (idSwapper) Name() string    { return "test/idswap" }
func (idSwapper) BitStable() bool { return true }
func (r idSwapper) Rerank(ctx context.Context, _ string, cands []rerank.Candidate, _ rerank.Stats) ([]evidence.Scored, error) {
	cands[len(cands)-1].ID = r.inject
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: int64(1000 - i)}
	}
	out[len(out)-1].Score = 5000
	slices.SortFunc(out, func(a, b evidence.Scored) int { return -cmp.Compare(a.Score, b.Score) })
	return out, nil
}

// TestRerankersThatLie: a reranker's output that is not best first is
// ErrNotOrdered (a model's pack was served in its order, and its ledger,
// replayed sorted, never verified); one that edits the candidates it was
// handed cannot plant a chunk the pool did not hold (the permutation was
// checked against the slice it wrote to, and an eligible chunk matching no
// term of the question was cited first).
func TestRerankersThatLie(t *testing.T) {
	ctx := context.Background()
	r := Request{Question: "How long must records be retained?", AsOf: asof.MustDate("2026-02-01"), K: 5}
	e := memEngine(t, Options{Reranker: ascendingModel{}})
	ingestCorpus(t, e)
	_, err := e.Query(ctx, r)
	require.ErrorIs(t, err, rerank.ErrNotOrdered)

	e = memEngine(t, Options{Reranker: idSwapper{inject: "zz-injected"}})
	ingestCorpus(t, e)
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{citableRecord("zz-injected", "", "bananas oranges grapefruit")}), IngestOptions{})
	require.NoError(t, err)
	_, err = e.Query(ctx, r)
	require.ErrorIs(t, err, rerank.ErrNotPermutation)
}

// gatedSIF is an embedder whose first embedding of chunks, once armed,
// says so (entered) and waits for release, then honours its context.
type gatedSIF struct {
	retrieve.Embedder
	entered, release chan struct{}
	once             *sync.Once
	armed            *atomic.Bool
}

func (g gatedSIF) Embed(ctx context.Context, f [][]int32, c *retrieve.Counts, query bool) ([][]int8, error) {
	first := false
	if !query && g.armed.Load() {
		g.once.Do(func() { first = true })
	}
	if first {
		close(g.entered)
		<-g.release
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return g.Embedder.Embed(ctx, f, c, query)
}

// TestACancelledViewBuildFailsNoOtherRequest: a request waiting for a dense
// view another request is building builds it again when that request's
// context ends the build; it got the other's context.Canceled.
func TestACancelledViewBuildFailsNoOtherRequest(t *testing.T) {
	emb := gatedSIF{Embedder: testEmbedder(t, testVectors(t)), entered: make(chan struct{}), release: make(chan struct{}), once: &sync.Once{}, armed: &atomic.Bool{}}
	e := memEngine(t, Options{Embedder: emb})
	ingestCorpus(t, e)
	emb.armed.Store(true)
	r := Request{Question: "how long must records be retained", AsOf: asof.MustDate("2026-02-01")}
	ctx1, cancel := context.WithCancel(context.Background())
	defer cancel()
	err1 := make(chan error, 1)
	go func() { _, err := e.Query(ctx1, r); err1 <- err }()
	<-emb.entered
	err2 := make(chan error, 1)
	go func() { _, err := e.Query(context.Background(), r); err2 <- err }()
	buf := make([]byte, 1<<20) // until the second request waits on the view's build
	for strings.Count(string(buf[:runtime.Stack(buf, true)]), "sync.(*Once).doSlow") < 2 {
		runtime.Gosched()
	}
	cancel()
	close(emb.release)
	require.ErrorIs(t, <-err1, context.Canceled)
	require.NoError(t, <-err2, "a request whose context is live")
}

// fusedModel is a model reranker (not bit-stable) that keeps the fused order.
type fusedModel struct{}

func (fusedModel) Name() string { return "test/fused-model" }
func (fusedModel) Rerank(ctx context.Context, q string, cands []rerank.Candidate, s rerank.Stats) ([]evidence.Scored, error) {
	return rerank.None{}.Rerank(ctx, q, cands, s)
}

// TestVerifyOfALedgerNamesAPurge: a model's pack whose ledger scored a
// chunk purged since (in the pool, not cited) fails Verify saying the scope
// held chunks since purged, as a bit-stable pack's replay does; it said
// only that the index no longer returns the pool.
func TestVerifyOfALedgerNamesAPurge(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{Reranker: fusedModel{}})
	ingestCorpus(t, e)
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	r := Request{Question: "how many years must a firm retain client transaction records", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", K: 10}
	all, err := e.Query(ctx, r)
	require.NoError(t, err)
	pos := slices.Index(citedIDs(all), "memo-roe")
	require.Greater(t, pos, 0, "memo-roe cited, not first: %v", citedIDs(all))
	r.K = pos // memo-roe in the pool and the ledger, not cited
	p, err := e.Query(ctx, r)
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p), "memo-roe")
	_, err = e.Purge(ctx, []string{"memo-roe"}, "erasure")
	require.NoError(t, err)
	v, err := e.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.Contains(t, strings.Join(v.Problems, "\n"), "since purged: memo-roe")
}
