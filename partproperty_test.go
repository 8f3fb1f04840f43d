package evpack

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// The partition skip property: a partition is read only when its summary
// leaves room for an eligible chunk, and its clauses are compiled against
// its own bounds; neither may change what a request sees. Random worlds of
// dated versions (validity starting before, on or after the anchor, some
// with an end), facts (ended, superseded, retracted; said before, on or
// after their end day), purges and tenants are committed over several
// generations to an index of one bleve index and to partitioned ones
// (PartitionDays 1 and 7, the latter on disk and reopened). For every
// tenant, every as-of day across the world's range (so every partition
// boundary and every validity boundary) and every generation pinned by
// Request.Generation, the partitioned index's eligible set (the lexical
// query) equals the in-memory predicate's, the citation gate's and the one
// index's; on a stride of days, packs pinned by Generation and by KnownAt
// are byte-identical to the one index's.

// partWorldDays is the span of anchor days of a world.
const partWorldDays = 40

type partWorld struct {
	commits [][]connectors.Record // nil records and purge set: a purge
	purges  [][]string
}

func genPartWorld(rng *rand.Rand, w int) partWorld {
	base := asof.MustDate("2022-12-27").Days() // so that day 0 is inside a 7-day span, not at its start
	day := func(n int) asof.Date { return asof.DateFromDays(base + int64(n)) }
	tenants := []string{"", "t1", "t2"}
	type known struct {
		id, tenant string
		from       asof.Date
		anchor     int
	}
	var chunks []known
	purged := map[string]bool{}
	var world partWorld
	n := 0
	for c := range 4 + rng.IntN(5) {
		if c > 1 && rng.IntN(6) == 0 {
			var ids []string
			for range 1 + rng.IntN(2) {
				k := chunks[rng.IntN(len(chunks))]
				if !purged[k.id] && !slices.Contains(ids, k.id) {
					ids = append(ids, k.id)
				}
			}
			if len(ids) > 0 {
				for _, id := range ids {
					purged[id] = true
				}
				world.commits, world.purges = append(world.commits, nil), append(world.purges, ids)
				continue
			}
		}
		var recs []connectors.Record
		for range rng.IntN(7) {
			id := fmt.Sprintf("w%d-c%03d", w, n)
			n++
			a := rng.IntN(partWorldDays)
			ch := evidence.Chunk{ID: id, DocID: fmt.Sprintf("w%d-doc%d", w, rng.IntN(4)), Tenant: tenants[rng.IntN(len(tenants))],
				Text: words(rng, 4+rng.IntN(7)), SourceURL: "https://example.test/" + id, Connector: "parts",
				RetrievedAt: day(a).Start().Add(time.Duration(rng.IntN(20)) * time.Hour),
				Anchor:      asof.Anchor{At: day(a).Start().Add(time.Duration(rng.IntN(20)) * time.Hour), Field: "published"}}
			start := a
			switch rng.IntN(3) {
			case 1:
				start = a + rng.IntN(9)
				ch.Valid.From = day(start)
			case 2:
				start = a - 1 - rng.IntN(5)
				ch.Valid.From = day(start)
			}
			if rng.IntN(3) == 0 {
				ch.Valid.To = day(max(a, start) + 1 + rng.IntN(15))
			}
			recs = append(recs, connectors.Record{Chunk: ch, Where: id})
			chunks = append(chunks, known{id: id, tenant: ch.Tenant, from: ch.Valid.From, anchor: a})
		}
		for range rng.IntN(5) {
			if len(chunks) == 0 {
				break
			}
			k := chunks[rng.IntN(len(chunks))]
			lo := k.anchor - 3
			if !k.from.IsZero() {
				lo = int(k.from.Days() - base)
			}
			end := lo + 1 + rng.IntN(20)
			f := &evidence.Fact{Kind: evidence.FactEnded, ChunkID: k.id, End: day(end),
				Anchor: day(end + rng.IntN(16) - 5).Start().Add(time.Duration(rng.IntN(24)) * time.Hour)}
			switch rng.IntN(3) {
			case 1:
				f.Kind = evidence.FactRetracted
			case 2:
				var by []string
				for _, o := range chunks {
					if o.tenant == k.tenant && o.id != k.id {
						by = append(by, o.id)
					}
				}
				if len(by) > 0 {
					f.Kind, f.By = evidence.FactSuperseded, by[rng.IntN(len(by))]
				}
			}
			recs = append(recs, connectors.Record{Fact: f, Where: "fact on " + k.id})
		}
		world.commits, world.purges = append(world.commits, recs), append(world.purges, nil)
	}
	return world
}

