package evpack

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestDamagedAheadFileNotNamed (an adversarial review, stop 80): a checkpoint
// written ahead is a temp file for the commits of its window; a byte of
// its head damaged there (a bad sector, an edit) before its writer reads
// it back makes that read-back fail its checksum, yet the commit that
// names it adopted it anyway, with the checksum computed in memory: the
// manifest named a checkpoint that does not match it, and the index,
// whose every batch file is whole, no longer opened (ErrCorrupt). The
// naming commit must not name a file known damaged: it writes the
// checkpoint itself, and the index opens again and answers as its replica.
func TestDamagedAheadFileNotNamed(t *testing.T) {
	ctx := context.Background()
	a := newAheadWindow(t)
	a.recs = append(a.recs, vocabularyRecords(t, "acme", "b", 2*state.CheckpointLag, 11)...)
	for a.checkpoint(a.wdir) == storage.CheckpointName(1) {
		a.commitChunk()
	}
	named := a.checkpoint(a.wdir)
	// The next window: hold its writer once its file is written, before
	// it reads it back.
	release := a.holdNextWriter(a.commitChunk)
	started := state.Window(a.w.store)
	require.NotZero(t, started)
	ahead := temps(t, a.wdir)
	require.Len(t, ahead, 1)
	raw, err := os.ReadFile(ahead[0])
	require.NoError(t, err)
	raw[100] ^= 0xff // in the head
	require.NoError(t, os.WriteFile(ahead[0], raw, 0o644))
	release()
	a.w.ahead.Wait()
	for a.checkpoint(a.wdir) == named {
		a.commitChunk()
	}
	require.Equal(t, storage.CheckpointName(started), a.checkpoint(a.wdir))
	var reqs []Request
	for g := int64(1); g <= committedState(a.w).Gen; g += 7 {
		reqs = append(reqs, Request{Question: a.recs[g].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5, Generation: g})
	}
	want := packsOf(t, a.r, reqs)
	require.Equal(t, want, packsOf(t, a.w, reqs))
	require.NoError(t, a.w.Close())
	e, err := Open(a.wdir, Options{})
	require.NoError(t, err, "the commit named a checkpoint its writer read back as damaged")
	a.w = checked(t, e)
	require.Equal(t, want, packsOf(t, a.w, reqs), "reopened")
	rep, err := a.w.CheckIndex(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
	requireSameFiles(t, a.wdir, a.rdir, "the writer and its replica")
	_ = filepath.Join
}

// TestDamagedAheadDeltaNotNamed is TestDamagedAheadFileNotNamed for a
// delta level written ahead (over a checkpoint of deltaBase chunks).
func TestDamagedAheadDeltaNotNamed(t *testing.T) {
	x := &deltaIndex{wdir: t.TempDir(), mem: memEngine(t, Options{})}
	x.w = mustOpen(t, x.wdir)
	t.Cleanup(func() { x.w.Close() })
	x.recs = vocabularyRecords(t, "acme", "a", deltaBase+2*state.CheckpointLag, 7)
	x.commit(t, x.recs[:deltaBase])
	written, goOn := make(chan struct{}), make(chan struct{})
	x.w.ahead.Then.Written = func() {
		close(written)
		<-goOn
	}
	next := deltaBase
	for held := false; !held; {
		x.commit(t, x.recs[next:next+1])
		next++
		select {
		case <-written:
			held = true
		default:
		}
	}
	x.w.ahead.Then.Written = nil
	ahead := temps(t, x.wdir)
	require.Len(t, ahead, 1)
	require.Contains(t, filepath.Base(ahead[0]), ".delta-", "a delta level written ahead")
	raw, err := os.ReadFile(ahead[0])
	require.NoError(t, err)
	raw[100] ^= 0xff // in the head
	require.NoError(t, os.WriteFile(ahead[0], raw, 0o644))
	close(goOn)
	x.w.ahead.Wait()
	for storagetest.ReadManifest(t, x.wdir).Delta == "" {
		x.commit(t, x.recs[next:next+1])
		next++
	}
	x.recs = x.recs[:next]
	want := packsOf(t, x.mem, x.requests())
	require.Equal(t, want, packsOf(t, x.w, x.requests()))
	require.NoError(t, x.w.Close())
	e, err := Open(x.wdir, Options{})
	require.NoError(t, err, "the commit named a delta level its writer read back as damaged")
	x.w = checked(t, e)
	require.Equal(t, want, packsOf(t, x.w, x.requests()), "reopened")
	rep, err := x.w.CheckIndex(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%q", rep.Problems)
}
