package evpack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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

// The partition fixture: an index of PartitionDays 7 whose commits each
// write several partitions, so that a crash, a cancelled context or a full
// disk can land between the batches of one commit. Its steps, each one
// commit:
//
//	base   16 chunks, 9 days apart, of tenants "", "acme" and "globex" (some
//	       valid from a later day, some with a validity end)
//	chunks 8 more, 11 days apart, interleaved with the base's
//	facts  facts (ended, retracted, superseded) on base chunks of several
//	       partitions and tenants: their documents are re-indexed in place
//	purge  a purge of chunks of several partitions
const partFixtureDays = 7

var partFixtureBase = asof.MustDate("2024-01-01")

var partTenants = []string{"", "acme", "globex"}

// partText is the text of fixture chunk id: crash words, skewed so that
// BM25 sees common and rare terms.
func partText(id string) string {
	var seed uint64
	for _, b := range []byte(id) {
		seed = seed*131 + uint64(b)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9a77))
	words := make([]string, 12+rng.IntN(20))
	for i := range words {
		u := rng.Float64()
		words[i] = crashWords[int(u*u*40)]
	}
	return strings.Join(words, " ")
}

func partRecord(id string, day int, tenant string) connectors.Record {
	d := asof.DateFromDays(partFixtureBase.Days() + int64(day))
	return connectors.Record{Where: id, Chunk: evidence.Chunk{ID: id, DocID: "doc-" + id, Text: partText(id),
		SourceURL: "https://example.test/" + id, Connector: "parts", Tenant: tenant,
		RetrievedAt: d.Start(), Anchor: asof.Anchor{At: d.Start(), Field: "retrieved_at"}}}
}

func partDay(day int) asof.Date { return asof.DateFromDays(partFixtureBase.Days() + int64(day)) }

// partStep is one commit of the fixture.
type partStep struct {
	name string
	run  func(ctx context.Context, e *Engine) error
}

func partSteps() []partStep {
	var base, more []connectors.Record
	for i := range 16 {
		r := partRecord(fmt.Sprintf("base-%02d", i), 9*i, partTenants[i%3])
		if i%4 == 1 {
			r.Chunk.Valid.From = partDay(9*i + 5) // starts in a later partition than its anchor
		}
		if i%5 == 2 {
			r.Chunk.Valid.To = partDay(9*i + 40)
		}
		base = append(base, r)
	}
	for j := range 8 {
		more = append(more, partRecord(fmt.Sprintf("more-%02d", j), 4+11*j, partTenants[(j+1)%3]))
	}
	fact := func(kind evidence.FactKind, i, end, known int, by string) connectors.Record {
		return connectors.Record{Where: fmt.Sprintf("fact on base-%02d", i), Fact: &evidence.Fact{Kind: kind,
			ChunkID: fmt.Sprintf("base-%02d", i), End: partDay(9*i + end), Anchor: partDay(9*i + known).Start(), By: by}}
	}
	facts := []connectors.Record{
		fact(evidence.FactEnded, 1, 20, 25, ""),
		fact(evidence.FactEnded, 4, 8, 3, ""),
		fact(evidence.FactRetracted, 3, 2, 30, ""),
		fact(evidence.FactEnded, 7, 30, 30, ""),
		fact(evidence.FactSuperseded, 10, 12, 14, "more-03"), // both acme's
		fact(evidence.FactRetracted, 14, 1, 1, ""),
	}
	ingest := func(recs []connectors.Record) func(context.Context, *Engine) error {
		return func(ctx context.Context, e *Engine) error {
			_, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
			return err
		}
	}
	return []partStep{
		{"base", ingest(base)},
		{"chunks", ingest(more)},
		{"facts", ingest(facts)},
		{"purge", func(ctx context.Context, e *Engine) error {
			_, err := e.Purge(ctx, []string{"base-00", "base-05", "base-08", "base-13", "more-06"}, "erasure")
			return err
		}},
	}
}

// partPacks are the packs of every fixture tenant (and one that holds
// nothing) for two questions, on days across the fixture's range, at the
// latest generation and pinned to each earlier one.
func partPacks(t testing.TB, e *Engine) map[string][]byte {
	t.Helper()
	st, err := e.snapshot()
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, tenant := range append(slices.Clone(partTenants), "nobody") {
		for day := -1; day <= 190; day += 11 {
			for qi, q := range []string{crashWords[0] + " " + crashWords[3] + " " + crashWords[11], crashWords[1] + " " + crashWords[25]} {
				for gen := range st.Gen + 1 {
					r := Request{Question: q, AsOf: partDay(day), Tenant: tenant, K: 6, Generation: gen}
					p, err := e.Query(context.Background(), r)
					require.NoError(t, err, "%+v", r)
					out[fmt.Sprintf("%q day %d q%d gen %d", tenant, day, qi, gen)] = p.Bytes()
				}
			}
		}
	}
	return out
}

// partIndex opens a fixture index in dir with its first n steps committed.
func partIndex(t *testing.T, dir string, n int) *Engine {
	t.Helper()
	e, err := Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err)
	for _, s := range partSteps()[:n] {
		require.NoError(t, s.run(context.Background(), e), s.name)
	}
	return e
}

