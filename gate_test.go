package evpack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

// citableRecord returns a record that is citable as of any day from
// 2024-01-01, owned by tenant.
func citableRecord(id, tenant, text string) connectors.Record {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return connectors.Record{Where: "mem:" + id, Chunk: evidence.Chunk{
		ID: id, DocID: "doc-" + id, Version: "1", Text: text, SourceURL: "https://example.test/" + id,
		Connector: "jsonl", RetrievedAt: at, Anchor: asof.Anchor{Field: "anchor", At: at}, Tenant: tenant,
		Meta: map[string]string{"kind": "policy"},
	}}
}

// TestIngestRefusesBadTenantsAndMeta: a tenant or a metadata value that is not
// valid UTF-8, holds a control character or is too long is refused at ingest
// with a typed error naming the chunk and the value.
func TestIngestRefusesBadTenantsAndMeta(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, reason string
		edit         func(c *evidence.Chunk)
		want         error
		value        string
	}{
		{"tenant spelled like the shared tenant's index term", "it would read the shared corpus's term and leak into shared packs",
			func(c *evidence.Chunk) { c.Tenant = "\x00shared" }, evidence.ErrBadTenant, "\x00shared"},
		{"tenant with a newline", "control characters are never names", func(c *evidence.Chunk) { c.Tenant = "acme\n" }, evidence.ErrBadTenant, "acme\n"},
		{"tenant with a C1 control", "unicode.IsControl covers C1 too", func(c *evidence.Chunk) { c.Tenant = "acme\u0085" }, evidence.ErrBadTenant, "acme\u0085"},
		{"tenant not UTF-8", "a pack naming it would not parse back", func(c *evidence.Chunk) { c.Tenant = "acme\xff" }, evidence.ErrBadTenant, "acme\xff"},
		{"tenant too long", "names are bounded", func(c *evidence.Chunk) { c.Tenant = strings.Repeat("a", evidence.MaxTenantLen+1) }, evidence.ErrBadTenant, strings.Repeat("a", evidence.MaxTenantLen+1)},
		{"meta value not UTF-8", "a citation carrying it would not parse back", func(c *evidence.Chunk) { c.Meta["kind"] = "pol\xffcy" }, evidence.ErrBadMeta, "pol\xffcy"},
		{"meta value with a control character", "filters match values exactly; no hidden bytes", func(c *evidence.Chunk) { c.Meta["kind"] = "policy\x00" }, evidence.ErrBadMeta, "policy\x00"},
		{"meta value too long", "values are bounded", func(c *evidence.Chunk) { c.Meta["kind"] = strings.Repeat("v", evidence.MaxMetaValueLen+1) }, evidence.ErrBadMeta, strings.Repeat("v", evidence.MaxMetaValueLen+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			ingestCorpus(t, e)
			rec := citableRecord("bad-1", "", "Records are retained for twelve years under this policy.")
			tc.edit(&rec.Chunk)
			_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
			require.ErrorIs(t, err, tc.want, tc.reason)
			var ce *evidence.ChunkError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "bad-1", ce.ChunkID)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", tc.value))
			require.NotContains(t, fullState(t, e).Chunks, "bad-1", "nothing of the batch applied")
		})
	}
	t.Run("accepted names", func(t *testing.T) {
		e := memEngine(t, Options{})
		for i, tenant := range []string{"acme", "Ünïcode Tenant", "a b", strings.Repeat("é", evidence.MaxTenantLen/2)} {
			rec := citableRecord(fmt.Sprintf("ok-%d", i), tenant, "Records are retained for twelve years under this policy.")
			rec.Chunk.Meta["kind"] = strings.Repeat("v", evidence.MaxMetaValueLen)
			_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
			require.NoError(t, err, "tenant %q", tenant)
		}
	})
}

// TestSharedTenantCannotBeImpersonated: the shared tenant "" is indexed under
// an internal term; no tenant name may reach it, so a shared request never
// sees a chunk whose owner spelled that term.
func TestSharedTenantCannotBeImpersonated(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	rec := citableRecord("impostor-1", "\x00shared", "A licensed firm must retain records of client transactions for one day only.")
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrBadTenant)
	p, err := e.Query(ctx, Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p), "impostor-1")
	_, err = e.Query(ctx, Request{Question: "retain records", AsOf: asof.MustDate("2026-02-01"), Tenant: "\x00shared"})
	require.ErrorIs(t, err, ErrBadRequest)
	require.ErrorIs(t, err, evidence.ErrBadTenant)
}

