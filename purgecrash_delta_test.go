package evpack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/storagetest"
)

// TestPurgeCrashOverDelta (an adversarial review, stop 80): an index whose manifest
// names a delta level over its checkpoint purges two chunks (one whose
// document the delta holds, one only the checkpoint holds), and the purge is
// stopped at every point a crash or a failing disk can stop it: each
// rename, each directory fsync, before and after the manifest, either as a
// crash (the goroutine ends there, nothing tidied) or as an error returned.
// Opened again, the index answers every request byte for byte as the index
// before the purge (rolled back) or after it (committed), Check is clean,
// and a committed purge cites neither chunk.
func TestPurgeCrashOverDelta(t *testing.T) {
	ctx := context.Background()
	x := newDeltaIndex(t)
	require.NoError(t, x.w.Close())
	base := x.wdir
	m0 := storagetest.ReadManifest(t, base)
	require.NotEmpty(t, m0.Delta)
	ids := []string{x.recs[16].Chunk.ID, x.recs[700].Chunk.ID}
	reqs := x.requests()
	for _, id := range []int{16, 700} {
		reqs = append(reqs, Request{Question: x.recs[id].Chunk.Text, AsOf: asof.MustDate("2026-06-01"), Tenant: "acme", K: 5})
	}
	for i := range 3 {
		r := reqs[i]
		r.Generation = m0.Generation - int64(i)
		reqs = append(reqs, r)
	}

	copyBase := func(t *testing.T) string {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
		return dir
	}
	// The packs before, and after a purge that completes, counting the
	// renames and fsyncs it makes.
	var before, after [][]byte
	var renames, syncs int
	{
		e := mustOpen(t, copyBase(t))
		before = packsOf(t, e, reqs)
		e.store.Hooks.BeforeRename = func(string) error { renames++; return nil }
		e.store.Hooks.BeforeSyncDir = func(string) error { syncs++; return nil }
		_, err := e.Purge(ctx, ids, "erasure")
		require.NoError(t, err)
		e.store.Hooks = storage.Hooks{}
		after = packsOf(t, e, reqs)
		require.NoError(t, e.Close())
	}
	require.NotEqual(t, before, after, "the purge changes some pack")
	t.Logf("a purge over a delta makes %d renames and %d directory fsyncs", renames, syncs)

	errDisk := errors.New("injected: the disk fails")
	type point struct {
		name string
		set  func(h *storage.Hooks, act func() error)
	}
	var points []point
	for k := 1; k <= renames; k++ {
		points = append(points, point{fmt.Sprintf("rename %d", k), func(h *storage.Hooks, act func() error) {
			n := 0
			h.BeforeRename = func(string) error {
				if n++; n == k {
					return act()
				}
				return nil
			}
		}})
	}
	for k := 1; k <= syncs; k++ {
		points = append(points, point{fmt.Sprintf("fsync %d", k), func(h *storage.Hooks, act func() error) {
			n := 0
			h.BeforeSyncDir = func(string) error {
				if n++; n == k {
					return act()
				}
				return nil
			}
		}})
	}
	points = append(points,
		point{"before the manifest", func(h *storage.Hooks, act func() error) { h.BeforeManifest = act }},
		point{"after the manifest", func(h *storage.Hooks, act func() error) {
			h.AfterManifest = func() { runtime.Goexit() }
		}})

	for _, p := range points {
		for _, crash := range []bool{true, false} {
			how := "error"
			if crash {
				how = "crash"
			}
			t.Run(p.name+" "+how, func(t *testing.T) {
				dir := copyBase(t)
				e, err := Open(dir, Options{})
				require.NoError(t, err)
				var purgeG atomic.Int64
				act := func() error { return errDisk }
				if crash {
					act = func() error {
						if gid() != purgeG.Load() {
							return errDisk // not the purge's own goroutine: fail it instead
						}
						runtime.Goexit()
						return nil
					}
				}
				p.set(&e.store.Hooks, act)
				done := make(chan error, 1)
				go func() {
					defer close(done)
					purgeG.Store(gid())
					_, err := e.Purge(ctx, ids, "erasure")
					done <- err
				}()
				var perr error
				var returned bool
				select {
				case perr, returned = <-done:
				case <-time.After(60 * time.Second):
					t.Fatalf("the purge neither returned nor stopped")
				}
				if returned && perr == nil && !crash {
					// An fsync after the commit's own (tidying) is best effort.
					t.Logf("purge returned nil")
				}
				if returned {
					e.Close()
				} else { // a crash: nothing more of this process runs
					require.NoError(t, e.lex.Close())
					require.NoError(t, e.store.Close())
				}
				e, err = Open(dir, Options{})
				require.NoError(t, err, "reopen after %s at %s (purge said %v)", how, p.name, perr)
				defer e.Close()
				got := packsOf(t, e, reqs)
				gen := committedState(e).Gen
				switch gen {
				case m0.Generation:
					require.Equal(t, before, got, "rolled back: the packs before")
				case m0.Generation + 1:
					require.Equal(t, after, got, "committed: the packs after")
					for _, i := range []int{16, 700} {
						for _, f := range grepDir(t, dir, x.recs[i].Chunk.Text) {
							if !strings.Contains(f, "/"+storage.LexicalDir+"/") {
								t.Errorf("%s still holds the purged text of %s", f, x.recs[i].Chunk.ID)
							} else {
								t.Logf("%s (lexical) still holds the purged text of %s", f, x.recs[i].Chunk.ID)
							}
						}
					}
				default:
					t.Fatalf("generation %d after a purge of %d", gen, m0.Generation)
				}
				rep, err := e.CheckIndex(ctx)
				require.NoError(t, err)
				require.True(t, rep.OK(), "%q", rep.Problems)
				require.Empty(t, rep.Strays)
				// The purge made again, if it was rolled back: the packs after.
				if gen == m0.Generation {
					_, err = e.Purge(ctx, ids, "erasure")
					require.NoError(t, err)
					require.Equal(t, after, packsOf(t, e, reqs), "purged after the rollback")
				}
				require.NoError(t, e.Check())
			})
		}
	}
}

// gid returns the calling goroutine's number.
func gid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(strings.TrimPrefix(string(buf), "goroutine "))
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}