// partitionsWritten counts the partition batches step n of the fixture
// writes (after steps before it), in a memory index.
func partitionsWritten(t *testing.T, n int) int {
	t.Helper()
	e, err := OpenMemory(Options{PartitionDays: partFixtureDays})
	require.NoError(t, err)
	defer e.Close()
	steps := partSteps()
	for _, s := range steps[:n] {
		require.NoError(t, s.run(context.Background(), e), s.name)
	}
	var names []string
	e.lex.Hooks.BeforeBatch = func(p string) error { names = append(names, p); return nil }
	require.NoError(t, steps[n].run(context.Background(), e))
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(names), "one batch a partition: %v", names)
	return len(names)
}

// afterFirstBatch returns a channel closed once the first partition batch
// of e's next write has returned: a write sends its partitions' batches
// side by side, so a BeforeBatch hook that must find the batches before
// its own done waits on it (the write starts no batch while its hook runs).
func afterFirstBatch(t *testing.T, e *Engine) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	var once sync.Once
	e.lex.Hooks.AfterBatch = func(string) { once.Do(func() { close(done) }) }
	t.Cleanup(func() { e.lex.Hooks.AfterBatch = nil })
	return done
}

// reopenAfterCrash closes what a killed process leaves open (the kernel's
// part) and opens dir again, checked.
func reopenAfterCrash(t *testing.T, e *Engine, dir string) *Engine {
	t.Helper()
	require.NoError(t, e.lex.Close())
	require.NoError(t, e.store.Close())
	e, err := Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err)
	return checked(t, e)
}

// requireCommitted checks that e holds exactly its committed generation gen:
// nothing above it in the lexical index, no unfinished commit, Check clean,
// and the packs want.
func requireCommitted(t *testing.T, e *Engine, dir string, gen int64, want map[string][]byte, what string) {
	t.Helper()
	require.Equal(t, gen, e.st.Gen, what)
	above, err := e.lex.CountAbove(context.Background(), gen)
	require.NoError(t, err)
	require.Zero(t, above, "%s: lexical documents of the failed generation", what)
	require.NoError(t, e.Check(), what)
	if dir != "" {
		require.NoFileExists(t, filepath.Join(dir, storage.PendingName), what)
		require.NoFileExists(t, filepath.Join(dir, storage.ChunksDir, storage.BatchName(gen+1)), what)
	}
	got := partPacks(t, e)
	for k, w := range want {
		require.Equal(t, string(w), string(got[k]), "%s: pack %s", what, k)
	}
	require.Len(t, got, len(want), what)
}

// partReference returns the packs of a memory index, of one bleve index,
// after the first n fixture steps: what any partitioned index must answer.
func partReference(t *testing.T, n int) map[string][]byte {
	t.Helper()
	return partReferenceWith(t, n, nil)
}

// TestCrashBetweenPartitions stops a commit dead (the committing goroutine
// exits, as in a killed process: no rollback, no unlock) just before the
// batch of its k-th partition, for every k past the first, for a commit of
// new chunks, one of facts that re-index chunks in several partitions and a
// purge that deletes from several: reopening rolls it back to exactly the
// last committed generation (Check clean, every pack byte-identical to
// those of a one-index memory engine at that generation, pinned or not),
// and the step then commits and answers as one index would.
func TestCrashBetweenPartitions(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	steps := partSteps()
	ref := make([]map[string][]byte, len(steps)+1)
	for n := 1; n <= len(steps); n++ {
		ref[n] = partReference(t, n)
	}
	for n := 1; n < len(steps); n++ {
		parts := partitionsWritten(t, n)
		require.Greater(t, parts, 2, "step %s writes several partitions", steps[n].name)
		for k := 1; k < parts; k++ {
			if quick() && k != 1 && k != parts-1 {
				continue
			}
			what := fmt.Sprintf("crash in step %s before partition batch %d of %d", steps[n].name, k+1, parts)
			t.Run(fmt.Sprintf("%s/%d", steps[n].name, k), func(t *testing.T) {
				dir := t.TempDir()
				e := partIndex(t, dir, n)
				gen := e.st.Gen
				require.Equal(t, ref[n], partPacks(t, e), "partitions change no pack")

				calls := 0
				e.lex.Hooks.BeforeBatch = func(string) error {
					if calls++; calls == k+1 {
						runtime.Goexit()
					}
					return nil
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					steps[n].run(context.Background(), e)
					t.Error("the step returned: the hook did not stop it")
				}()
				<-done
				above, err := e.lex.CountAbove(context.Background(), gen)
				require.NoError(t, err)
				if steps[n].name != "purge" {
					require.NotZero(t, above, "%s: the first partitions' batches reached bleve", what)
				}
				e = reopenAfterCrash(t, e, dir)
				requireCommitted(t, e, dir, gen, ref[n], what)

				require.NoError(t, steps[n].run(context.Background(), e), what)
				require.NoError(t, e.Check(), what)
				require.Equal(t, ref[n+1], partPacks(t, e), "%s: then committed", what)
			})
		}
	}
}

