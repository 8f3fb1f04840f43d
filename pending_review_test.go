package evpack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
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
// yearFixture is the year leg's filings (testdata/periods) as commits can
// take them: by fiscal year, copied into tenant acme, more chunks naming
// FY2021 than a commit keeps out by ID, and retractions.
type yearFixture struct {
	recs    []connectors.Record
	many    []connectors.Record
	year    func(y string) []connectors.Record
	acme    func(rs []connectors.Record) []connectors.Record
	retract func(id, day string) connectors.Record
}

func newYearFixture(t *testing.T) yearFixture {
	t.Helper()
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
	return yearFixture{recs: recs, many: many, year: year, acme: acme, retract: retract}
}

// yearAsks is the year leg's golden requests for the shared tenant and
// acme, on three days, latest and pinned to generations 2 and 4.
func yearAsks(t *testing.T) (asks []Request, tags []string) {
	t.Helper()
	for _, pr := range loadPeriodRequests(t) {
		for _, tenant := range []string{"", "acme"} {
			for _, day := range []string{pr.AsOf, "2023-06-30", "2024-06-30"} {
				for _, gen := range []int64{0, 2, 4} {
					r := pr.request()
					r.Tenant, r.AsOf, r.Generation = tenant, asof.MustDate(day), gen
					asks, tags = append(asks, r), append(tags, fmt.Sprintf("%s tenant %q as of %s at generation %d", pr.Name, tenant, day, gen))
				}
			}
		}
	}
	return asks, tags
}

// yearPacks asks each request of asks and returns its pack's hash ("" where
// the index has not reached the pin), and how many packs read the year
// list.
func yearPacks(t *testing.T, e *Engine, asks []Request, tags []string) (hashes []string, yearList int) {
	t.Helper()
	hashes = make([]string, len(asks))
	for i, r := range asks {
		if r.Generation > e.AppliedGeneration() {
			continue
		}
		p, err := e.Query(context.Background(), r)
		require.NoError(t, err, tags[i])
		hashes[i] = p.Hash()
		if strings.Contains(strings.Join(p.Trace.Steps, "\n"), "year list: kept ") {
			yearList++
		}
	}
	return hashes, yearList
}

