package evpack

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// retraction returns a fact retracting chunk id from 2026-02-01, known on
// the 10th.
func retraction(id string) connectors.Record {
	return connectors.Record{Where: "retractions.jsonl:" + id, Fact: &evidence.Fact{Kind: evidence.FactRetracted,
		ChunkID: id, End: asof.MustDate("2026-02-01"), Anchor: time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)}}
}

// retractOne commits the retraction of chunk a-NNNN (vocabularyRecords'
// prefix "a"), alone in its commit.
func retractOne(t *testing.T, e *Engine, i int) {
	t.Helper()
	_, err := e.Ingest(context.Background(), connectors.Records([]connectors.Record{retraction(fmt.Sprintf("a-%04d", i))}), IngestOptions{})
	require.NoError(t, err)
}

// TestFactsAloneKeepTheCheckpoint (issue 30): a commit of facts alone
// writes no checkpoint and leaves the manifest naming the last one; Open
// adds the later facts to it. Each case reopens the index and requires the
// packs the writer gave (pinned ones too) byte for byte, and a clean Check:
// after one retraction, whose chunk lies in a partition the checkpoint's
// catalog summed up before it (the reopened index must not admit it from
// the day it is known); after state.LagGenerations commits of facts, which
// extend the state Open read as it is, the next of which starts a
// checkpoint, which the commit past half as many after it names; and after
// commits of chunks, which leave it too until state.CheckpointLag of them
// follow it (within state.LagChunks), with a reopening between the commit
// that starts one and the one that names it.
func TestFactsAloneKeepTheCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("commits a thousand retractions one by one; run without -short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { e.Close() }()
	recs := vocabularyRecords(t, "acme", "a", state.LagGenerations+state.LagGenerations/2+3, 1)
	_, err = e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)

	var reqs []Request
	question := recs[0].Chunk.Text // every request can find a-0000 but for its retraction
	for _, day := range []string{"2026-02-09", "2026-02-10", "2026-06-01"} {
		reqs = append(reqs, Request{Question: question, AsOf: asof.MustDate(day), Tenant: "acme", K: 20})
	}
	// reopen closes e, opens dir again from its checkpoint and requires
	// what the writer answered, pinned to the first generations, every
	// 128th and the last few too (every one of a thousand would be
	// 3,000 queries a case).
	reopen := func(why string) {
		t.Helper()
		var all []Request
		for _, r := range reqs {
			for g := range e.st.Gen + 1 {
				if g > 3 && g%128 != 0 && g < e.st.Gen-3 {
					continue
				}
				r.Generation = g
				all = append(all, r)
			}
		}
		want := packsOf(t, e, all)
		require.NoError(t, e.Close())
		e, err = Open(dir, Options{})
		require.NoError(t, err, why)
		require.NotNil(t, e.st.Rows, "%s: Open read the checkpoint", why)
		require.Equal(t, want, packsOf(t, e, all), why)
		rep, err := e.CheckIndex(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s: %v", why, rep.Problems)
	}
	// checkpointOf is the newest level the manifest names: its delta's,
	// else its checkpoint's.
	checkpointOf := func() string {
		m := storagetest.ReadManifest(t, dir)
		return cmp.Or(m.Delta, m.Checkpoint)
	}
	require.Equal(t, storage.CheckpointName(1), checkpointOf())

	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{retraction("a-0000")}), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, storage.CheckpointName(1), checkpointOf(), "a commit of facts alone keeps the checkpoint")
	require.NoFileExists(t, filepath.Join(dir, storage.CheckpointName(2)))
	reopen("after one retraction")
	for i, want := range [][]string{{"a-0000"}, nil, nil} { // the 9th, the 10th, June
		p, err := e.Query(ctx, reqs[i])
		require.NoError(t, err)
		if want == nil {
			require.NotContains(t, citedIDs(p), "a-0000", "%s: retracted from the day it was known", reqs[i].AsOf)
		} else {
			require.Contains(t, citedIDs(p), "a-0000", "%s: not yet known", reqs[i].AsOf)
		}
	}

	lag := state.LagGenerations
	for i := 1; i < lag; i++ { // generations 3..lag+1: at most LagGenerations after the checkpoint
		retractOne(t, e, i)
		require.NotNil(t, e.st.Rows, "a commit of facts alone extends the checkpoint's state as it is, reading no batch file")
	}
	require.Equal(t, int64(lag+1), e.st.Gen)
	require.Equal(t, storage.CheckpointName(1), checkpointOf(), "generation %d is %d after the checkpoint", e.st.Gen, lag)
	reopen(fmt.Sprintf("after %d commits of facts", lag))
	retractOne(t, e, lag)
	started := int64(lag + 2)
	require.Equal(t, storage.CheckpointName(1), checkpointOf(), "one more starts it, written ahead (state.Plan), and keeps the old")
	for i := range lag / 2 {
		retractOne(t, e, lag+1+i)
		require.Equal(t, storage.CheckpointName(1), checkpointOf(), "commit %d after the one that started it keeps the old", i+1)
	}
	retractOne(t, e, lag+1+lag/2)
	written := storage.DeltaName(started)
	require.Equal(t, written, checkpointOf(), "the commit past half the lag after it names it: a delta level, no chunk committed since the checkpoint (state.DeltaAt)")
	require.Empty(t, e.st.Chunks, "read back from the delta it named and the facts after it, with no chunk in memory")
	require.Equal(t, started, e.st.Base)
	require.Equal(t, storage.CheckpointName(1), storagetest.ReadManifest(t, dir).Checkpoint, "the checkpoint under it stays")
	reopen("after the delta level was named")

	// Commits of chunks are bounded apart: at most CheckpointLag of them
	// after the checkpoint, whatever the facts.
	retractOne(t, e, lag+2+lag/2)
	more := vocabularyRecords(t, "acme", "b", state.CheckpointLag+state.CheckpointLag/2+2, 2)
	for i := range state.CheckpointLag {
		_, err = e.Ingest(ctx, connectors.Records(more[i:i+1]), IngestOptions{})
		require.NoError(t, err)
		require.Equal(t, written, checkpointOf(), "commit %d of chunks leaves it (state.PlanCheckpoint)", i+1)
	}
	reopen(fmt.Sprintf("after %d commits of chunks", state.CheckpointLag))
	_, err = e.Ingest(ctx, connectors.Records(more[state.CheckpointLag:state.CheckpointLag+1]), IngestOptions{})
	require.NoError(t, err)
	started = e.st.Gen
	require.Equal(t, written, checkpointOf(), "one more commit of chunks starts one")
	// A process that did not start it names it too, writing it then.
	reopen("between the commit that started a checkpoint and the one that names it")
	for i := range state.CheckpointLag / 2 {
		_, err = e.Ingest(ctx, connectors.Records(more[state.CheckpointLag+1+i:state.CheckpointLag+2+i]), IngestOptions{})
		require.NoError(t, err)
		require.Equal(t, written, checkpointOf(), "commit %d of chunks after the one that started it", i+1)
	}
	require.NoFileExists(t, filepath.Join(dir, storage.DeltaName(started)))
	_, err = e.Ingest(ctx, connectors.Records(more[state.CheckpointLag+1+state.CheckpointLag/2:]), IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, storage.DeltaName(started), checkpointOf(), "the commit past half the lag after it names it: a delta again, 98 chunks since the checkpoint's 1,539")
	require.NoFileExists(t, filepath.Join(dir, written), "the delta it replaced removed")
	reopen("after the commit of chunks that named it")
}

