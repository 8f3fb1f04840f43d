package evpack

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/rerank"
)

// secretRecord is a chunk whose text a court orders deleted: its words
// "Quillfeather" and "zqxjk" appear nowhere else.
func secretRecord(t testing.TB) connectors.Record {
	t.Helper()
	return connectors.Record{Where: "memo", Chunk: evidence.Chunk{ID: "memo-roe", DocID: "memo-roe", Version: "1",
		Text:      "Retention of client transaction records: Jane Quillfeather kept the zqxjk ledger for five years.",
		SourceURL: "https://intranet.example/memo-roe", Connector: "test", Tenant: "acme",
		RetrievedAt: asof.MustDate("2024-01-02").Start(),
		Anchor:      asof.Anchor{At: asof.MustDate("2024-01-01").Start(), Field: "published"}}}
}

// purgeFixture opens an index on disk holding the test corpus and the
// secret memo.
func purgeFixture(t *testing.T) (string, *Engine) {
	t.Helper()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	_, err = e.Ingest(context.Background(), connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	return dir, e
}

// grepDir reports the files under dir whose bytes contain word.
func grepDir(t *testing.T, dir, word string) []string {
	t.Helper()
	var hits []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // bleve's merger removed it during the walk: it holds nothing now
		}
		if err != nil {
			return err
		}
		if bytes.Contains(raw, []byte(word)) {
			hits = append(hits, path)
		}
		return nil
	}))
	return hits
}

// Purge deletes a chunk's text from every file of the index for good,
// records why in a generation of its own, and leaves the rest of the
// history standing: a pack that cited the chunk says "purged" (never
// "differs"), Diff says so per citation, other packs still verify, the
// chunk is never cited again at any generation, and all of it survives a
// reopen (Check agrees at every step).
func TestPurge(t *testing.T) {
	ctx := context.Background()
	dir, e := purgeFixture(t)
	gen := e.st.Gen
	cites := Request{Question: "who kept the zqxjk ledger Quillfeather", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", K: 3}
	other := Request{Question: "penalty fine dirhams", AsOf: asof.MustDate("2026-02-01"), K: 3}
	citing, err := e.Query(ctx, cites)
	require.NoError(t, err)
	require.Equal(t, "memo-roe", citing.Citations[0].ChunkID)
	unrelated, err := e.Query(ctx, other)
	require.NoError(t, err)
	require.NotContains(t, citedIDs(unrelated), "memo-roe")
	require.NotEmpty(t, grepDir(t, dir, "Quillfeather"), "the text is on disk before the purge")

	for _, tc := range []struct {
		name, reason string
		ids          []string
		why          string
	}{
		{"no such chunk", "erasure", []string{"ghost"}, `chunk "ghost" is not committed`},
		{"no reason", " ", []string{"memo-roe"}, "purge reason"},
		{"control character in the reason", "erasure\x00", []string{"memo-roe"}, "purge reason"},
		{"nothing named", "erasure", nil, "names no chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Purge(ctx, tc.ids, tc.reason)
			require.ErrorIs(t, err, ErrBadRequest)
			require.ErrorContains(t, err, tc.why)
			require.Equal(t, gen, e.st.Gen, "nothing purged")
		})
	}

	rep, err := e.Purge(ctx, []string{"memo-roe"}, "erasure request 2026-117")
	require.NoError(t, err)
	require.Equal(t, PurgeReport{Purged: []string{"memo-roe"}, Generation: gen + 1,
		Rewritten: []string{storage.ChunksDir + "/" + storage.RedactedName(gen, gen+1)}}, rep)
	require.NoError(t, e.Check())
	for _, word := range []string{"Quillfeather", "quillfeath", "zqxjk"} { // the stemmed term too
		require.Empty(t, grepDir(t, dir, word), "%q is still on disk", word)
	}
	_, err = e.Purge(ctx, []string{"memo-roe"}, "again")
	require.ErrorIs(t, err, ErrBadRequest)
	require.ErrorContains(t, err, "was purged at generation")

	check := func(e *Engine) {
		t.Helper()
		v, err := e.Verify(ctx, citing.Bytes())
		require.NoError(t, err)
		require.Equal(t, []audit.PurgedCitation{{Index: 1, ChunkID: "memo-roe", Generation: gen + 1, Reason: "erasure request 2026-117"}}, v.Purged)
		require.Len(t, v.Problems, 1)
		require.Contains(t, v.Problems[0], "purged at generation")
		require.NotContains(t, strings.Join(v.Problems, "\n"), "differs")

		v, err = e.Verify(ctx, unrelated.Bytes())
		require.NoError(t, err)
		require.True(t, v.OK(), "a pack that did not cite it still verifies: %v", v.Problems)

		for _, g := range []int64{0, gen} { // latest, and pinned before the purge
			r := cites
			r.Generation = g
			p, err := e.Query(ctx, r)
			require.NoError(t, err)
			require.NotContains(t, citedIDs(p), "memo-roe", "generation %d", g)
		}
		d, err := e.Diff(ctx, citing.Bytes())
		require.NoError(t, err)
		require.Equal(t, audit.DiffPurged, d.Citations[0].Status)
		require.Equal(t, "purged at generation 4: erasure request 2026-117", d.Citations[0].Detail)
	}
	check(e)
	requireDocPlaces(t, fullState(t, e))
	requireTermsOfText(t, fullState(t, e))
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, gen+1, e.st.Gen)
	check(e)
	requireDocPlaces(t, fullState(t, e))
	requireTermsOfText(t, fullState(t, e))
	// Chunks still arrive after a purge, and the chain goes on.
	_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "after", 3, 9)), IngestOptions{})
	require.NoError(t, err)
	requireDocPlaces(t, fullState(t, e))
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	check(e)
}

