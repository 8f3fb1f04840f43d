package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/state"
)

// TestHistoryTenants: History says what each commit did per tenant (sorted
// by tenant, every list sorted), counts a supersession that a record
// arriving already ended names, and a purge; Summary names the chunks of a
// small kind only.
func TestHistoryTenants(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	first, second := gdpFetches(t)
	_, err := e.Ingest(ctx, connectors.Records(first), IngestOptions{})
	require.NoError(t, err)
	other := vintage(t, "acme-note", "Records of client transactions are retained for ten years.", "2020-01-01", "", "", "2020-01-02")
	other.Chunk.Tenant = "acme"
	_, err = e.Ingest(ctx, connectors.Records(append(second, other)), IngestOptions{})
	require.NoError(t, err)
	_, err = e.Purge(ctx, []string{"acme-note"}, "erasure request 9")
	require.NoError(t, err)

	h, err := e.History()
	require.NoError(t, err)
	require.Len(t, h, 3)
	require.Equal(t, []state.TenantCommit{{Tenant: "", Added: []string{"gdp@2020-04-29"}}}, h[0].Tenants)
	require.Equal(t, []state.TenantCommit{
		{Tenant: "", Added: []string{"gdp@2020-05-28", "gdp@2020-06-25"}, Superseded: []string{"gdp@2020-04-29", "gdp@2020-05-28"}},
		{Tenant: "acme", Added: []string{"acme-note"}},
	}, h[1].Tenants)
	require.Equal(t, []state.TenantCommit{{Tenant: "acme", Purged: []string{"acme-note"}}}, h[2].Tenants)
	for i := range h {
		require.EqualValues(t, i+1, h[i].Generation)
		require.False(t, h[i].CommittedAt.IsZero())
	}
	require.Equal(t, "2 added (gdp@2020-05-28, gdp@2020-06-25), 2 superseded (gdp@2020-04-29, gdp@2020-05-28)", h[1].Tenants[0].Summary(2))
	require.Equal(t, "2 added, 2 superseded", h[1].Tenants[0].Summary(1))
	require.Equal(t, 4, h[1].Tenants[0].Count())
	require.Equal(t, "nothing", state.TenantCommit{}.Summary(3))
}