// TestLaterFactsDamaged: Open reads the batch files of the generations of
// facts after the checkpoint, so one edited, cut short or gone is
// ErrCorrupt naming it at Open (before, a damaged fact was found by Check
// or by the first write), and nothing is written.
func TestLaterFactsDamaged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"a byte changed", func(t *testing.T, path string) {
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			i := bytes.Index(raw, []byte("a-0000"))
			require.Positive(t, i)
			raw[i+5] = '1' // the fact names another chunk
			require.NoError(t, os.WriteFile(path, raw, 0o644))
		}},
		{"cut short", func(t *testing.T, path string) { truncateHalf(t, path) }},
		{"gone", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 3, 1)), IngestOptions{})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{retraction("a-0000")}), IngestOptions{})
			require.NoError(t, err)
			require.NoError(t, e.Close())
			m := storagetest.ReadManifest(t, dir)
			require.Equal(t, int64(1), m.CheckpointGeneration())
			requireOpenRefuses(t, dir, m.Batches[1].File, tc.damage)
		})
	}
}

// requireOpenRefuses damages file name of dir's chunks directory, a file
// Open reads whole, and requires Open to fail with ErrCorrupt naming it,
// writing nothing.
func requireOpenRefuses(t *testing.T, dir, name string, damage func(t *testing.T, path string)) {
	t.Helper()
	damage(t, filepath.Join(dir, storage.ChunksDir, name))
	before := filesOf(t, dir)
	_, err := Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), name)
	require.Equal(t, before, filesOf(t, dir), "nothing written")
}

