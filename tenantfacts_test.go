package evpack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
)

// tenantVintage is vintage's record owned by tenant.
func tenantVintage(t testing.TB, tenant, id, text, start, fetched string) connectors.Record {
	r := vintage(t, id, text, start, "", "", fetched)
	r.Chunk.Tenant = tenant
	return r
}

// A supersession may name a replacement not yet ingested; when that ID
// arrives as another tenant's chunk the batch fails with ErrBadFact naming
// its record, and the first tenant's Diff never shows the ID (issue 31,
// item 3). On b3bfa5e the chunk was committed and acme's Diff printed
// "superseded by globex-merger-secret".
func TestFactReplacementOfAnotherTenantArrivingLater(t *testing.T) {
	ctx := context.Background()
	e := checked(t, memEngine(t, Options{}))
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{
		tenantVintage(t, "acme", "acme-plan", "The acme plan holds reserves of ten percent.", "2020-04-01", "2020-04-02")}), IngestOptions{})
	require.NoError(t, err)
	req := Request{Question: "plan reserves percent", AsOf: asof.MustDate("2020-05-15"), Tenant: "acme", K: 3}
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"acme-plan"}, citedIDs(p))

	// The replacement is not ingested yet: accepted, as the design allows.
	end := asof.MustDate("2020-05-01")
	fact := connectors.Record{Where: "acme-facts.jsonl:1", Fact: &evidence.Fact{Kind: evidence.FactSuperseded,
		ChunkID: "acme-plan", By: "globex-merger-secret", End: end, Anchor: end.Start()}}
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{fact}), IngestOptions{})
	require.NoError(t, err)

	// The ID arrives as globex's chunk: refused, naming the record.
	secret := tenantVintage(t, "globex", "globex-merger-secret", "Globex will merge with initech.", "2020-04-20", "2020-05-02")
	secret.Where = "globex.jsonl:7"
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{secret}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrBadFact)
	var ce *evidence.ChunkError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "globex.jsonl:7", ce.Where)
	require.Equal(t, "globex-merger-secret", ce.ChunkID)
	require.Contains(t, err.Error(), `for chunk "acme-plan" of tenant "acme"`)
	_, held := e.st.Chunks["globex-merger-secret"]
	require.False(t, held, "nothing of the failed batch is committed")

	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.Len(t, rep.Citations, 1)
	// acme's own fact names the ID; no chunk of globex stands behind it.
	require.Equal(t, audit.DiffSuperseded, rep.Citations[0].Status)
	require.Equal(t, "", rep.Citations[0].Replacement)
	require.NotContains(t, rep.String(), "now replaced by")

	// The same ID arriving as acme's own chunk is the replacement.
	own := tenantVintage(t, "acme", "globex-merger-secret", "The acme plan holds reserves of twelve percent.", "2020-05-01", "2020-05-02")
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{own}), IngestOptions{})
	require.NoError(t, err)
	rep, err = e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.Len(t, rep.Citations, 1)
	require.Equal(t, audit.DiffSuperseded, rep.Citations[0].Status)
	require.Equal(t, "globex-merger-secret", rep.Citations[0].Replacement)
}

// The replacement must be the fact's tenant's whichever comes first, and
// in one batch too: a fact naming another tenant's committed chunk, and a
// fact and its wrong-tenant replacement ingested together, both fail.
func TestFactReplacementOfAnotherTenantRefused(t *testing.T) {
	ctx := context.Background()
	e := checked(t, memEngine(t, Options{}))
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{
		tenantVintage(t, "acme", "acme-plan", "The acme plan holds reserves of ten percent.", "2020-04-01", "2020-04-02"),
		tenantVintage(t, "globex", "globex-note", "Globex notes.", "2020-04-01", "2020-04-02")}), IngestOptions{})
	require.NoError(t, err)
	end := asof.MustDate("2020-05-01")
	fact := func(by string) connectors.Record {
		return connectors.Record{Where: "facts.jsonl:3", Fact: &evidence.Fact{Kind: evidence.FactSuperseded,
			ChunkID: "acme-plan", By: by, End: end, Anchor: end.Start()}}
	}
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{fact("globex-note")}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrBadFact)
	require.Contains(t, err.Error(), "facts.jsonl:3")
	later := tenantVintage(t, "globex", "globex-later", "Globex later.", "2020-04-01", "2020-04-02")
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{fact("globex-later"), later}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrBadFact)
	require.True(t, strings.Contains(err.Error(), "globex-later"), err.Error())
}

