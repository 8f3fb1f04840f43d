package evpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// scopeRequests are requests of the shared tenant and of acme, over the
// test corpus's vocabulary.
func scopeRequests() []Request {
	var out []Request
	for _, tenant := range []string{"", "acme"} {
		for _, q := range []string{"How long must a licensed firm retain records of client transactions?",
			"What is the maximum fine for failing to retain records?", "internal policy retention of client records",
			"chat messages records"} {
			out = append(out, Request{Question: q, AsOf: asof.MustDate("2026-02-01"), Tenant: tenant})
		}
	}
	return out
}

func queryAll(t *testing.T, e *Engine, reqs []Request) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range reqs {
		p, err := e.Query(context.Background(), r)
		require.NoError(t, err)
		out = append(out, p.Bytes())
	}
	return out
}

// vocabularyRecords returns n citable chunks of tenant whose texts are drawn
// from the words of the test corpus (seeded; the seed is logged), so that
// they would move every statistic another scope's ranking reads.
func vocabularyRecords(t *testing.T, tenant, prefix string, n int, seed uint64) []connectors.Record {
	t.Helper()
	t.Logf("%s: %d chunks of tenant %q, seed %d", prefix, n, tenant, seed)
	var words []string
	for _, r := range corpusRecords(t) {
		words = append(words, strings.Fields(r.Chunk.Text)...)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	recs := make([]connectors.Record, n)
	for i := range recs {
		text := make([]string, 8+rng.IntN(40))
		for j := range text {
			text[j] = words[rng.IntN(len(words))]
		}
		at := time.Date(2020+rng.IntN(6), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC)
		recs[i] = connectors.Record{Where: fmt.Sprintf("%s:%d", prefix, i), Chunk: evidence.Chunk{
			ID: fmt.Sprintf("%s-%04d", prefix, i), DocID: fmt.Sprintf("%s-doc-%d", prefix, i%37), Version: "1",
			Text: strings.Join(text, " "), SourceURL: "https://example.test/" + prefix, Connector: "jsonl",
			RetrievedAt: at, Anchor: asof.Anchor{At: at, Field: "anchor"}, Tenant: tenant}}
	}
	return recs
}

// TestAnotherTenantCannotMoveAPack: tenant globex ingesting 1,000 chunks in
// acme's and the shared corpus's vocabulary leaves every pack of acme and
// of the shared tenant byte-identical (their scope's statistics, digest and
// generation are their own), while globex's own packs do change.
func TestAnotherTenantCannotMoveAPack(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	reqs := scopeRequests()
	before := queryAll(t, e, reqs)
	globexReq := Request{Question: reqs[0].Question, AsOf: reqs[0].AsOf, Tenant: "globex"}
	globexBefore, err := e.Query(context.Background(), globexReq)
	require.NoError(t, err)
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "globex", "globex", 1000, 7)), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, before, queryAll(t, e, reqs), "acme's and the shared tenant's packs")
	globexAfter, err := e.Query(context.Background(), globexReq)
	require.NoError(t, err)
	require.NotEqual(t, globexBefore.Bytes(), globexAfter.Bytes(), "globex's own packs follow its commit")
}

// TestPackVerifiesAfterLaterCommits: packs made at generation 3 verify
// byte-identically, and the request pinned to their generation gives the
// same bytes, after 100 later commits (other tenants, the shared corpus, new
// versions of the very documents they cite that supersede the cited chunks
// by facts), a merge and a reopen.
func TestPackVerifiesAfterLaterCommits(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "", "shared3", 20, 3)), IngestOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 3, e.st.Gen)
	reqs := scopeRequests()
	packs := queryAll(t, e, reqs)
	cited := map[string]*evidence.Chunk{}
	for _, raw := range packs {
		p, err := evidence.Parse(raw)
		require.NoError(t, err)
		require.EqualValues(t, 3, p.Generation, "the shared commit is in every scope")
		for _, c := range p.Citations {
			cited[c.ChunkID] = fullState(t, e).Chunks[c.ChunkID]
		}
	}
	later := 100
	if quick() {
		later = 20
	}
	rng := rand.New(rand.NewPCG(11, 11))
	ids := evidence.SortedKeys(cited)
	for i := range later {
		var recs []connectors.Record
		switch i % 4 {
		case 0: // another tenant
			recs = vocabularyRecords(t, "globex", fmt.Sprintf("g%03d", i), 5, uint64(i))
		case 1: // the shared corpus
			recs = vocabularyRecords(t, "", fmt.Sprintf("s%03d", i), 5, uint64(i))
		case 2: // acme itself
			recs = vocabularyRecords(t, "acme", fmt.Sprintf("a%03d", i), 5, uint64(i))
		case 3: // an amendment of a cited document: a new version that supersedes the cited chunk
			old := cited[ids[rng.IntN(len(ids))]]
			c := *old
			c.ID, c.Version = fmt.Sprintf("%s@v%d", old.ID, i), fmt.Sprintf("v%d", i)
			c.Text = old.Text + " As amended."
			c.Meta = nil
			// In force from the day after the old one's first day, so that
			// every request of the set sees the old one retired now.
			end := asof.DateFromDays(max(old.Valid.From.Days(), old.Anchor.Day().Days()) + 1)
			c.Valid = asof.Interval{From: end}
			c.Anchor.At = end.Start()
			recs = []connectors.Record{{Where: "amend", Chunk: c}, {Where: "amend", Fact: &evidence.Fact{
				Kind: evidence.FactSuperseded, ChunkID: old.ID, By: c.ID, End: end, Anchor: end.Start()}}}
		}
		_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		require.NoError(t, err, "commit %d", i)
		if i == 3 {
			// Fewer chunks after generation 3 than before it: the lexical
			// leg keeps the later ones out instead of requiring the earlier.
			require.True(t, e.st.Scope("", 3).Eligibility(evidence.Header{}).FewerAfter)
			for j, raw := range packs {
				rep, err := e.Verify(ctx, raw)
				require.NoError(t, err)
				require.True(t, rep.OK(), "pack %d after %d commits: %v", j, i+1, rep.Problems)
			}
		}
	}
	require.False(t, e.st.Scope("", 3).Eligibility(evidence.Header{}).FewerAfter, "by the end, more came after")
	require.NoError(t, e.Merge(ctx))
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	require.EqualValues(t, 3+later, e.st.Gen)
	for i, raw := range packs {
		rep, err := e.Verify(ctx, raw)
		require.NoError(t, err)
		require.True(t, rep.OK(), "pack %d: %v", i, rep.Problems)
		r := reqs[i]
		r.Generation = 3
		p, err := e.Query(ctx, r)
		require.NoError(t, err)
		require.Equal(t, string(raw), string(p.Bytes()), "request %d pinned to generation 3", i)
		now, err := e.Query(ctx, reqs[i])
		require.NoError(t, err)
		require.Greater(t, now.Generation, int64(3), "the latest state has moved on")
		for _, c := range now.Citations {
			require.Empty(t, e.st.Facts[c.ChunkID], "request %d now cites superseded chunk %s", i, c.ChunkID)
		}
	}
	require.NotEmpty(t, e.st.FactLog, "amendments superseded cited chunks")
}