// TestFactsAfterOpenChecked: a commit of facts on the state Open read
// holds its facts to the stored chunks as a state in memory does: a fact
// naming no chunk fails with evidence.ErrBadFact naming its record, one on
// a chunk whose stored line was edited fails with ErrCorrupt, and neither
// commits anything.
func TestFactsAfterOpenChecked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 3, 1)), IngestOptions{})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	batch := filepath.Join(dir, storage.ChunksDir, storagetest.ReadManifest(t, dir).Batches[0].File)
	raw, err := os.ReadFile(batch)
	require.NoError(t, err)

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	defer func() { e.Close() }()
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{retraction("a-0009")}), IngestOptions{})
	require.ErrorIs(t, err, evidence.ErrBadFact)
	require.Contains(t, err.Error(), "retractions.jsonl:a-0009")
	require.NotNil(t, e.st.Rows, "checked against the checkpoint's rows")

	i := bytes.Index(raw, []byte(`"a-0001"`))
	require.Positive(t, i)
	j := i + bytes.Index(raw[i:], []byte(`"text":"`)) + len(`"text":"`)
	raw[j] ^= 0x20 // a letter's case: the line reads, as another chunk than its hash
	require.NoError(t, os.Chmod(batch, 0o644))
	require.NoError(t, os.WriteFile(batch, raw, 0o644))
	_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{retraction("a-0001")}), IngestOptions{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, int64(1), e.st.Gen, "nothing committed")
	require.Equal(t, int64(1), storagetest.ReadManifest(t, dir).Generation)
}

// TestReplicaAppliesFactsAsTheyCome: a replica reopened from its files (the
// state its checkpoint gives) applies the writer's entries of facts alone
// without unfolding that state, and holds the writer's files byte for byte
// and gives its packs after each. An entry whose fact names a chunk the
// index does not hold, sealed and linked as a writer would, is ErrCorrupt
// and commits nothing.
func TestReplicaAppliesFactsAsTheyCome(t *testing.T) {
	ctx := context.Background()
	wdir, rdir := t.TempDir(), t.TempDir()
	w := checked(t, mustOpen(t, wdir))
	recs := vocabularyRecords(t, "acme", "a", 6, 1)
	_, err := w.Ingest(ctx, connectors.Records(recs), IngestOptions{})
	require.NoError(t, err)
	r := mustOpen(t, rdir)
	require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, 1)))
	require.NoError(t, r.Close())
	r = checked(t, mustOpen(t, rdir))
	require.NotNil(t, r.st.Rows)
	reqs := []Request{{Question: recs[0].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme"}}
	for gen, id := range []string{"a-0000", "a-0001"} {
		_, err := w.Ingest(ctx, connectors.Records([]connectors.Record{retraction(id)}), IngestOptions{})
		require.NoError(t, err)
		require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, int64(gen+2))))
		require.NotNil(t, r.st.Rows, "generation %d: applied to the state the checkpoint gave", gen+2)
		requireSameFiles(t, wdir, rdir, fmt.Sprintf("after generation %d", gen+2))
		for g := range int64(gen + 3) {
			req := reqs[0]
			req.Generation = g
			require.Equal(t, packsOf(t, w, []Request{req}), packsOf(t, r, []Request{req}), "pinned to %d", g)
		}
	}

	m := storagetest.ReadManifest(t, rdir)
	forged, err := storage.EncodeBatch(storage.BatchHeader{Generation: 4, CommittedAt: m.Batches[2].CommittedAt, Prev: m.ChainHead()},
		storage.Contents{Facts: []*evidence.Fact{retraction("a-0099").Fact}})
	require.NoError(t, err)
	require.ErrorIs(t, applyBody(ctx, r, forged), ErrCorrupt)
	require.Equal(t, int64(3), r.st.Gen, "nothing committed")
	require.Equal(t, int64(3), storagetest.ReadManifest(t, rdir).Generation)
}