// apply commits world's generation g to e.
func (pw partWorld) apply(ctx context.Context, e *Engine, g int) error {
	if pw.purges[g] != nil {
		_, err := e.Purge(ctx, pw.purges[g], "erasure")
		return err
	}
	_, err := e.Ingest(ctx, connectors.Records(pw.commits[g]), IngestOptions{})
	return err
}

func TestPartitionSkipProperty(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	ctx := context.Background()
	seed := historySeed(t)
	rerun := fmt.Sprintf("rerun: go test -count=1 -run '^TestPartitionSkipProperty$' . -evpack.seed=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5a1b))
	worlds := 4  // about 6 s each
	if quick() { // -short, or EVPACK_LONG_TESTS unset
		worlds = 1
	}
	cases, packs := 0, 0
	for w := range worlds {
		world := genPartWorld(rng, w)
		one, err := OpenMemory(Options{PartitionDays: -1})
		require.NoError(t, err)
		day1, err := OpenMemory(Options{PartitionDays: 1})
		require.NoError(t, err)
		dir := t.TempDir()
		week, err := Open(dir, Options{PartitionDays: 7})
		require.NoError(t, err)
		for g := range world.commits {
			errs := make([]string, 3)
			for i, e := range []*Engine{one, day1, week} {
				if err := world.apply(ctx, e, g); err != nil {
					errs[i] = err.Error()
				}
			}
			require.Equal(t, errs[0], errs[1], "world %d commit %d; %s", w, g, rerun)
			require.Equal(t, errs[0], errs[2], "world %d commit %d; %s", w, g, rerun)
			if errs[0] != "" {
				t.Logf("world %d commit %d refused by all: %s", w, g, errs[0])
			}
		}
		require.NoError(t, week.Check(), "world %d before reopening; %s\n%s", w, rerun, world.dump())
		require.NoError(t, week.Close())
		week, err = Open(dir, Options{})
		require.NoError(t, err, "world %d; %s\n%s", w, rerun, world.dump())
		for _, e := range []*Engine{one, day1, week} {
			require.NoError(t, e.Check(), "world %d; %s", w, rerun)
		}
		st, err := one.snapshot()
		require.NoError(t, err)
		gens := st.Gen
		for _, e := range []*Engine{day1, week} {
			require.Equal(t, gens, e.st.Gen)
		}
		ids := slices.Sorted(maps.Keys(st.Chunks))
		question := func() string {
			return words(rng, 2+rng.IntN(2))
		}
		for gen := range gens + 1 {
			for _, tenant := range []string{"", "t1", "t2", "t3"} {
				for d := -8; d <= partWorldDays+40; d++ {
					asOf := asof.DateFromDays(asof.MustDate("2022-12-27").Days() + int64(d))
					want, _, _, err := eligibleSets(one, ids, tenant, gen, asOf)
					require.NoError(t, err)
					for _, p := range []struct {
						name string
						e    *Engine
					}{{"PartitionDays 1", day1}, {"PartitionDays 7, reopened", week}} {
						lex, mem, gate, err := eligibleSets(p.e, ids, tenant, gen, asOf)
						require.NoError(t, err)
						mem, gate = unpurged(st, mem), unpurged(st, gate)
						if !slices.Equal(lex, want) || !slices.Equal(lex, mem) || !slices.Equal(lex, gate) {
							t.Fatalf("world %d, %s, tenant %q, generation %d, as of %s: lexical %v, in-memory predicate %v, gate %v, one index %v\n%s\n%s",
								w, p.name, tenant, gen, asOf, lex, mem, gate, want, world.dump(), rerun)
						}
						cases++
					}
					if (d+int(gen))%5 != 0 {
						continue
					}
					reqs := []Request{{Question: question(), AsOf: asOf, Tenant: tenant, K: 4, Generation: gen}}
					if gen > 0 {
						// The same state by instant: the commit time of gen,
						// where the engines' commit times agree.
						at := st.Commits[gen-1]
						reqs = append(reqs, Request{Question: question(), AsOf: asOf, Tenant: tenant, K: 4, KnownAt: at})
					}
					for _, r := range reqs {
						pw, err := one.Query(ctx, r)
						require.NoError(t, err)
						for _, e := range []*Engine{day1, week} {
							if !r.KnownAt.IsZero() {
								est, err := e.snapshot()
								require.NoError(t, err)
								g, _ := est.Resolve(state.Reads{KnownAt: r.KnownAt})
								if og, _ := st.Resolve(state.Reads{KnownAt: r.KnownAt}); g != og {
									continue // the engines committed in other seconds
								}
							}
							p, err := e.Query(ctx, r)
							require.NoError(t, err)
							if string(p.Bytes()) != string(pw.Bytes()) {
								t.Fatalf("world %d, request %+v: partitioned pack\n%s\none index's\n%s\n%s\n%s", w, r, p.Bytes(), pw.Bytes(), world.dump(), rerun)
							}
							packs++
						}
					}
				}
			}
		}
		for _, e := range []*Engine{one, day1, week} {
			require.NoError(t, e.Close())
		}
	}
	t.Logf("%d worlds: %d eligibility cases, %d packs compared byte for byte", worlds, cases, packs)
}

// unpurged is ids without the purged chunks of st, which no index holds.
func unpurged(st *state.State, ids []string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, ok := st.Purged[id]; return ok })
}

