package evpack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
)

// A commit puts its documents into bleve and writes its manifest outside
// the engine's write lock (publish, "masked"), so that a replica applying
// entries keeps answering. Meanwhile queries must answer from the
// committed state as if the commit had not begun.
//
// The test commits JSONL histories fetch by fetch (chunks, valid_to's that
// appear and move earlier, retractions, supersessions: chunks that gain a
// second fact, whose pinned read must readmit them) and stops each commit
// just before and just after its manifest. There, from the committing
// goroutine (which is inside the commit: a query that needed the write lock
// would never return), it asks every request of a fixed set, latest and
// pinned, on days across the histories: each pack must be the one made
// before the commit began, whether the commit is kept out by its chunks' IDs
// or (it re-indexes chunks its facts change) by clauses. Every fourth commit fails at its manifest and is
// rolled back (then made again): the packs after the failure must be the
// ones before. The check must be able to fail: some latest packs change
// once the commits land, and some reads pass through readmission.
//
// It runs on a lexical index partitioned by tenant and time (the default),
// where other tenants' partitions are never read, and on one bleve index for
// everything (PartitionDays -1), where only clauses keep them out.
func TestQueriesDuringACommitSeeTheCommittedState(t *testing.T) {
	for _, tc := range []struct {
		name string
		days int64
	}{{"partitioned", 0}, {"one index", -1}} {
		t.Run(tc.name, func(t *testing.T) { queriesDuringACommit(t, Options{PartitionDays: tc.days}) })
	}
}

func queriesDuringACommit(t *testing.T, opts Options) {
	ctx := context.Background()
	seed := historySeed(t)
	rng := rand.New(rand.NewPCG(seed, 29))
	var hs []*srcHistory
	for i := range 12 { // enough for chunks whose facts come in two commits
		h, err := genJSONL(rng, i, "")
		require.NoError(t, err, "seed %d", seed)
		hs = append(hs, h)
	}
	type ask struct {
		r   Request
		tag string
	}
	var asks []ask
	for _, h := range hs {
		days := h.days()
		for _, q := range historyQuestions(rng, h) {
			for range 3 {
				r := Request{Question: q.text, Filters: q.filters, Tenant: h.tenant, K: 3, AsOf: days[rng.IntN(len(days))]}
				asks = append(asks, ask{r, fmt.Sprintf("%s %q as of %s", h.tenant, r.Question, r.AsOf)})
				r.Generation = 1 + rng.Int64N(4)
				asks = append(asks, ask{r, fmt.Sprintf("%s %q as of %s at generation %d", h.tenant, r.Question, r.AsOf, r.Generation)})
			}
		}
	}

	e := checked(t, mustOpenWith(t, t.TempDir(), opts))
	packs := func() []string { // "" where the index has not reached the pin
		out := make([]string, len(asks))
		for i, a := range asks {
			if a.r.Generation > e.AppliedGeneration() {
				continue
			}
			p, err := e.Query(ctx, a.r)
			require.NoError(t, err, "seed %d: %s", seed, a.tag)
			out[i] = p.Hash()
		}
		return out
	}
	same := func(want []string, when string) {
		got := packs()
		for i := range asks {
			require.Equal(t, want[i], got[i], "seed %d: %s: %s", seed, when, asks[i].tag)
		}
	}

	errInjected := errors.New("injected: the manifest cannot be written")
	var commits, failed, changed, byID, readmitting int
	next := make([]int, len(hs))
	for left := len(hs); left > 0; {
		i := rng.IntN(len(hs))
		if next[i] == len(hs[i].fetches) {
			continue
		}
		h, k := hs[i], next[i]
		before := packs()
		fail := commits%4 == 3 // every fourth commit fails once
		e.store.Hooks.BeforeManifest = func() error {
			same(before, fmt.Sprintf("%s fetch %d, before its manifest", h.name, k))
			// The reads of a latest request while next is pending, on
			// every day of the history: count those that readmit chunks
			// next's facts retire.
			if !e.pending.pinned {
				byID++
				require.NotEmpty(t, e.pending.added, "seed %d: a commit pending with nothing to keep out", seed)
			}
			for _, d := range h.days() {
				hd := evidence.Header{AsOf: d, Tenant: h.tenant}
				if e.pending.pinned && len(e.pending.next.EligibilityAt(e.st.Scope(hd.Tenant, e.st.Gen).Eligibility(hd)).Readmit) > 0 {
					readmitting++
				}
			}
			if fail {
				return errInjected
			}
			return nil
		}
		e.store.Hooks.AfterManifest = func() { same(before, fmt.Sprintf("%s fetch %d, after its manifest", h.name, k)) }
		gen := e.AppliedGeneration()
		_, err := e.Ingest(ctx, connectors.Records(h.recs[k]), IngestOptions{})
		if fail && err == nil { // a fetch that changes nothing commits nothing
			require.Equal(t, gen, e.AppliedGeneration(), "seed %d: %s fetch %d committed past the failing manifest", seed, h.name, k)
			fail = false
		}
		if fail {
			require.ErrorIs(t, err, errInjected, "seed %d: %s fetch %d", seed, h.name, k)
			same(before, fmt.Sprintf("%s fetch %d, rolled back", h.name, k))
			failed++
			e.store.Hooks = storage.Hooks{}
			_, err = e.Ingest(ctx, connectors.Records(h.recs[k]), IngestOptions{})
		}
		require.NoError(t, err, "seed %d: %s fetch %d", seed, h.name, k)
		commits++
		after := packs()
		for j := range asks {
			if asks[j].r.Generation == 0 && after[j] != before[j] {
				changed++
			}
		}
		if next[i]++; next[i] == len(h.fetches) {
			left--
		}
	}
	t.Logf("seed %d: %d commits (%d failed at the manifest first; %d kept out by ID), %d requests asked at each; %d latest packs changed by a commit, %d reads readmitting chunks",
		seed, commits, failed, byID, len(asks), changed, readmitting)
	require.Positive(t, byID, "seed %d: no commit was kept out by ID", seed)
	require.Less(t, byID, commits, "seed %d: no commit was kept out by its pinned clauses", seed)
	require.Positive(t, failed)
	require.Positive(t, changed, "seed %d: no commit changed a latest pack: the test shows nothing", seed)
	require.Positive(t, readmitting, "seed %d: no read passed through readmission", seed)
}