// TestLaterChunksDamaged: Open reads whole the batch files of the
// generations of chunks after the checkpoint (state.PlanCheckpoint) and
// their analysis files, so one edited, cut short or gone is ErrCorrupt
// naming it at Open, and nothing is written.
func TestLaterChunksDamaged(t *testing.T) {
	ctx := context.Background()
	edit := func(t *testing.T, path string) {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		raw[len(raw)/2] ^= 1
		require.NoError(t, os.WriteFile(path, raw, 0o644))
	}
	for _, tc := range []struct {
		name     string
		analysis bool // the analysis file, not the batch file
		damage   func(t *testing.T, path string)
	}{
		{"a byte changed", false, edit},
		{"cut short", false, func(t *testing.T, path string) { truncateHalf(t, path) }},
		{"gone", false, func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
		{"its analysis file, a byte changed", true, edit},
		{"its analysis file gone", true, func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", 3, 1)), IngestOptions{})
			require.NoError(t, err)
			_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "b", 2, 2)), IngestOptions{})
			require.NoError(t, err)
			require.NoError(t, e.Close())
			m := storagetest.ReadManifest(t, dir)
			require.Equal(t, int64(1), m.CheckpointGeneration(), "the commit of chunks kept the checkpoint")
			name := m.Batches[1].File
			if tc.analysis {
				name = m.Batches[1].Analysis
			}
			requireOpenRefuses(t, dir, name, tc.damage)
		})
	}
}

// TestManyFactsWriteTheCheckpoint (issue 30): the facts after a checkpoint
// are bounded apart from the generations: a commit that takes them past
// state.LagFacts starts one, as Open adds each of them again, and the
// commit past half as many after it names it; a commit of more than half
// as many on its own writes its checkpoint itself.
func TestManyFactsWriteTheCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 8,195 chunks and retracts each; run without -short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { e.Close() }()
	half := state.LagFacts / 2
	n := state.LagFacts + 1 + 2*half + 2
	_, err = e.Ingest(ctx, connectors.Records(vocabularyRecords(t, "acme", "a", n, 3)), IngestOptions{})
	require.NoError(t, err)
	levels := func() string {
		m := storagetest.ReadManifest(t, dir)
		return m.Checkpoint + " " + m.Delta
	}
	require.Equal(t, storage.CheckpointName(1)+" ", levels())
	next := 0
	retract := func(k int, want, why string) {
		t.Helper()
		_, err = e.Ingest(ctx, connectors.Records(retractions(next, next+k)), IngestOptions{})
		require.NoError(t, err)
		next += k
		require.Equal(t, want, levels(), "generation %d, %d facts: %s", e.st.Gen, k, why)
	}
	first := storage.CheckpointName(1) + " "
	retract(half, first, "half the bound after the checkpoint keeps it")
	retract(half, first, "the bound keeps it")
	retract(1, first, "one more starts one, written ahead (state.Plan)")
	retract(half/2, first, "a quarter of the bound after it keeps it")
	retract(half/2+1, first+storage.DeltaName(4), "more than half the bound after it names it: a delta level over the checkpoint, as no chunk came since")
	retract(half+1, storage.CheckpointName(7)+" ", "more than half the bound in one commit: it writes its own, whole")
	require.NoError(t, e.Close())
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NotNil(t, e.st.Rows, "Open read the checkpoint")
	rep, err := e.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
}
