package evpack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
)

// hostileTenants are tenant names chosen to break a partition's directory
// name or to be confused with another tenant: paths, names that differ
// only in case, in Unicode normalization or by an invisible character, the
// longest name allowed, names that look like evpack's own files and like
// the shared tenant's stand-in term.
var hostileTenants = []string{
	"acme", "ACME", "Acme",
	"../x", "../../../../tmp/evil", "/abs", "a/b", ".", "..", "lexical", "p-0000000000000000-0",
	"evpack-lexical.json", "MANIFEST.json",
	"é", "e\u0301", "\ufb01", "fi", "\u00c5", "\u212b", "A\u030a", // NFC, NFD, a ligature and its letters, A-ring, the ångström sign, A and a ring
	" ", "\u200b", "\ufeff", "\u202eevil", "shared", `\x00shared`, "noTenant",
	strings.Repeat("é", evidence.MaxTenantLen/2), strings.Repeat("é", evidence.MaxTenantLen/2-1) + "e\u0301"[:1],
	strings.Repeat("z", evidence.MaxTenantLen),
}

// hostileRecords are two chunks of each hostile tenant and of the shared
// one, a quarter of a year apart so that each tenant has two partitions,
// each with a word of its own and words every chunk has.
func hostileRecords(t testing.TB) []connectors.Record {
	var recs []connectors.Record
	for i, tenant := range append([]string{""}, hostileTenants...) {
		require.NoError(t, evidence.CheckTenant(tenant), "%q", tenant)
		for v := range 2 {
			day := asof.DateFromDays(asof.MustDate("2024-01-01").Days() + int64(97*v+i))
			id := fmt.Sprintf("t%02d-v%d", i, v)
			recs = append(recs, connectors.Record{Where: id, Chunk: evidence.Chunk{ID: id, DocID: id, Tenant: tenant,
				Text:      fmt.Sprintf("shared ledger notice %s %s", crashWords[100+i], crashWords[200+v]),
				SourceURL: "https://example.test/" + id, Connector: "hostile",
				RetrievedAt: day.Start(), Anchor: asof.Anchor{At: day.Start(), Field: "retrieved_at"}}})
		}
	}
	return recs
}

// TestHostileTenantNames: whatever a tenant is called, a request of it sees
// its own chunks and the shared tenant's, never another's (names that
// differ only in case or normalization included), its packs are those of
// one bleve index byte for byte, on disk and reopened, and every partition
// directory is a digest-named directory inside lexical/.
func TestHostileTenantNames(t *testing.T) {
	ctx := context.Background()
	recs := hostileRecords(t)
	for _, bad := range []string{"\x00shared", "a\nb", strings.Repeat("z", evidence.MaxTenantLen+1), "\xff"} {
		require.ErrorIs(t, evidence.CheckTenant(bad), evidence.ErrBadTenant, "%q", bad)
	}
	one := memEngine(t, Options{PartitionDays: -1})
	_, err := one.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)

	dir := t.TempDir()
	e, err := Open(dir, Options{PartitionDays: 30})
	require.NoError(t, err)
	_, err = e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	tenants := append([]string{""}, hostileTenants...)
	check := func(e *Engine, what string) {
		t.Helper()
		for i, tenant := range append(slices.Clone(tenants), "nobody", "ACMe", "e") {
			var want []string
			for _, r := range recs {
				if r.Chunk.Tenant == tenant || r.Chunk.Tenant == "" {
					want = append(want, r.Chunk.ID)
				}
			}
			for _, day := range []string{"2023-12-31", "2024-02-15", "2024-06-30"} {
				r := Request{Question: "shared ledger notice", AsOf: asof.MustDate(day), Tenant: tenant, K: 100}
				p, err := e.Query(ctx, r)
				require.NoError(t, err, "%s: tenant %q", what, tenant)
				q, err := one.Query(ctx, r)
				require.NoError(t, err)
				require.Equal(t, string(q.Bytes()), string(p.Bytes()), "%s: tenant %d %q as of %s: one index's pack", what, i, tenant, day)
				got := slices.Sorted(slices.Values(citedIDs(p)))
				var eligible []string
				for _, id := range want {
					if c := recByID(recs, id); !asof.MustDate(day).Before(c.Anchor.Day()) {
						eligible = append(eligible, id)
					}
				}
				require.Equal(t, eligible, got, "%s: tenant %q as of %s sees its own and the shared chunks", what, tenant, day)
			}
		}
	}
	check(e, "partitioned")
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	check(e, "reopened")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var top []string
	for _, en := range entries {
		top = append(top, en.Name())
	}
	require.NotContains(t, top, "x")
	require.NotContains(t, top, "evil")
	name := regexp.MustCompile(`^p-[0-9a-f]{16}-[0-9]+$`)
	lex, err := os.ReadDir(filepath.Join(dir, storage.LexicalDir))
	require.NoError(t, err)
	parts := map[string]bool{}
	for _, en := range lex {
		if en.Name() == "evpack-lexical.json" {
			continue
		}
		require.True(t, en.IsDir() && name.MatchString(en.Name()), "lexical/%s", en.Name())
		parts[en.Name()] = true
	}
	require.Len(t, parts, 2*len(tenants), "a partition per tenant and quarter, whatever the name")
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), "tmp", "evil"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func recByID(recs []connectors.Record, id string) *evidence.Chunk {
	for i := range recs {
		if recs[i].Chunk.ID == id {
			return &recs[i].Chunk
		}
	}
	return nil
}