// TestRequestNamesAreValidated: a request's tenant, filter keys and filter
// values obey the ingest rules; every accepted request's pack parses back to
// the same bytes.
func TestRequestNamesAreValidated(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	day := asof.MustDate("2026-02-01")
	q := "How long does the firm retain client transaction records?"
	bad := []struct {
		name, reason string
		req          Request
		want         error
		value        string
	}{
		{"tenant spelled like the shared term", "would equal the shared tenant", Request{Tenant: "\x00shared"}, evidence.ErrBadTenant, "\x00shared"},
		{"tenant not UTF-8", "the pack would not parse back", Request{Tenant: "acme\xff"}, evidence.ErrBadTenant, "acme\xff"},
		{"tenant with a tab", "control characters are never names", Request{Tenant: "ac\tme"}, evidence.ErrBadTenant, "ac\tme"},
		{"tenant too long", "no stored tenant can be this long", Request{Tenant: strings.Repeat("t", evidence.MaxTenantLen+1)}, evidence.ErrBadTenant, strings.Repeat("t", evidence.MaxTenantLen+1)},
		{"filter key upper case", "stored keys are [a-z0-9_.-]", Request{Filters: map[string]string{"Kind": "policy"}}, evidence.ErrBadMeta, "Kind"},
		{"filter key with =", "the index term is key=value", Request{Filters: map[string]string{"a=b": "c"}}, evidence.ErrBadMeta, "a=b"},
		{"filter key empty", "no stored key is empty", Request{Filters: map[string]string{"": "c"}}, evidence.ErrBadMeta, ""},
		{"filter value not UTF-8", "the pack would not parse back", Request{Filters: map[string]string{"kind": "pol\xffcy"}}, evidence.ErrBadMeta, "pol\xffcy"},
		{"filter value with a control character", "no stored value holds one", Request{Filters: map[string]string{"kind": "policy\n"}}, evidence.ErrBadMeta, "policy\n"},
		{"filter value too long", "no stored value can be this long", Request{Filters: map[string]string{"kind": strings.Repeat("v", evidence.MaxMetaValueLen+1)}}, evidence.ErrBadMeta, strings.Repeat("v", evidence.MaxMetaValueLen+1)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.Question, r.AsOf = q, day
			_, err := e.Query(ctx, r)
			require.ErrorIs(t, err, ErrBadRequest, tc.reason)
			require.ErrorIs(t, err, tc.want, tc.reason)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", tc.value))
		})
	}
	good := []struct {
		name string
		req  Request
	}{
		{"shared", Request{}},
		{"tenant", Request{Tenant: "acme"}},
		{"unicode tenant", Request{Tenant: "Ünïcode Tenant"}},
		{"longest tenant", Request{Tenant: strings.Repeat("é", evidence.MaxTenantLen/2)}},
		{"filters", Request{Tenant: "acme", Filters: map[string]string{"kind": "policy", "x.y-z_1": "välue with \"quotes\" and \\"}}},
		{"empty filter value", Request{Filters: map[string]string{"kind": ""}}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.Question, r.AsOf = q, day
			p, err := e.Query(ctx, r)
			require.NoError(t, err)
			back, err := evidence.Parse(p.Bytes())
			require.NoError(t, err)
			require.Equal(t, p.Bytes(), back.Bytes())
			require.Equal(t, r.Tenant, back.Tenant)
		})
	}
}

// forgingReranker wraps the engine's reranker and edits its output as a
// faulty or hostile custom reranker would.
type forgingReranker struct {
	inner rerank.Reranker
	edit  func([]evidence.Scored) []evidence.Scored
}

func (f forgingReranker) Name() string { return "forging/1" }

func (f forgingReranker) Rerank(ctx context.Context, q string, cands []rerank.Candidate, st rerank.Stats) ([]evidence.Scored, error) {
	out, err := f.inner.Rerank(ctx, q, cands, st)
	if err != nil {
		return nil, err
	}
	return f.edit(out), nil
}

