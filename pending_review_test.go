package evpack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
)

// The year leg (internal/periodleg: the year list, SearchNaming, and the
// boost, NamedIn) reads bleve through the same guard as the lexical leg
// (whileCommitted). A question naming a year, asked while a commit is
// pending, must get the pack of the committed state, whichever way the
// pending commit is kept out: by its chunks' IDs (adds only, few), by the
// pending state's pinned clauses (its facts re-index stored chunks, or it
// adds more than maxMaskedByID chunks), for a commit of another tenant and
// for one of facts alone, and after a commit that fails at its manifest
// and is rolled back. TestQueriesDuringACommitSeeTheCommittedState asks no
// year; this asks the year leg's golden requests, latest and pinned, for
// the shared tenant and for a named one.
func TestYearQuestionsDuringACommitSeeTheCommittedState(t *testing.T) {
	ctx := context.Background()
	recs, err := connectors.NewJSONL(filepath.Join("testdata", "periods", "filings.jsonl")).Read(ctx)
	require.NoError(t, err)
	year := func(y string) []connectors.Record {
		var out []connectors.Record
		for _, r := range recs {
			if r.Chunk.Meta["fiscal_year"] == y {
				out = append(out, r)
			}
		}
		return out
	}
	acme := func(rs []connectors.Record) []connectors.Record { // the same filings, tenant acme's
		out := make([]connectors.Record, len(rs))
		for i, r := range rs {
			r.Chunk.ID, r.Chunk.DocID, r.Chunk.Tenant = r.Chunk.ID+"@acme", r.Chunk.DocID+"@acme", "acme"
			r.Chunk.ContentHash, r.Chunk.Meta = "", maps.Clone(r.Chunk.Meta)
			out[i] = r
		}
		return out
	}
	// More chunks than a commit keeps out by ID, each naming the asked
	// year: the year list would take them in if they were not kept out.
	var many []connectors.Record
	for i := range maxMaskedByID + 40 {
		many = append(many, connectors.Record{Where: fmt.Sprintf("many:%d", i), Chunk: evidence.Chunk{
			ID: fmt.Sprintf("acme-capex-note#%03d", i), DocID: "acme-capex-note", Version: "1", Tenant: "acme",
			Text:      fmt.Sprintf("Northwind capital expenditures in fiscal 2021 were $%d million, note %d on plants and equipment.", 400+i, i),
			SourceURL: fmt.Sprintf("https://filings.example.org/acme-capex-note.pdf#page=%d", i+1), RetrievedAt: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC),
			Anchor: asof.Anchor{At: time.Date(2022, 3, 1, 0, 0, 0, 0, time.UTC)},
			Meta:   map[string]string{"cik": "northwind", "company": "Northwind Robotics", "doc_type": "10-K", "fiscal_year": "2021", "position": fmt.Sprint(i)},
		}})
	}
	retract := func(id, day string) connectors.Record {
		return connectors.Record{Where: "retractions:" + id, Fact: &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: id,
			End: asof.MustDate(day), Anchor: asof.MustDate(day).Start()}}
	}
	steps := []struct {
		name   string
		recs   []connectors.Record
		byID   bool // kept out by its chunks' IDs, else by pinned clauses
		failed bool // fails at its manifest first, then is made again
	}{
		{"fiscal 2020", year("2020"), true, false},
		{"fiscal 2021 (the asked year comes in)", year("2021"), true, false},
		{"fiscal 2022, and the FY2021 capex page retracted", append(year("2022"), retract("northwind-10k-fy2021#p1", "2024-01-02")), false, true},
		{"tenant acme's copy of every filing", acme(recs), true, false},
		{"tenant acme: more chunks than are kept out by ID", many, false, false},
		{"a fact alone: contoso's FY2021 pages retracted", []connectors.Record{retract("contoso-10k-fy2021#p1", "2024-03-01"), retract("contoso-10k-fy2021#p2", "2024-03-01")}, false, false},
		{"tenant acme: a fact on its copy of the FY2022 capex page", []connectors.Record{retract("northwind-10k-fy2022#p1@acme", "2024-05-01")}, false, true},
	}

	type ask struct {
		r   Request
		tag string
	}
	var asks []ask
	for _, pr := range loadPeriodRequests(t) {
		for _, tenant := range []string{"", "acme"} {
			for _, day := range []string{pr.AsOf, "2023-06-30", "2024-06-30"} {
				for _, gen := range []int64{0, 2, 4} {
					r := pr.request()
					r.Tenant, r.AsOf, r.Generation = tenant, asof.MustDate(day), gen
					asks = append(asks, ask{r, fmt.Sprintf("%s tenant %q as of %s at generation %d", pr.Name, tenant, day, gen)})
				}
			}
		}
	}

	e := checked(t, mustOpenWith(t, t.TempDir(), Options{QuestionPeriods: true}))
	yearSteps := 0
	packs := func() []string { // "" where the index has not reached the pin
		out := make([]string, len(asks))
		for i, a := range asks {
			if a.r.Generation > e.AppliedGeneration() {
				continue
			}
			p, err := e.Query(ctx, a.r)
			require.NoError(t, err, a.tag)
			out[i] = p.Hash()
			if strings.Contains(strings.Join(p.Trace.Steps, "\n"), "year list: kept ") {
				yearSteps++
			}
		}
		return out
	}
	same := func(want []string, when string) {
		got := packs()
		for i := range asks {
			require.Equal(t, want[i], got[i], "%s: %s", when, asks[i].tag)
		}
	}

	errInjected := errors.New("injected: the manifest cannot be written")
	changed := 0
	for _, s := range steps {
		before := packs()
		fail := s.failed
		pendings := 0
		e.store.Hooks.BeforeManifest = func() error {
			pendings++
			require.NotNil(t, e.pending, "%s: no commit pending at its manifest", s.name)
			require.Equal(t, s.byID, !e.pending.pinned, "%s: kept out by ID", s.name)
			same(before, s.name+", before its manifest")
			if fail {
				return errInjected
			}
			return nil
		}
		e.store.Hooks.AfterManifest = func() { same(before, s.name+", after its manifest") }
		_, err := e.Ingest(ctx, connectors.Records(s.recs), IngestOptions{})
		if fail {
			require.ErrorIs(t, err, errInjected, s.name)
			same(before, s.name+", rolled back")
			fail = false
			_, err = e.Ingest(ctx, connectors.Records(s.recs), IngestOptions{})
		}
		require.NoError(t, err, s.name)
		require.Equal(t, map[bool]int{true: 2, false: 1}[s.failed], pendings, "%s: the hooks ran", s.name)
		e.store.Hooks = storage.Hooks{}
		for i, p := range packs() {
			if asks[i].r.Generation == 0 && p != before[i] {
				changed++
			}
		}
	}
	t.Logf("%d requests asked at each of %d commits; %d latest packs changed by a commit; %d packs read the year list", len(asks), len(steps), changed, yearSteps)
	require.Positive(t, changed, "no commit changed a latest pack: the test shows nothing")
	require.Positive(t, yearSteps, "no pack read the year list: the test shows nothing of the year leg")
}

func mustOpenWith(t *testing.T, dir string, opts Options) *Engine {
	t.Helper()
	e, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}
