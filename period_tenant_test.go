package evpack

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// tenantFilings returns n chunks of tenant's own filings that name fiscal
// 2021 in their text and metadata, in the words the year leg's questions use.
func tenantFilings(tenant string, n int) []connectors.Record {
	var recs []connectors.Record
	for i := range n {
		id := fmt.Sprintf("%s-10k-fy2021#p%d", tenant, i)
		c := evidence.Chunk{ID: id, DocID: tenant + "-10k-fy2021", Version: "1", Tenant: tenant, Connector: "test",
			Text:      fmt.Sprintf("Capital expenditures for fiscal 2021 were %d million, page %d of the capital expenditures note.", 100+i, i),
			SourceURL: "https://filings.example.org/" + id, RetrievedAt: asof.MustDate("2024-01-10").Start(),
			Anchor: asof.Anchor{At: asof.MustDate("2022-02-28").Start(), Field: "published"}, Valid: asof.Interval{From: asof.MustDate("2022-02-28")},
			Meta: map[string]string{"cik": "northwind", "fiscal_year": "2021", "doc_type": "10-K"}}
		recs = append(recs, connectors.Record{Chunk: c, Where: id})
	}
	return recs
}

// TestYearLegTenantsNeverMix: another tenant's filings of the asked year,
// committed later and in the same words, never appear in nor move a
// tenant's pack ranked for that year, by the question's period or the
// request's: its bytes are those of an index without them.
func TestYearLegTenantsNeverMix(t *testing.T) {
	ctx := context.Background()
	opts := Options{QuestionPeriods: true}
	alone := periodEngine(t, opts)
	mixed := periodEngine(t, opts)
	for _, e := range []*Engine{alone, mixed} {
		_, err := e.Ingest(ctx, connectors.Records(tenantFilings("acme", 3)), IngestOptions{})
		require.NoError(t, err)
	}
	_, err := mixed.Ingest(ctx, connectors.Records(tenantFilings("globex", 40)), IngestOptions{})
	require.NoError(t, err)
	for _, r := range []Request{
		{Question: "What were Northwind's capital expenditures in FY2021?", Tenant: "acme"},
		{Question: "What were Northwind's capital expenditures in FY2021?", Tenant: ""},
		{Question: "capital expenditures", Tenant: "acme", Period: "FY2021"},
		{Question: "capital expenditures", Tenant: "acme", Period: "2021-Q2", Filters: map[string]string{"cik": "northwind"}},
	} {
		r.AsOf, r.K = asof.MustDate("2025-06-30"), 8
		want, err := alone.Query(ctx, r)
		require.NoError(t, err)
		got, err := mixed.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, string(want.Bytes()), string(got.Bytes()), "%+v", r)
		for _, c := range got.Citations {
			require.NotContains(t, c.ChunkID, "globex", "%+v", r)
		}
		if r.Tenant == "acme" {
			require.Contains(t, citedIDs(got), "acme-10k-fy2021#p0", "%+v", r)
		}
	}
}