// TestKnownAtReadsTheStateOfThen: a request known at an instant reads the
// last generation committed at or before it.
func TestKnownAtReadsTheStateOfThen(t *testing.T) {
	ctx := context.Background()
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	r := Request{Question: "How long must a licensed firm retain records of client transactions?", AsOf: asof.MustDate("2026-02-01")}
	latest, err := e.Query(ctx, r)
	require.NoError(t, err)
	cases := []struct {
		name, why string
		knownAt   time.Time
		gen       int64
	}{
		{"long after", "the latest generation", time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC), latest.Generation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := r
			q.KnownAt = tc.knownAt
			p, err := e.Query(ctx, q)
			require.NoError(t, err)
			require.Equal(t, tc.gen, p.Generation, tc.why)
			require.Equal(t, latest.Bytes(), p.Bytes())
		})
	}
	bad := []struct {
		name string
		r    Request
		want string
	}{
		{"generation not committed", Request{Question: "q", AsOf: r.AsOf, Generation: 99}, "generation 99 is not committed (the latest is 2)"},
		{"negative generation", Request{Question: "q", AsOf: r.AsOf, Generation: -1}, "generation -1 < 0"},
		{"both pins", Request{Question: "q", AsOf: r.AsOf, Generation: 1, KnownAt: time.Now()}, "not both"},
		// Nothing was known then: an error, never an empty pack of
		// generation 0 (issue 31, item 12).
		{"before any commit", Request{Question: "q", AsOf: r.AsOf, KnownAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
			"known-at 2000-01-01T00:00:00Z is before the index's first commit (the first was committed at "},
	}
	for _, tc := range bad {
		_, err := e.Query(ctx, tc.r)
		require.ErrorIs(t, err, ErrBadRequest, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	_, err = e.Query(ctx, bad[len(bad)-1].r)
	require.ErrorIs(t, err, ErrBeforeFirstCommit)
	empty := memEngine(t, Options{})
	_, err = empty.Query(ctx, Request{Question: "q", AsOf: r.AsOf, KnownAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)})
	require.ErrorIs(t, err, ErrBeforeFirstCommit)
	require.Contains(t, err.Error(), "(no commit yet)")
}

// TestHistoryAndScope: the accessors name what packs record.
func TestHistoryAndScope(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	h, err := e.History()
	require.NoError(t, err)
	require.Len(t, h, 2)
	require.Equal(t, []int64{1, 2}, []int64{h[0].Generation, h[1].Generation})
	require.False(t, h[1].CommittedAt.Before(h[0].CommittedAt))
	p, err := e.Query(context.Background(), Request{Question: "records", AsOf: asof.MustDate("2026-02-01"), Tenant: "acme"})
	require.NoError(t, err)
	gen, digest, err := e.Scope("acme", 0)
	require.NoError(t, err)
	require.Equal(t, p.Generation, gen)
	require.Equal(t, p.Fingerprint.Get("corpus"), digest)
	gen1, digest1, err := e.Scope("acme", 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, gen1)
	require.NotEqual(t, digest, digest1)
	_, _, err = e.Scope("acme", 3)
	require.ErrorIs(t, err, ErrBadRequest)
}
