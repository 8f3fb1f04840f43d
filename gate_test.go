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
			_, err := e.IngestRecords(ctx, []connectors.Record{rec})
			require.ErrorIs(t, err, tc.want, tc.reason)
			var ce *evidence.ChunkError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "bad-1", ce.ChunkID)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", tc.value))
			require.NotContains(t, e.st.chunks, "bad-1", "nothing of the batch applied")
		})
	}
	t.Run("accepted names", func(t *testing.T) {
		e := memEngine(t, Options{})
		for i, tenant := range []string{"acme", "Ünïcode Tenant", "a b", strings.Repeat("é", evidence.MaxTenantLen/2)} {
			rec := citableRecord(fmt.Sprintf("ok-%d", i), tenant, "Records are retained for twelve years under this policy.")
			rec.Chunk.Meta["kind"] = strings.Repeat("v", evidence.MaxMetaValueLen)
			_, err := e.IngestRecords(ctx, []connectors.Record{rec})
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
	_, err := e.IngestRecords(ctx, []connectors.Record{rec})
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