// TestRerankerOutputMustBePermutation: a reranker that returns an ID it was
// not given (another tenant's chunk), repeats one or leaves one out is an
// error naming the reranker and the chunk; nothing is cited.
func TestRerankerOutputMustBePermutation(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, reason, id string
		edit             func([]evidence.Scored) []evidence.Scored
	}{
		{"adds another tenant's chunk", "acme must never see globex's policy", "globex-policy-1", func(s []evidence.Scored) []evidence.Scored {
			return append([]evidence.Scored{{ChunkID: "globex-policy-1", Score: 2 * evidence.ScoreScale}}, s...)
		}},
		{"adds a chunk from the future", "the pool held only chunks eligible as of the request", "gn-2026-01", func(s []evidence.Scored) []evidence.Scored {
			return append([]evidence.Scored{{ChunkID: "gn-2026-01", Score: 2 * evidence.ScoreScale}}, s...)
		}},
		{"repeats a candidate", "a chunk cited twice", "acme-policy-1", func(s []evidence.Scored) []evidence.Scored {
			return append([]evidence.Scored{{ChunkID: "acme-policy-1", Score: 2 * evidence.ScoreScale}}, s...)
		}},
		{"drops a candidate", "the interface returns all candidates scored", "acme-policy-1", func(s []evidence.Scored) []evidence.Scored {
			var out []evidence.Scored
			for _, x := range s {
				if x.ChunkID != "acme-policy-1" {
					out = append(out, x)
				}
			}
			return out
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			ingestCorpus(t, e)
			v, err := e.View(Options{Reranker: forgingReranker{inner: e.Options().Reranker, edit: tc.edit}})
			require.NoError(t, err)
			p, err := v.Query(ctx, Request{Question: "How long does the firm retain client transaction records under its internal policy?",
				AsOf: asof.MustDate("2025-06-01"), Tenant: "acme"})
			require.ErrorIs(t, err, rerank.ErrNotPermutation, tc.reason)
			require.Nil(t, p)
			require.Contains(t, err.Error(), `"forging/1"`)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", tc.id))
		})
	}
}

// TestVerifyChecksTheRerankerIdentity: a pack made with another reranker (here
// an external one named "forger", whose scores ride in the pack's ledger) does
// not verify on an engine that runs the arithmetic reranker.
func TestVerifyChecksTheRerankerIdentity(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	forger, err := rerank.NewExternal("forger", func(_ context.Context, _ string, texts []string) ([]float64, error) {
		out := make([]float64, len(texts))
		for i, s := range texts {
			out[i] = float64(len(s)) // longest first: any order the forger likes
		}
		return out, nil
	})
	require.NoError(t, err)
	v, err := e.View(Options{Reranker: forger})
	require.NoError(t, err)
	req := Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-02-01")}
	forged, err := v.Query(ctx, req)
	require.NoError(t, err)
	require.NotEmpty(t, forged.Ledger)

	rep, err := e.Verify(ctx, forged.Bytes())
	require.NoError(t, err)
	require.False(t, rep.OK(), "a pack the arithmetic reranker did not rank must not verify")
	require.Contains(t, rep.Problems, fmt.Sprintf("reranker: pack says %q, this engine runs %q", "external/forger", e.Options().Reranker.Name()))
	require.Contains(t, rep.Problems, `reranker_bit_stable: pack says "false", this engine's reranker gives "true"`)

	// The forger's own engine still verifies its pack, and the arithmetic
	// engine its own.
	rep, err = v.Verify(ctx, forged.Bytes())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	own, err := e.Query(ctx, req)
	require.NoError(t, err)
	rep, err = e.Verify(ctx, own.Bytes())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
}

// TestPacksOwnTheirData: a caller that edits a returned pack (its citations'
// metadata, its filters, trace and fingerprint) changes neither the index nor
// later packs.
func TestPacksOwnTheirData(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	req := Request{Question: "retention period records", AsOf: asof.MustDate("2026-02-01"), Filters: map[string]string{"kind": "guidance"}, K: 5}
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	want := p.Bytes()
	require.NotEmpty(t, p.Citations)
	for i := range p.Citations {
		require.Equal(t, "guidance", p.Citations[i].Meta["kind"])
		p.Citations[i].Meta["kind"] = "edited by the caller"
		p.Citations[i].Meta["added"] = "x"
	}
	p.Filters[0].Value = "edited"
	p.Trace.Steps[0] = "edited"
	p.Fingerprint[0].Value = "edited"

	again, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, string(want), string(again.Bytes()), "a later pack is unchanged")
	require.NoError(t, e.Check(), "the index is unchanged")
}

// lyingCache answers every key with the same bytes: a valid pack, but not
// necessarily the one for the key.
type lyingCache struct{ pack []byte }

func (c *lyingCache) Get(string) ([]byte, bool) { return c.pack, true }
func (c *lyingCache) Put(string, []byte)        {}

