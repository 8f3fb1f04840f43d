package evpack

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// deltaBase is the chunks the first commit of TestDeltaLevels holds: the
// checkpoint the delta levels are written over. One-chunk commits after
// it are written as delta levels until more than a DeltaShare-th of it
// was committed since (state.DeltaAt).
const deltaBase = 1200

// TestDeltaLevels (issue 30): past the checkpoint's lag, while little has
// been committed since the checkpoint, the checkpoint written ahead is a
// delta level over it (storage.Manifest.Delta) holding the document
// versions committed to since, and the checkpoint stays; the next delta
// holds the previous one's documents and its own; past a DeltaShare-th of
// the checkpoint's chunks the next is whole again, and the delta goes. At
// every step the writer, a replica applying its log and a replica that
// opened again in the window hold the same files byte for byte, Check is
// clean, the writer opened again answers every pack as an index in memory
// that took the same commits, and the state it reads holds in its maps
// only what was committed after the newest level. The one-chunk commits
// join documents of the checkpoint (copied out of its rows, then out of the
// delta's), and some carry a fact.
func TestDeltaLevels(t *testing.T) {
	ctx := context.Background()
	wdir, rdir := t.TempDir(), t.TempDir()
	w, r := checked(t, mustOpen(t, wdir)), checked(t, mustOpen(t, rdir))
	mem := memEngine(t, Options{})
	recs := vocabularyRecords(t, "acme", "a", deltaBase+4*state.CheckpointLag, 7)
	others := vocabularyRecords(t, "globex", "g", 2*state.CheckpointLag, 11)
	commit := func(batch []connectors.Record) {
		t.Helper()
		for _, e := range []*Engine{w, mem} {
			_, err := e.Ingest(ctx, connectors.Records(batch), IngestOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, applyBody(ctx, r, committedEntry(t, wdir, committedState(w).Gen)))
	}
	commit(recs[:deltaBase])
	manifest := func(dir string) *storage.Manifest { return storagetest.ReadManifest(t, dir) }
	require.Equal(t, storage.CheckpointName(1), manifest(wdir).Checkpoint)

	var reqs []Request
	for i := 0; i < len(recs); i += 97 {
		reqs = append(reqs, Request{Question: recs[i].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5})
	}
	reqs = append(reqs, Request{Question: others[5].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "globex", K: 5})

	// verify checks the three indexes at a level named (what the manifest
	// names: checkpoint and delta).
	verify := func(ckpt, delta string) {
		t.Helper()
		for _, dir := range []string{wdir, rdir} {
			m := manifest(dir)
			require.Equal(t, ckpt, m.Checkpoint, dir)
			require.Equal(t, delta, m.Delta, dir)
			if delta == "" {
				require.Empty(t, m.DeltaSum)
			}
		}
		requireSameFiles(t, wdir, rdir, "the replica")
		for _, e := range []*Engine{w, r} {
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%s at %s and %s: %v", e.dir, ckpt, delta, rep.Problems)
		}
		g := committedState(w).Gen
		require.Equal(t, manifest(wdir).LevelGeneration(), committedState(w).Base, "the naming commit reads the level back (Engine.rebase)")
		require.Equal(t, manifest(rdir).LevelGeneration(), committedState(r).Base, "and so does the replica's")
		for i := range reqs {
			reqs[i].Generation = 0
		}
		want := packsOf(t, mem, reqs)
		require.Equal(t, want, packsOf(t, w, reqs), "the writer, at %d", g)
		require.NoError(t, w.Close())
		w = checked(t, mustOpen(t, wdir))
		st := committedState(w)
		require.Equal(t, manifest(wdir).LevelGeneration(), st.Base, "opened again: read from the newest level")
		require.Equal(t, delta != "", st.Rows.Over != nil)
		require.Equal(t, want, packsOf(t, w, reqs), "the writer opened again, at %d", g)
		for i := range reqs {
			reqs[i].Generation = max(1, g-int64(3*i)%g)
		}
		require.Equal(t, packsOf(t, mem, reqs), packsOf(t, w, reqs), "earlier generations, opened again at %d", g)
		for _, id := range []string{recs[0].Chunk.ID, recs[deltaBase].Chunk.ID} {
			c, err := st.ChunkOf(id)
			require.NoError(t, err)
			require.Equal(t, id, c.ID)
		}
	}

	// Commit one chunk at a time, joining the checkpoint's documents (and
	// every seventh a chunk of another tenant, every eleventh a fact on an
	// earlier chunk), until the whole checkpoint after the deltas is named.
	var seen []string // the levels named, in order
	next, other := deltaBase, 0
	for len(seen) < 3 {
		batch := []connectors.Record{recs[next]}
		next++
		if next%7 == 0 {
			batch = append(batch, others[other])
			other++
		}
		if next%11 == 0 {
			batch = append(batch, connectors.Record{Where: "facts", Fact: &evidence.Fact{Kind: evidence.FactRetracted, ChunkID: recs[next-deltaBase].Chunk.ID,
				End: asof.MustDate("2025-01-01"), Anchor: asof.MustDate("2025-01-02").Start()}})
		}
		commit(batch)
		m := manifest(wdir)
		name := m.Checkpoint + " " + m.Delta
		if len(seen) == 0 && name == storage.CheckpointName(1)+" " || len(seen) > 0 && name == seen[len(seen)-1] {
			continue
		}
		seen = append(seen, name)
		t.Logf("generation %d names %q", m.Generation, name)
		verify(m.Checkpoint, m.Delta)
		if m.Delta != "" {
			g := m.DeltaGeneration()
			require.True(t, state.DeltaAt(m, g))
			_, err := os.Stat(filepath.Join(wdir, storage.CheckpointName(g)))
			require.ErrorIs(t, err, os.ErrNotExist, "a delta, not a checkpoint")
		}
	}
	m := manifest(wdir)
	require.Empty(t, m.Delta, "the third level named is whole: %q", seen)
	require.NotEqual(t, storage.CheckpointName(1), m.Checkpoint)
	require.Contains(t, seen[0], "delta-")
	require.Contains(t, seen[1], "delta-")
	for _, old := range []string{storage.CheckpointName(1)} {
		require.NoFileExists(t, filepath.Join(wdir, old))
	}
	matches, err := filepath.Glob(filepath.Join(wdir, "delta-*"))
	require.NoError(t, err)
	require.Empty(t, matches, "no delta level is left once a whole checkpoint replaced it")
}

// deltaIndex is an index (wdir, engine w) whose manifest names a delta
// level over its checkpoint of generation 1, and an index in memory (mem)
// that took the same commits; recs are acme's records, the first
// deltaBase in the checkpoint, then one a commit.
type deltaIndex struct {
	w, mem *Engine
	wdir   string
	recs   []connectors.Record
}

// newDeltaIndex commits one chunk at a time after a checkpoint of
// deltaBase chunks until the first delta level is named.
func newDeltaIndex(t *testing.T) *deltaIndex {
	t.Helper()
	x := &deltaIndex{wdir: t.TempDir(), mem: memEngine(t, Options{})}
	x.w = mustOpen(t, x.wdir)
	t.Cleanup(func() { x.w.Close() })
	x.recs = vocabularyRecords(t, "acme", "a", deltaBase+2*state.CheckpointLag, 7)
	x.commit(t, x.recs[:deltaBase])
	// A fifth of the commits join a document of the checkpoint, the rest
	// start new ones: some of its documents stay its alone.
	more := vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 13)
	for i := 0; storagetest.ReadManifest(t, x.wdir).Delta == ""; i++ {
		r := more[i]
		if i%5 == 0 {
			r = x.recs[deltaBase+i/5]
		}
		x.commit(t, []connectors.Record{r})
	}
	x.recs = append(x.recs, more...)
	return x
}