// TestFailedPartitionBatchRollsBack fails a commit at the batch of its
// second (and last) partition, as a write error or a cancelled context
// there would: Ingest or Purge returns the error, the engine keeps serving
// the last committed generation (nothing of the failed one visible, pinned
// or not, Check clean), and the same step commits afterwards.
func TestFailedPartitionBatchRollsBack(t *testing.T) {
	t.Parallel() // CPU-bound and independent: on 2 cores the long ones overlap
	steps := partSteps()
	for n := 1; n < len(steps); n++ {
		parts := partitionsWritten(t, n)
		for _, k := range []int{1, parts - 1} {
			for _, how := range []string{"error", "cancel"} {
				t.Run(fmt.Sprintf("%s/%d/%s", steps[n].name, k, how), func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					dir := t.TempDir()
					e := checked(t, partIndex(t, dir, n))
					gen := e.st.Gen
					want := partPacks(t, e)
					boom := errors.New("partition batch refused")
					calls := 0
					e.lex.Hooks.BeforeBatch = func(string) error {
						calls++
						switch {
						case calls != k+1:
						case how == "error":
							return boom
						default:
							cancel() // before this partition's batch starts: one that adds documents stops there, and no later one starts
						}
						return nil
					}
					err := steps[n].run(ctx, e)
					e.lex.Hooks.BeforeBatch = nil
					if how == "error" {
						require.ErrorIs(t, err, boom)
					} else if k == parts-1 && e.st.Gen == gen+1 {
						// The cancel came in the last partition, which nothing
						// checks the context after: the step committed (a
						// purge's merge after it may report the cancel).
						require.NoError(t, e.Check())
						return
					} else {
						require.ErrorIs(t, err, context.Canceled)
					}
					requireCommitted(t, e, dir, gen, want, fmt.Sprintf("%s failed at partition %d by %s", steps[n].name, k+1, how))
					require.NoError(t, steps[n].run(context.Background(), e))
					require.Equal(t, gen+1, e.st.Gen)
					require.NoError(t, e.Check())
					require.NoError(t, e.Close())
					e, err = Open(dir, Options{})
					require.NoError(t, err)
					checked(t, e)
					require.Equal(t, gen+1, e.st.Gen)
				})
			}
		}
	}
}

// TestFullDiskInSecondPartition fills the disk just before the batch of a
// commit's second partition, after the first partition's batch is
// persisted: bleve's write fails with ENOSPC; the engine serves the last
// committed generation or refuses with ErrBroken; once there is room, the
// index reopens exactly at that generation and takes the step.
func TestFullDiskInSecondPartition(t *testing.T) {
	mountTmpfs(t, page) // skips unless this process may mount
	steps := partSteps()
	for n := 1; n < len(steps); n++ {
		t.Run(steps[n].name, func(t *testing.T) {
			mnt := mountTmpfs(t, 64<<20)
			dir := filepath.Join(mnt, "index")
			e := partIndex(t, dir, n)
			require.NoError(t, e.Close()) // one segment a partition, none to merge meanwhile
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			gen := e.st.Gen
			want := partPacks(t, e)

			var filler string
			calls := 0
			first := afterFirstBatch(t, e)
			e.lex.Hooks.BeforeBatch = func(string) error {
				if calls++; calls == 2 {
					<-first
					filler = fill(t, mnt, 0)
				}
				return nil
			}
			within(t, "a commit on a full disk", time.Minute, func() { err = steps[n].run(context.Background(), e) })
			e.lex.Hooks.BeforeBatch = nil
			require.NotEmpty(t, filler, "the commit reached its second partition")
			if err == nil {
				// A purge frees what it deletes: when bleve removes the
				// segment files its first delete batch replaced before the
				// manifest is written, the manifest fits. Then the purge
				// committed, whole.
				require.Equal(t, "purge", steps[n].name, "nothing but a purge fits on a full disk")
				require.NoError(t, os.Remove(filler))
				requireCommitted(t, e, dir, gen+1, partReference(t, n+1), "full disk, the purge fitted")
				t.Logf("%s: committed in the room its deletions freed", steps[n].name)
				return
			}
			require.True(t, errors.Is(err, syscall.ENOSPC) || errors.Is(err, retrieve.ErrLexical), "%v", err)
			if errors.Is(err, ErrBroken) {
				_, qerr := e.Query(context.Background(), Request{Question: "x", AsOf: partDay(10)})
				require.ErrorIs(t, qerr, ErrBroken)
			} else {
				requireCommitted(t, e, dir, gen, want, "full disk, served")
			}
			t.Logf("%s: %v", steps[n].name, err)

			require.NoError(t, os.Remove(filler))
			within(t, "Close after a full disk", time.Minute, func() { err = e.Close() })
			require.NoError(t, err)
			e, err = Open(dir, Options{})
			require.NoError(t, err)
			checked(t, e)
			requireCommitted(t, e, dir, gen, want, "full disk, reopened")
			require.NoError(t, steps[n].run(context.Background(), e))
			require.NoError(t, e.Check())
		})
	}
}
