package evpack

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// TestCacheKeyCoversEveryField enumerates every field of Request and Options
// by reflection and proves that changing any one changes the cache key. A
// field added later is enumerated too: if no mutation below fits it, the
// test fails and says so.
func TestCacheKeyCoversEveryField(t *testing.T) {
	vecs := testVectors(t)
	base := Options{Embedder: testEmbedder(t, vecs), K: 5}
	req := Request{Question: "retention period", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme",
		Filters: map[string]string{"kind": "policy"}, K: 3}
	keyFor := func(opts Options, r Request) string {
		e := memEngine(t, opts)
		ingestCorpus(t, e)
		k, err := e.CacheKey(r)
		require.NoError(t, err)
		return k
	}
	want := keyFor(base, req)

	// Request fields.
	rt := reflect.TypeOf(req)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		r := req
		switch f.Name {
		case "Question":
			r.Question += " now"
		case "AsOf":
			r.AsOf = asof.DateFromDays(r.AsOf.Days() + 1)
		case "Tenant":
			r.Tenant = "globex"
		case "Filters":
			r.Filters = map[string]string{"kind": "policy", "year": "2024"}
		case "K":
			r.K++
		case "Generation":
			r.Generation = 1 // the corpus is two commits: an earlier state of the scope
		case "KnownAt":
			// Before any commit: no key at all, so no pack of another
			// state is shared (issue 31 item 12: it was the key of an
			// empty generation 0). An instant inside the history resolves
			// to a generation, as the Generation case does.
			r.KnownAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			e := memEngine(t, base)
			ingestCorpus(t, e)
			_, err := e.CacheKey(r)
			require.ErrorIs(t, err, ErrBeforeFirstCommit)
			continue
		case "Period":
			r.Period = "FY2024"
		case "MinGeneration":
			// A wait, not a ranking: the pack of the generation it reads
			// is the same whoever waited for it, so the key stays.
			r.MinGeneration = 2
			require.Equal(t, want, keyFor(base, r), "MinGeneration must not change the key")
			continue
		default:
			t.Fatalf("Request.%s has no mutation here: add one", f.Name)
		}
		require.NotEqual(t, want, keyFor(base, r), "changing Request.%s must change the key", f.Name)
	}

	// Options fields (after defaults, as the key sees them).
	other := testEmbedder(t, testVectorsDims(t, 8)) // other vectors: another identity
	require.NotEqual(t, base.Embedder.Identity(), other.Identity())
	ot := reflect.TypeOf(base)
	for i := 0; i < ot.NumField(); i++ {
		f := ot.Field(i)
		if f.Tag.Get("cachekey") == "-" {
			continue // Options.Cache: where packs are kept, not how they rank
		}
		o := base
		switch f.Name {
		case "K":
			o.K = 7
		case "Pool":
			o.Pool = 20
		case "RRFK":
			o.RRFK = 30
		case "LexicalWeight":
			o.LexicalWeight = 0.5
		case "DenseWeight":
			o.DenseWeight = 2
		case "Reranker":
			o.Reranker = rerank.None{}
		case "Embedder":
			o.Embedder = other
		case "Legs":
			o.Legs = "dense"
		case "KeepEntityNames":
			o.KeepEntityNames = true
		case "Analyzer":
			o.Analyzer = "standard"
		case "DenseIndex":
			o.DenseIndex = "hnsw"
		case "QuestionPeriods":
			o.QuestionPeriods = true
		case "PeriodList":
			o.PeriodList = 50
		case "PeriodWeight":
			o.PeriodWeight = 3
		case "PeriodBoost":
			o.PeriodBoost = 5
		case "Graph": // against the same index kept with the default graph
			o.DenseIndex, o.Graph = "hnsw", retrieve.GraphOptions{EfSearch: 64}
		default:
			t.Fatalf("Options.%s has no mutation here: add one (or tag it cachekey:\"-\" if it cannot change a pack)", f.Name)
		}
		r := req
		if f.Name == "K" {
			r.K = 0 // Options.K is the default a request without K gets
		}
		baseKey := want
		switch f.Name {
		case "K":
			baseKey = keyFor(base, r)
		case "Graph":
			hnsw := base
			hnsw.DenseIndex = "hnsw"
			baseKey = keyFor(hnsw, r)
		}
		require.NotEqual(t, baseKey, keyFor(o, r), "changing Options.%s must change the key", f.Name)
	}
}