// A fact ending a chunk after its own valid_to would extend its validity:
// refused (ErrBadFact and ErrValidityExtended, naming the record), so a
// later record extending the validity to that day is ErrValidityExtended,
// not "unchanged" (issue 31, item 7; on b3bfa5e the fact was accepted and
// the record reported unchanged). A retraction after the end is no
// extension and stays accepted.
func TestFactEndingAfterOwnEndRefused(t *testing.T) {
	ctx := context.Background()
	e := checked(t, memEngine(t, Options{}))
	s1 := vintage(t, "s1", "Series one value.", "2020-01-01", "2020-03-01", "", "2020-01-02")
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{s1}), IngestOptions{})
	require.NoError(t, err)
	late := asof.MustDate("2020-04-01")
	for _, kind := range []evidence.FactKind{evidence.FactEnded, evidence.FactSuperseded} {
		f := &evidence.Fact{Kind: kind, ChunkID: "s1", End: late, Anchor: late.Start()}
		if kind == evidence.FactSuperseded {
			f.By = "s2"
		}
		_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{{Where: "facts.jsonl:2", Fact: f}}), IngestOptions{})
		require.ErrorIs(t, err, evidence.ErrBadFact, kind)
		require.ErrorIs(t, err, evidence.ErrValidityExtended, kind)
		require.Contains(t, err.Error(), `facts.jsonl:2: chunk "s1"`)
	}
	extend := vintage(t, "s1", "Series one value.", "2020-01-01", "2020-04-01", "", "2020-05-02")
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{extend}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrValidityExtended)

	retract := &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: "s1", End: late, Anchor: late.Start()}
	rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{{Where: "facts.jsonl:3", Fact: retract}}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Facts)
}

// An index made before checkArrivals may hold a supersession whose
// replacement is another tenant's chunk: Diff shows neither its ID nor its
// chain, and says why.
func TestDiffHidesAnotherTenantsReplacement(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{
		tenantVintage(t, "acme", "acme-plan", "The acme plan holds reserves of ten percent.", "2020-04-01", "2020-04-02"),
		tenantVintage(t, "globex", "globex-merger-secret", "Globex will merge with initech.", "2020-04-20", "2020-05-02")}), IngestOptions{})
	require.NoError(t, err)
	req := Request{Question: "plan reserves percent", AsOf: asof.MustDate("2020-05-15"), Tenant: "acme", K: 3}
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	end := asof.MustDate("2020-05-01")
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{{Where: "facts:1", Fact: &evidence.Fact{Kind: evidence.FactSuperseded,
		ChunkID: "acme-plan", By: "acme-next", End: end, Anchor: end.Start()}}}), IngestOptions{})
	require.NoError(t, err)
	f := e.st.Facts["acme-plan"][0].Fact
	f.By = "globex-merger-secret"         // as an older index could hold it
	defer func() { f.By = "acme-next" }() // before the cleanup's Check recounts the digests
	rep, err := e.Diff(ctx, p.Bytes())
	require.NoError(t, err)
	require.Len(t, rep.Citations, 1)
	c := rep.Citations[0]
	require.Equal(t, audit.DiffSuperseded, c.Status)
	require.Empty(t, c.Chain)
	require.Empty(t, c.Replacement)
	require.Empty(t, c.Fact.By)
	require.NotContains(t, rep.String(), "globex")
	require.Contains(t, rep.String(), "superseded from 2020-05-01 (fact of generation 2); the replacing chunk is outside the pack's tenant scope")
}