// TestCacheHitIsCheckedAgainstTheRequest: a cached pack is served only when
// its header is the request's and its fingerprint is what this engine would
// write now; otherwise the pack is recomputed.
func TestCacheHitIsCheckedAgainstTheRequest(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	day := asof.MustDate("2026-02-01")
	q := "How long does the firm retain client transaction records under its internal policy?"
	acmeReq := Request{Question: q, AsOf: day, Tenant: "acme"}
	pack := func(e *Engine, r Request) []byte {
		p, err := e.Query(ctx, r)
		require.NoError(t, err)
		return p.Bytes()
	}
	stale := pack(e, acmeReq)
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{citableRecord("acme-policy-2", "acme", "ACME retains client transaction records for nine years.")}), IngestOptions{})
	require.NoError(t, err)
	want := pack(e, acmeReq)
	require.NotEqual(t, string(stale), string(want))
	none, err := e.View(Options{Reranker: rerank.None{}})
	require.NoError(t, err)

	cases := []struct {
		name, reason string
		cached       []byte
	}{
		{"another tenant's pack", "tenants are sealed: never serve globex's pack to acme", pack(e, Request{Question: q, AsOf: day, Tenant: "globex"})},
		{"the shared tenant's pack", "the shared scope is another scope", pack(e, Request{Question: q, AsOf: day})},
		{"another as-of day", "the header must be the request's", pack(e, Request{Question: q, AsOf: asof.MustDate("2025-02-01"), Tenant: "acme"})},
		{"another question", "the header must be the request's", pack(e, Request{Question: "records", AsOf: day, Tenant: "acme"})},
		{"another k", "the header must be the request's", pack(e, Request{Question: q, AsOf: day, Tenant: "acme", K: 3})},
		{"a filter more", "the header must be the request's", pack(e, Request{Question: q, AsOf: day, Tenant: "acme", Filters: map[string]string{"kind": "policy"}})},
		{"another reranker", "same header, but this engine would not rank it so", pack(none, acmeReq)},
		{"an earlier generation", "same header, but the corpus has changed since", stale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := e.View(Options{Cache: &lyingCache{pack: tc.cached}})
			require.NoError(t, err)
			require.Equal(t, string(want), string(pack(v, acmeReq)), tc.reason)
		})
	}
	t.Run("the right pack is served", func(t *testing.T) {
		v, err := e.View(Options{Cache: &lyingCache{pack: want}})
		require.NoError(t, err)
		require.Equal(t, string(want), string(pack(v, acmeReq)))
	})
}

// TestSameIDOtherTenantIsADuplicate: the content hash covers the tenant, so a
// chunk ID re-ingested with the same text under another tenant is a
// conflicting claim (evidence.ErrDuplicateChunk), never silently skipped.
func TestSameIDOtherTenantIsADuplicate(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	rec := citableRecord("policy-1", "acme", "Records are retained for eight years.")
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
	require.NoError(t, err)
	rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Unchanged, "the identical record is skipped")
	rec.Chunk.Tenant = "globex"
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrDuplicateChunk)
	require.Contains(t, err.Error(), `mem:policy-1: chunk "policy-1"`)
	require.Equal(t, "acme", fullState(t, e).Chunks["policy-1"].Tenant)
}

// TestRefetchedEvidenceIsUnchanged: the same record fetched again later
// (only its retrieval time, and the anchor that falls back to it, differ) is
// skipped and the first fetch kept; a change in anything else is a
// conflicting claim.
func TestRefetchedEvidenceIsUnchanged(t *testing.T) {
	ctx := context.Background()
	later := func(c *evidence.Chunk) { c.RetrievedAt = c.RetrievedAt.Add(48 * time.Hour) }
	cases := []struct {
		name, why       string
		anchoredOnFetch bool // the record has no anchor of its own
		change          func(c *evidence.Chunk)
		dup             bool
	}{
		{"fetched again", "a daily mirror re-reads what it has", false, later, false},
		{"fetched again, anchored on the fetch", "the anchor falls back to the retrieval time", true,
			func(c *evidence.Chunk) { later(c); c.Anchor.At = c.RetrievedAt }, false},
		{"source URL moved", "the citation would send a reader elsewhere", false, func(c *evidence.Chunk) { c.SourceURL += "?v=2" }, true},
		{"anchor of its own moved", "an anchor the source declares is evidence", false, func(c *evidence.Chunk) { c.Anchor.At = c.Anchor.At.Add(24 * time.Hour) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memEngine(t, Options{})
			rec := citableRecord("policy-1", "acme", "Records are retained for eight years.")
			if tc.anchoredOnFetch {
				rec.Chunk.Anchor = asof.Anchor{At: rec.Chunk.RetrievedAt, Field: asof.RetrievedAtField}
			}
			_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
			require.NoError(t, err)
			first := *fullState(t, e).Chunks["policy-1"]
			tc.change(&rec.Chunk)
			rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{rec}), IngestOptions{})
			if tc.dup {
				require.ErrorIs(t, err, evidence.ErrDuplicateChunk, tc.why)
				return
			}
			require.NoError(t, err, tc.why)
			require.Equal(t, 1, rep.Unchanged)
			require.Equal(t, first.ContentHash, fullState(t, e).Chunks["policy-1"].ContentHash, "the first fetch is kept")
		})
	}
}