// TestCacheKeyFollowsTheIndex: the key names the request's scope at its
// generation, so a commit to the scope changes it and a commit to another
// tenant leaves it (and the cached pack) valid.
func TestCacheKeyFollowsTheIndex(t *testing.T) {
	cases := []struct {
		name, why     string
		reqTenant     string
		ingestTenant  string
		wantKeyChange bool
	}{
		{"shared commit, shared request", "the shared corpus is the request's scope", "", "", true},
		{"shared commit, tenant request", "a tenant's scope includes the shared corpus", "acme", "", true},
		{"own commit", "the tenant's own chunks", "acme", "acme", true},
		{"another tenant's commit", "tenants are sealed: another's ingest moves nothing", "acme", "globex", false},
		{"a tenant's commit, shared request", "the shared scope does not see tenants", "", "globex", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			ingestCorpus(t, e)
			r := Request{Question: "retention", AsOf: asof.MustDate("2026-02-01"), Tenant: tc.reqTenant}
			k1, err := e.CacheKey(r)
			require.NoError(t, err)
			_, err = e.Ingest(context.Background(), connectors.Records([]connectors.Record{citableRecord(fmt.Sprintf("new-%d", i), tc.ingestTenant, "retention of records")}), IngestOptions{})
			require.NoError(t, err)
			k2, err := e.CacheKey(r)
			require.NoError(t, err)
			require.Equal(t, tc.wantKeyChange, k1 != k2, tc.why)
		})
	}
}

// countingCache counts hits over a MemoryCache.
type countingCache struct {
	*MemoryCache
	mu   sync.Mutex
	hits int
}

func (c *countingCache) Get(k string) ([]byte, bool) {
	b, ok := c.MemoryCache.Get(k)
	if ok {
		c.mu.Lock()
		c.hits++
		c.mu.Unlock()
	}
	return b, ok
}

func TestCacheHitsAndTenants(t *testing.T) {
	mc, err := NewMemoryCache(100, 1<<20)
	require.NoError(t, err)
	cache := &countingCache{MemoryCache: mc}
	e := memEngine(t, Options{Cache: cache})
	ingestCorpus(t, e)
	ctx := context.Background()
	q := "How long does the firm retain client transaction records under its internal policy?"
	acme, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	globex, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: "globex"})
	require.NoError(t, err)
	require.Zero(t, cache.hits, "two tenants never share an entry")
	require.Contains(t, citedIDs(acme), "acme-policy-1")
	require.Contains(t, citedIDs(globex), "globex-policy-1")
	again, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	require.Equal(t, 1, cache.hits)
	require.Equal(t, acme.Bytes(), again.Bytes(), "a hit returns the identical pack bytes")
	n, _ := mc.Len()
	require.Equal(t, 2, n)

	// A store that hands back other bytes is not trusted.
	key, err := e.CacheKey(Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	mc.Put(key, []byte(`{"format":"not a pack"}`))
	fresh, err := e.Query(ctx, Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	require.Equal(t, acme.Bytes(), fresh.Bytes())
}

func TestMemoryCacheBounds(t *testing.T) {
	_, err := NewMemoryCache(0, 10)
	require.ErrorIs(t, err, ErrBadOptions)
	c, err := NewMemoryCache(2, 10)
	require.NoError(t, err)
	c.Put("a", []byte("aaaa"))
	c.Put("b", []byte("bbbb"))
	c.Get("a") // a is now the most recently used
	c.Put("c", []byte("cc"))
	_, okA := c.Get("a")
	_, okB := c.Get("b")
	require.True(t, okA)
	require.False(t, okB, "the least recently used entry goes first")
	c.Put("d", []byte("dddddddd")) // 8 + 2 + 4 > 10 bytes: evict until it fits
	n, size := c.Len()
	require.LessOrEqual(t, size, int64(10))
	require.LessOrEqual(t, n, 2)
	c.Put("huge", make([]byte, 11))
	_, ok := c.Get("huge")
	require.False(t, ok, "a pack over the byte bound is not stored")
}

func TestCacheUnderConcurrency(t *testing.T) {
	mc, err := NewMemoryCache(8, 1<<20)
	require.NoError(t, err)
	e := memEngine(t, Options{Cache: mc})
	ingestCorpus(t, e)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				p, err := e.Query(context.Background(), Request{Question: fmt.Sprintf("records retention %d", i%12),
					AsOf: asof.MustDate("2026-02-01")})
				if err != nil || p == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n, _ := mc.Len()
	require.LessOrEqual(t, n, 8)
}

func BenchmarkQueryCache(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%t", cached), func(b *testing.B) {
			opts := Options{}
			if cached {
				mc, _ := NewMemoryCache(1000, 64<<20)
				opts.Cache = mc
			}
			e, err := OpenMemory(opts)
			require.NoError(b, err)
			defer e.Close()
			ingestCorpus(b, e)
			reqs, _ := loadRequests()
			i := 0
			for b.Loop() {
				if _, err := e.Query(context.Background(), reqs[i%len(reqs)].request()); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