func TestYearQuestionsDuringACommitSeeTheCommittedState(t *testing.T) {
	ctx := context.Background()
	fx := newYearFixture(t)
	year, acme, retract, recs, many := fx.year, fx.acme, fx.retract, fx.recs, fx.many
	steps := []struct {
		name   string
		recs   []connectors.Record
		byID   bool // kept out by its chunks' IDs, else by pinned clauses
		failed bool // fails at its manifest first, then is made again
	}{
		{"fiscal 2020", year("2020"), true, false},
		{"fiscal 2021 (the asked year comes in) and the 10-Q of its second quarter", slices.Concat(year("2021"), withPrefix(recs, "northwind-10q")), true, false},
		{"fiscal 2022, and the FY2021 capex page retracted", append(year("2022"), retract("northwind-10k-fy2021#p1", "2024-01-02")), false, true},
		{"tenant acme's copy of every filing", acme(recs), true, false},
		{"tenant acme: more chunks than are kept out by ID", many, false, false},
		{"a fact alone: contoso's FY2021 pages retracted", []connectors.Record{retract("contoso-10k-fy2021#p1", "2024-03-01"), retract("contoso-10k-fy2021#p2", "2024-03-01")}, false, false},
		{"tenant acme: a fact on its copy of the FY2022 capex page", []connectors.Record{retract("northwind-10k-fy2022#p1@acme", "2024-05-01")}, false, true},
	}

	asks, tags := yearAsks(t)
	e := checked(t, mustOpenWith(t, t.TempDir(), Options{QuestionPeriods: true}))
	yearSteps := 0
	packs := func() []string {
		h, n := yearPacks(t, e, asks, tags)
		yearSteps += n
		return h
	}
	same := func(want []string, when string) {
		got := packs()
		for i := range asks {
			require.Equal(t, want[i], got[i], "%s: %s", when, tags[i])
		}
	}

	// The engine's other readers, asked from inside the commit too: none
	// may wait for the commit (it would never return) or see it.
	probe := asks[0] // capex-fy2021, shared tenant, latest
	readers := func() string {
		var b strings.Builder
		hist, err := e.History()
		require.NoError(t, err)
		fmt.Fprintf(&b, "generation %d, history of %d\n", e.AppliedGeneration(), len(hist))
		for _, tenant := range []string{"", "acme"} {
			g, digest, err := e.Scope(tenant, 0)
			require.NoError(t, err)
			fmt.Fprintf(&b, "scope %q: %d %s\n", tenant, g, digest)
		}
		key, err := e.CacheKey(probe)
		require.NoError(t, err)
		p, err := e.Query(ctx, probe)
		require.NoError(t, err)
		v, err := e.Verify(ctx, p.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK(), "%v", v.Problems)
		d, err := e.Diff(ctx, p.Bytes())
		require.NoError(t, err)
		raw, err := json.Marshal(d)
		require.NoError(t, err)
		n, err := e.Preload(ctx)
		require.NoError(t, err)
		require.Positive(t, n)
		fmt.Fprintf(&b, "cache key %s\ndiff %s\n", key, raw)
		return b.String()
	}

	errInjected := errors.New("injected: the manifest cannot be written")
	changed := 0
	for _, s := range steps {
		before := packs()
		beforeReaders := readers()
		fail := s.failed
		pendings := 0
		e.store.Hooks.BeforeManifest = func() error {
			pendings++
			require.NotNil(t, e.pending, "%s: no commit pending at its manifest", s.name)
			require.Equal(t, s.byID, !e.pending.pinned, "%s: kept out by ID", s.name)
			same(before, s.name+", before its manifest")
			require.Equal(t, beforeReaders, readers(), "%s, before its manifest", s.name)
			if fail {
				return errInjected
			}
			return nil
		}
		e.store.Hooks.AfterManifest = func() {
			same(before, s.name+", after its manifest")
			require.Equal(t, beforeReaders, readers(), "%s, after its manifest", s.name)
		}
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
			if asks[i].Generation == 0 && p != before[i] {
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

// A commit writes bleve one atomic batch per partition, outside the write
// lock: between two batches bleve holds the pending commit's documents in
// some partitions and the committed state's in the others, and while a
// failed commit is rolled back (RollBack, partition by partition) a mix
// again. TestQueriesDuringACommitSeeTheCommittedState asks only before and
// after the manifest, when every batch is in. This asks the year leg's
// requests before every partition's batch (retrieve.LexicalHooks), of the
// commit and of its rollback: each must give the committed state's pack,
// kept out by ID or by pinned clauses. Each commit spans partitions (90
// days, per tenant); the marked ones fail at a later batch on their first
// try.
func TestQueriesBetweenACommitsPartitionBatchesSeeTheCommittedState(t *testing.T) {
	ctx := context.Background()
	fx := newYearFixture(t)
	steps := []struct {
		name   string
		recs   []connectors.Record
		byID   bool
		failAt int // the batch (1-based) that fails on the first try; 0 none
	}{
		{"fiscal 2020, northwind's fiscal 2021 10-K", slices.Concat(fx.year("2020"), withPrefix(fx.year("2021"), "northwind-10k")), true, 0},
		{"contoso's fiscal 2021 10-K, northwind's 10-Q", slices.Concat(withPrefix(fx.year("2021"), "contoso"), withPrefix(fx.recs, "northwind-10q")), true, 2},
		{"fiscal 2022, the FY2021 capex page retracted, acme's fiscal 2020", slices.Concat(fx.year("2022"),
			[]connectors.Record{fx.retract("northwind-10k-fy2021#p1", "2024-01-02")}, fx.acme(fx.year("2020"))), false, 3},
		{"acme's fiscal 2021 and 2022, and its capex notes", slices.Concat(fx.acme(fx.year("2021")), fx.acme(fx.year("2022")), fx.many), false, 2},
		{"facts alone, in both tenants", []connectors.Record{fx.retract("contoso-10k-fy2021#p1", "2024-03-01"),
			fx.retract("northwind-10k-fy2020#p1@acme", "2024-03-01"), fx.retract("northwind-10k-fy2022#p1@acme", "2024-05-01")}, false, 2},
	}
	asks, tags := yearAsks(t)
	e := checked(t, mustOpenWith(t, t.TempDir(), Options{QuestionPeriods: true}))
	same := func(want []string, when string) {
		got, _ := yearPacks(t, e, asks, tags)
		for i := range asks {
			require.Equal(t, want[i], got[i], "%s: %s", when, tags[i])
		}
	}
	errInjected := errors.New("injected: the partition's batch cannot be written")
	changed, rolledBack := 0, 0
	for _, s := range steps {
		before, _ := yearPacks(t, e, asks, tags)
		failAt, batches, failed := s.failAt, 0, false
		e.lex.Hooks.BeforeBatch = func(partition string) error {
			batches++
			require.NotNil(t, e.pending, "%s: a batch with no commit pending", s.name)
			require.Equal(t, s.byID, !e.pending.pinned, "%s: kept out by ID", s.name)
			phase := "commit"
			if failed {
				phase, rolledBack = "rollback", rolledBack+1
			}
			same(before, fmt.Sprintf("%s: %s, before batch %d (partition %s)", s.name, phase, batches, partition))
			if batches == failAt && !failed {
				failed = true
				return errInjected
			}
			return nil
		}
		_, err := e.Ingest(ctx, connectors.Records(s.recs), IngestOptions{})
		if failAt > 0 {
			require.ErrorIs(t, err, errInjected, s.name)
			require.True(t, failed, "%s: batch %d never came (%d batches)", s.name, failAt, batches)
			same(before, s.name+", rolled back")
			failAt, batches = 0, 0
			_, err = e.Ingest(ctx, connectors.Records(s.recs), IngestOptions{})
		}
		require.NoError(t, err, s.name)
		require.GreaterOrEqual(t, batches, 2, "%s: the commit wrote one partition: nothing is between batches", s.name)
		e.lex.Hooks = retrieve.LexicalHooks{}
		after, _ := yearPacks(t, e, asks, tags)
		for i := range asks {
			if asks[i].Generation == 0 && after[i] != before[i] {
				changed++
			}
		}
	}
	t.Logf("%d requests asked before each partition's batch of %d commits; %d rollback batches; %d latest packs changed by a commit", len(asks), len(steps), rolledBack, changed)
	require.Positive(t, rolledBack, "no rollback rewrote a partition")
	require.Positive(t, changed, "no commit changed a latest pack: the test shows nothing")
}

// withPrefix returns the records of rs whose chunk ID starts with prefix.
func withPrefix(rs []connectors.Record, prefix string) []connectors.Record {
	var out []connectors.Record
	for _, r := range rs {
		if strings.HasPrefix(r.Chunk.ID, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// An index whose dead commit's rollback cannot be written opens read-only
// (e.readOnly): bleve still holds that commit's documents, and every read
// is pinned to the state's generation. Before whileCommitted took the pin
// over from searchLexical, the year leg (periodleg.List, Boost) read bleve
// unpinned. Here the dead commit brings in the asked year's filings (their
// chunks name FY2021, which the year list would take in), bleve's directory
// is remounted read-only so that the next Open cannot roll them back, and
// the year leg's requests must give the packs they gave before the commit.
func TestYearQuestionsOnAReadOnlyIndexSeeItsGeneration(t *testing.T) {
	ctx := context.Background()
	fx := newYearFixture(t)
	mnt := mountTmpfs(t, 64<<20)
	dir := filepath.Join(mnt, "index")
	opts := Options{QuestionPeriods: true}
	e, err := Open(dir, opts)
	require.NoError(t, err)
	_, err = e.Ingest(ctx, connectors.Records(fx.year("2020")), IngestOptions{})
	require.NoError(t, err)
	asks, tags := yearAsks(t)
	var latest []Request // pins past generation 1 cannot be asked
	var latestTags []string
	for i, r := range asks {
		if r.Generation == 0 {
			latest, latestTags = append(latest, r), append(latestTags, tags[i])
		}
	}
	want, yearList := yearPacks(t, e, latest, latestTags)
	require.Positive(t, yearList, "no pack read the year list: the test shows nothing of the year leg")

	e.store.Hooks.BeforeManifest = func() error { runtime.Goexit(); return nil } // the process dies
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Ingest(ctx, connectors.Records(slices.Concat(fx.year("2021"), fx.year("2022"))), IngestOptions{})
	}()
	<-done
	above, err := e.lex.CountAbove(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(len(fx.year("2021"))+len(fx.year("2022"))), above, "bleve holds the dead commit's documents")
	require.NoError(t, e.lex.Close())
	require.NoError(t, e.store.Close())

	lexDir := filepath.Join(dir, storage.LexicalDir)
	require.NoError(t, syscall.Mount(lexDir, lexDir, "", syscall.MS_BIND, ""))
	t.Cleanup(func() { syscall.Unmount(lexDir, syscall.MNT_DETACH) })
	require.NoError(t, syscall.Mount("", lexDir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
	e, err = Open(dir, opts)
	require.NoError(t, err)
	defer e.Close()
	require.NotNil(t, e.readOnly, "the rollback was written on a read-only directory")
	got, _ := yearPacks(t, e, latest, latestTags)
	for i := range latest {
		require.Equal(t, want[i], got[i], "read-only: %s", latestTags[i])
	}
}