func (x *deltaIndex) commit(t *testing.T, batch []connectors.Record) {
	t.Helper()
	for _, e := range []*Engine{x.w, x.mem} {
		_, err := e.Ingest(context.Background(), connectors.Records(batch), IngestOptions{})
		require.NoError(t, err)
	}
}

// requests are a few of acme's questions as of a day after every chunk.
func (x *deltaIndex) requests() []Request {
	var reqs []Request
	for i := 0; i < len(x.recs); i += 61 {
		reqs = append(reqs, Request{Question: x.recs[i].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5})
	}
	return reqs
}

// TestDeltaLevelEdited (issue 30): a delta level is sealed and checked as
// a checkpoint is. An edited byte in its head fails Open with ErrCorrupt;
// one in its first row fails Open the same way when Open reads that block,
// else Check names the file, and every request that reads the block fails
// rather than answer from it; a delta gone fails Open.
func TestDeltaLevelEdited(t *testing.T) {
	x := newDeltaIndex(t)
	require.NoError(t, x.w.Close())
	m := storagetest.ReadManifest(t, x.wdir)
	path := filepath.Join(x.wdir, m.Delta)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	edit := func(t *testing.T, at int) {
		t.Helper()
		raw := append([]byte(nil), good...)
		raw[at] ^= 0x20
		require.NoError(t, os.WriteFile(path, raw, 0o644))
		t.Cleanup(func() { require.NoError(t, os.WriteFile(path, good, 0o644)) })
	}
	t.Run("head", func(t *testing.T) {
		edit(t, 40)
		_, err := Open(x.wdir, Options{})
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, m.Delta)
	})
	t.Run("rows", func(t *testing.T) {
		// The first row, in the body's first page after the head's.
		headEnd := len(checkpoint.Format) + 8 + int(binary.LittleEndian.Uint64(good[len(checkpoint.Format):])) + 32
		edit(t, (headEnd+4095)&^4095+8)
		e, err := Open(x.wdir, Options{})
		if err != nil { // Open read that block (a fact's chunk, or the catalog's): refused there
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, m.Delta)
			return
		}
		defer e.Close()
		rep, err := e.CheckIndex(context.Background())
		require.NoError(t, err)
		require.False(t, rep.OK())
		require.Contains(t, fmt.Sprint(rep.Problems), m.Delta+" differs from the delta level the batch files give")
		failed := 0
		for _, r := range x.requests() {
			r.K = 50
			if _, err := e.Query(context.Background(), r); err != nil {
				require.ErrorIs(t, err, ErrCorrupt)
				failed++
			}
		}
		t.Logf("%d requests read the edited block and failed", failed)
	})
	t.Run("gone", func(t *testing.T) {
		require.NoError(t, os.Rename(path, path+".away"))
		t.Cleanup(func() { require.NoError(t, os.Rename(path+".away", path)) })
		_, err := Open(x.wdir, Options{})
		require.Error(t, err)
	})
	e := checked(t, mustOpen(t, x.wdir))
	require.Equal(t, packsOf(t, x.mem, x.requests()), packsOf(t, e, x.requests()), "the file put back")
}