// A purge that dies before its manifest is rolled back at the next Open:
// the deleted documents are put back, the rewritten files removed, and the
// index answers as before.
func TestPurgeCrashRollsBack(t *testing.T) {
	ctx := context.Background()
	dir, e := purgeFixture(t)
	want := packsFor(t, e)
	gen := e.st.Gen

	e.store.Hooks.BeforeManifest = func() error { runtime.Goexit(); return nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Purge(ctx, []string{"memo-roe"}, "erasure")
		t.Error("purge returned: the hook did not stop it")
	}()
	<-done
	n, err := e.lex.DocCount()
	require.NoError(t, err)
	require.EqualValues(t, len(fullState(t, e).Chunks)-1, n, "the crash came after the lexical delete")
	require.NoError(t, e.lex.Close())
	require.NoError(t, e.store.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.Equal(t, gen, e.st.Gen)
	require.Empty(t, e.st.Purged)
	require.Equal(t, want, packsFor(t, e))
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Strays, "the rewritten batch file was removed")
}

// A memory index purges the same way, without files.
func TestPurgeMemory(t *testing.T) {
	ctx := context.Background()
	e := checked(t, memEngine(t, Options{}))
	ingestCorpus(t, e)
	_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
	require.NoError(t, err)
	rep, err := e.Purge(ctx, []string{"memo-roe"}, "erasure")
	require.NoError(t, err)
	require.Empty(t, rep.Rewritten)
	p, err := e.Query(ctx, Request{Question: "zqxjk ledger Quillfeather", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	require.NotContains(t, citedIDs(p), "memo-roe")
	require.Empty(t, fullState(t, e).Chunks["memo-roe"].Text)
}

// requireDocPlaces checks the document context the rerankers read: every
// chunk's place points to its document's list of this state, at its own
// position, with the generation that committed it; its terms' numbers are
// numbers of interned terms (none for a purged chunk), and every interned
// term is named by its number.
func requireDocPlaces(t *testing.T, st *state.State) {
	t.Helper()
	for id, p := range st.DocPlace { // checks only: nothing is built from the order
		require.Same(t, st.DocOrder[p.Key], p.List, id)
		require.Equal(t, id, p.List.IDs[p.Pos], id)
		require.Equal(t, st.Committed[id], p.Gen, id)
		nums := p.List.Nums[p.Pos]
		if _, purged := st.Purged[id]; purged {
			require.Empty(t, nums, id)
		}
		for _, n := range nums {
			require.Less(t, int(n), len(st.Names), id)
		}
	}
	require.Len(t, st.Names, len(st.Intern))
	for term, n := range st.Intern {
		require.Equal(t, term, st.Names[n], term)
	}
}

// requireTermsOfText checks that every chunk's terms, as its numbers name
// them, are those of its text (a state built by ingest and Open).
func requireTermsOfText(t *testing.T, st *state.State) {
	t.Helper()
	for id, p := range st.DocPlace {
		got := st.TermsOf(p.List.Nums[p.Pos])
		if want := rerank.Terms(st.Chunks[id].Text); len(want) > 0 || len(got) > 0 {
			require.Equal(t, want, got, id)
		}
	}
}
