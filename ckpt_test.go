package evpack

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storagetest"
	"github.com/evpack/evpack/rerank"
)

// mappedFrom returns the lines of /proc/self/maps that map a checkpoint
// of the index in dir (the test is skipped where there is no such file).
func mappedFrom(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps here: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, filepath.Join(dir, "state-")) {
			out = append(out, line)
		}
	}
	return out
}

// TestCheckpointIsUnmapped: the checkpoint Open maps stays mapped while
// the engine reads it, and no longer: Close unmaps it, and so does the
// first write, which replaces the state that read it (and whose commit
// deletes its file: a mapping kept its disk space until the process
// exited). The packs read before either are unchanged after it: nothing
// they hold pointed into the mapping.
func TestCheckpointIsUnmapped(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	dir, err := filepath.EvalSymlinks(dir) // as /proc/self/maps names it
	require.NoError(t, err)
	ckpt := filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint)

	e, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	got := packsOf(t, e, reqs)
	require.Equal(t, want, got)
	mapped := mappedFrom(t, dir)
	require.Len(t, mapped, 1, "the checkpoint is mapped while the engine reads it")
	require.Contains(t, mapped[0], ckpt)
	require.NoError(t, e.Close())
	require.Empty(t, mappedFrom(t, dir), "Close unmaps the checkpoint")
	require.Equal(t, want, got)

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.Equal(t, want, packsOf(t, e, reqs))
	require.Len(t, mappedFrom(t, dir), 1)
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "n", 2, 3)), IngestOptions{})
	require.NoError(t, err)
	require.NotNil(t, e.st.Rows, "the first write extends the checkpoint's state")
	require.ElementsMatch(t, []string{"n-0000", "n-0001"}, slices.Collect(maps.Keys(e.st.Chunks)), "with its chunks alone in memory")
	require.Equal(t, ckpt, filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint), "and leaves the checkpoint (state.PlanCheckpoint)")
	require.Len(t, mappedFrom(t, dir), 1)

	// More than state.LagChunks since the checkpoint, more than half of
	// them in one commit: it writes one (state.PlanCheckpoint), the engine
	// reads it back (Engine.rebase) and unmaps the old.
	_, err = e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "many", state.LagChunks, 4)), IngestOptions{})
	require.NoError(t, err)
	next := filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint)
	require.NotEqual(t, ckpt, next)
	require.NoFileExists(t, ckpt, "the commit deleted the checkpoint it replaced")
	require.Empty(t, e.st.Chunks, "the engine reads the new one, nothing in memory")
	e.retired.Wait() // the old one is unmapped beside the commit (Engine.rebase)
	mapped = mappedFrom(t, dir)
	require.Len(t, mapped, 1, "and the mapping of the old one is gone")
	require.Contains(t, mapped[0], next)
}

// rebasingReranker is the default reranker with a commit in its first
// call: before it reranks, it runs during (a commit that replaces the
// state the request reads, and waits for the old state to be closed),
// then checks that the term numbers it was handed read as they did.
type rebasingReranker struct {
	rerank.Reranker
	t      *testing.T
	during func()
	done   bool
	read   int // term numbers read after the commit
}

func (r *rebasingReranker) Rerank(ctx context.Context, q string, cands []rerank.Candidate, stats rerank.Stats) ([]evidence.Scored, error) {
	if !r.done {
		r.done = true
		var before [][]uint32
		for _, c := range cands {
			if c.Doc != nil {
				for _, ns := range c.Doc.Nums {
					before = append(before, slices.Clone(ns))
				}
			}
		}
		r.during()
		var after [][]uint32
		for _, c := range cands {
			if c.Doc != nil {
				after = append(after, c.Doc.Nums...)
			}
		}
		require.Equal(r.t, before, after, "the numbers read the same once their state is closed")
		for _, ns := range after {
			r.read += len(ns)
		}
	}
	return r.Reranker.Rerank(ctx, q, cands, stats)
}

// TestPinnedRowsOutliveRebase: a request keeps the checkpoint it reads
// mapped until it ends, though a commit replaces its state (and the
// commit's Engine.rebase closes it) while its reranker reads the term
// numbers of the candidates' documents, which point into that mapping
// (checkpoint.Table.ReadRows): they read as they did before the commit,
// the pack cites what it did before (with a ledger: a reranker the engine
// does not know is not taken for bit-stable), and the old mapping goes
// when the request ends.
func TestPinnedRowsOutliveRebase(t *testing.T) {
	dir, reqs, want := lazyPacks(t)
	dir, err := filepath.EvalSymlinks(dir) // as /proc/self/maps names it
	require.NoError(t, err)
	ckpt := filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint)
	def, _ := rerank.LearnedOrFallback("")
	rr := &rebasingReranker{Reranker: def, t: t}
	e, err := Open(dir, Options{Reranker: rr})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	rr.during = func() {
		_, err := e.Ingest(context.Background(), connectors.Records(vocabularyRecords(t, "acme", "many", state.LagChunks, 4)), IngestOptions{})
		require.NoError(t, err)
		require.NotEqual(t, ckpt, filepath.Join(dir, storagetest.ReadManifest(t, dir).Checkpoint), "the commit wrote a checkpoint")
		e.retired.Wait() // the old state is closed (Engine.rebase)
		mapped := mappedFrom(t, dir)
		require.Len(t, mapped, 2, "the request's pin keeps the old checkpoint mapped beside the new")
		require.True(t, strings.Contains(mapped[0], ckpt) || strings.Contains(mapped[1], ckpt))
	}
	p, err := e.Query(context.Background(), reqs[0])
	require.NoError(t, err)
	require.True(t, rr.done)
	require.Positive(t, rr.read, "the candidates' documents had term numbers to read")
	before, err := evidence.Parse(want[0])
	require.NoError(t, err)
	require.Equal(t, before.Citations, p.Citations, "the citations of the state the request began on")
	require.Equal(t, before.Trace, p.Trace)
	mapped := mappedFrom(t, dir)
	require.Len(t, mapped, 1, "the request's end unmaps the old checkpoint")
	require.NotContains(t, mapped[0], ckpt)
}