// TestSecondProcessDuringPartitionedCommit holds a commit of several
// partitions between two of its batches while another process tries to
// ingest into and query the same index, and this process tries a second
// Open: each is refused with ErrLocked before touching anything (no
// partition rolled back, made or removed), and the held commit then
// completes, Check clean; the other process's ingest then commits on top.
func TestSecondProcessDuringPartitionedCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	e := partIndex(t, dir, 1)
	gen := e.st.Gen
	// What a refused Open must not change: the partitions there are and
	// the layout (the files inside a partition are bleve's, which merges
	// in the background of this process).
	listLex := func() []string {
		entries, err := os.ReadDir(filepath.Join(dir, storage.LexicalDir))
		require.NoError(t, err)
		var out []string
		for _, en := range entries {
			out = append(out, en.Name())
		}
		raw, err := os.ReadFile(filepath.Join(dir, storage.LexicalDir, "evpack-lexical.json"))
		require.NoError(t, err)
		return append(out, string(raw))
	}

	paused, resume := make(chan struct{}), make(chan struct{})
	calls := 0
	first := afterFirstBatch(t, e)
	e.lex.Hooks.BeforeBatch = func(string) error {
		if calls++; calls == 2 {
			<-first // and the second is not started while this runs
			close(paused)
			<-resume
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- partSteps()[1].run(ctx, e) }()
	<-paused
	// The first partition's batch is in bleve, the rest are not.
	above, err := e.lex.CountAbove(ctx, gen)
	require.NoError(t, err)
	require.NotZero(t, above)
	before := listLex()
	_, err = Open(dir, Options{LockWait: -1})
	require.ErrorIs(t, err, ErrLocked)
	code, _, stderr := runChild(t, "ingest "+dir+" "+writeJSONL(t, "other-1"))
	require.Equal(t, 3, code, stderr)
	code, _, stderr = runChild(t, "query "+dir)
	require.Equal(t, 3, code, stderr)
	require.Equal(t, before, listLex(), "the refused opens touched no partition")
	close(resume)
	require.NoError(t, <-done)
	e.lex.Hooks.BeforeBatch = nil
	require.Equal(t, gen+1, e.st.Gen)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())

	// A process that asks for other partitions (one index) opens the
	// index as it was made, and commits on top of this one.
	cmd, stdin, out, _ := startChild(t, "hold "+dir)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	_, err = Open(dir, Options{LockWait: -1, PartitionDays: -1})
	require.ErrorIs(t, err, ErrLocked)
	stdin.Close()
	require.NoError(t, cmd.Wait())
	code, stdout, stderr := runChild(t, "ingest "+dir+" "+writeJSONL(t, "other-1"))
	require.Equal(t, 0, code, stderr)
	require.Equal(t, fmt.Sprintf("generation %d\n", gen+2), stdout)
	e, err = Open(dir, Options{PartitionDays: -1})
	require.NoError(t, err)
	checked(t, e)
	require.Contains(t, fullState(t, e).Chunks, "other-1")
	require.Equal(t, partReferenceWith(t, 2, writeJSONLRecords(t, "other-1")), partPacks(t, e))
}

// partReferenceWith returns the packs of a memory index, of one bleve
// index, after the first n fixture steps and then recs (if any).
func partReferenceWith(t *testing.T, n int, recs []connectors.Record) map[string][]byte {
	t.Helper()
	e, err := OpenMemory(Options{PartitionDays: -1})
	require.NoError(t, err)
	defer e.Close()
	for _, s := range partSteps()[:n] {
		require.NoError(t, s.run(context.Background(), e), s.name)
	}
	if len(recs) > 0 {
		_, err = e.Ingest(context.Background(), connectors.Records(recs), IngestOptions{})
		require.NoError(t, err)
	}
	return partPacks(t, e)
}

// writeJSONLRecords reads what writeJSONL writes for ids.
func writeJSONLRecords(t *testing.T, ids ...string) []connectors.Record {
	t.Helper()
	recs, err := connectors.NewJSONL(writeJSONL(t, ids...)).Read(context.Background())
	require.NoError(t, err)
	return recs
}