func (pw partWorld) dump() string {
	var b strings.Builder
	for g, recs := range pw.commits {
		fmt.Fprintf(&b, "--- commit %d\n", g+1)
		if pw.purges[g] != nil {
			fmt.Fprintf(&b, "purge %v\n", pw.purges[g])
		}
		for _, r := range recs {
			if r.Fact != nil {
				fmt.Fprintf(&b, "fact %s %s end %s known %s by %q\n", r.Fact.Kind, r.Fact.ChunkID, r.Fact.End, asof.FormatInstant(r.Fact.Anchor), r.Fact.By)
				continue
			}
			c := r.Chunk
			fmt.Fprintf(&b, "chunk %s tenant %q anchor %s valid [%s, %s)\n", c.ID, c.Tenant, asof.FormatInstant(c.Anchor.At), c.Valid.From, c.Valid.To)
		}
	}
	return b.String()
}

// TestFactOnPurgedChunk: a fact on a chunk purged earlier (a source that
// still ends or retracts it) is recorded, but must not bring the chunk's
// document back into the lexical index (it did: the index then held more
// documents than the manifest and refused to open, ErrCorrupt), and Check's
// recount applies facts and purges in commit order (it applied every fact
// before any purge, and reported the corpus digests as differing).
func TestFactOnPurgedChunk(t *testing.T) {
	ctx := context.Background()
	for _, days := range []int64{-1, 7} {
		dir := t.TempDir()
		e, err := Open(dir, Options{PartitionDays: days})
		require.NoError(t, err)
		_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{partRecord("x", 3, ""), partRecord("y", 5, "")}), IngestOptions{})
		require.NoError(t, err)
		_, err = e.Purge(ctx, []string{"x"}, "erasure")
		require.NoError(t, err)
		fact := connectors.Record{Where: "f", Fact: &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: "x", End: partDay(9), Anchor: partDay(10).Start()}}
		rep, err := e.Ingest(ctx, connectors.Records([]connectors.Record{fact}), IngestOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Facts)
		n, err := e.lex.DocCount()
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "PartitionDays %d: the purged chunk has no document", days)
		require.NoError(t, e.Check(), "PartitionDays %d", days)
		require.NoError(t, e.Close())
		e, err = Open(dir, Options{})
		require.NoError(t, err, "PartitionDays %d", days)
		checked(t, e)
		p, err := e.Query(ctx, Request{Question: partText("x"), AsOf: partDay(8)})
		require.NoError(t, err)
		require.Equal(t, []string{"y"}, citedIDs(p))
	}
}