// TestDeltaLevelPurgeAndHistory (issue 30): an index opened from a
// checkpoint and a delta level over it, one commit after it holding in
// memory a document copied out of the delta, unfolds all three (a purge,
// History):
// the purge of a chunk whose document the delta holds and of one only the
// checkpoint holds answers as the index in memory that purged the same,
// writes a whole checkpoint and drops the delta; History is the memory
// index's.
func TestDeltaLevelPurgeAndHistory(t *testing.T) {
	ctx := context.Background()
	x := newDeltaIndex(t)
	require.NoError(t, x.w.Close())
	x.w = checked(t, mustOpen(t, x.wdir))
	over := committedState(x.w).Rows.Over
	require.NotNil(t, over)
	// a-1200 joined document a-doc-16 of the checkpoint: the delta holds
	// every chunk of it, a-0016 among them.
	inDelta := x.recs[16].Chunk.ID
	_, _, ok := over.Find(inDelta)
	require.True(t, ok, "%s is in the delta", inDelta)
	var onlyBase string
	for _, r := range x.recs[:deltaBase] {
		if _, _, ok := over.Find(r.Chunk.ID); !ok {
			onlyBase = r.Chunk.ID
			break
		}
	}
	require.NotEmpty(t, onlyBase)
	// a-1237 joins a-doc-16 too: its commit copies that document out of
	// the delta into memory, which then holds it beside the delta's rows.
	x.commit(t, x.recs[deltaBase+37:deltaBase+38])
	require.Contains(t, committedState(x.w).Chunks, inDelta, "copied out of the delta")
	unfolded, err := committedState(x.w).Unfold(x.w.store)
	require.NoError(t, err, "unfolded from the three, not built from the batch files instead")
	loaded, err := state.LoadState(x.w.store, x.w.lex, x.w.emb, x.w.graph)
	require.NoError(t, err)
	sameState(t, loaded, unfolded)
	history := func(e *Engine) []state.Commit {
		h, err := e.History()
		require.NoError(t, err)
		for i := range h {
			h[i].CommittedAt = time.Time{} // the two indexes committed a second apart at times
		}
		return h
	}
	require.Equal(t, history(x.mem), history(x.w), "History unfolds the checkpoint and the delta")
	for _, e := range []*Engine{x.w, x.mem} {
		_, err := e.Purge(ctx, []string{inDelta, onlyBase}, "erasure request")
		require.NoError(t, err)
	}
	m := storagetest.ReadManifest(t, x.wdir)
	require.Empty(t, m.Delta, "a purge writes a whole checkpoint")
	require.Equal(t, storage.CheckpointName(m.Generation), m.Checkpoint)
	require.Equal(t, packsOf(t, x.mem, x.requests()), packsOf(t, x.w, x.requests()))
	require.NoError(t, x.w.Close())
	x.w = checked(t, mustOpen(t, x.wdir))
	require.Equal(t, packsOf(t, x.mem, x.requests()), packsOf(t, x.w, x.requests()), "opened again after the purge")
}
