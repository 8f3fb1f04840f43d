package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// TestVerifyIsNoOracleForAnotherTenantsChunks: acme posts a pack of its own
// tenant that cites globex's chunk by ID. The answer must be the one for a
// chunk that does not exist: not that it exists, not its content hash, not
// whether a guessed text is its text.
func TestVerifyIsNoOracleForAnotherTenantsChunks(t *testing.T) {
	s := start(t, 16<<20)
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	secret := connectors.Record{Chunk: evidence.Chunk{
		ID: "globex-secret-note", DocID: "globex-secret", Tenant: "globex", Connector: "test",
		Text:      "Globex plans to acquire Initech in May.",
		SourceURL: "https://intranet.globex.example/secret", RetrievedAt: at, Anchor: asof.ResolveAnchor("", time.Time{}, at),
	}}
	_, err := s.eng.Ingest(context.Background(), connectors.Records{secret}, evpack.IngestOptions{})
	require.NoError(t, err)

	own := s.must(t, "GET", packPath("retention policy for client transaction records", "2025-06-01", 3), acmeToken, nil)
	require.Equal(t, http.StatusOK, own.status, "%s", own.body)

	forge := func(id, text string) (int, verifyResponse) {
		p, err := evidence.Parse(own.body)
		require.NoError(t, err)
		require.Equal(t, "acme", p.Tenant)
		p.Citations[0].ChunkID, p.Citations[0].Text = id, text
		p.Citations[0].ContentHash = evidence.Sum([]byte("a guess"))
		r := s.must(t, "POST", "/verify", acmeToken, p.Bytes())
		var v verifyResponse
		require.NoError(t, json.Unmarshal(r.body, &v), "%s", r.body)
		return r.status, v
	}
	status, v := forge("globex-secret-note", "Globex plans to acquire Initech in May.")
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "citation [1] globex-secret-note: chunk not in the index", v.Problems[0],
		"acme learns that globex's chunk exists (and its content hash)")
	for _, p := range v.Problems {
		require.NotContains(t, p, "differs from the pack's", "globex's content hash leaks to acme")
	}
	// The same answer as for an ID no tenant holds.
	_, none := forge("globex-never-was", "Globex plans to acquire Initech in May.")
	require.Equal(t, strings.ReplaceAll(none.Problems[0], "globex-never-was", "globex-secret-note"), v.Problems[0])
}
