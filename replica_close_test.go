package evpack

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/evlog"
)

// memoryWriter returns a log in memory that a writer leads through k
// generations (replicaRecords), and the writer.
func memoryWriter(t *testing.T, k int) (*evlog.Memory, *Engine) {
	t.Helper()
	ctx := context.Background()
	log := evlog.NewMemory(func() time.Time { return time.Unix(1700000000, 0) })
	w := checked(t, mustOpen(t, t.TempDir()))
	require.NoError(t, w.Lead(ctx, log, "writer", time.Hour))
	for g := 1; g <= k; g++ {
		_, err := w.Ingest(ctx, connectors.Records(replicaRecords(g)), IngestOptions{})
		require.NoError(t, err)
	}
	return log, w
}

// TestFollowEndsWhenTheReplicaCloses: a replica following a quiet log
// (Until 0) that is closed ends its Follow with ErrClosed. It waited in
// the log's Wait until its context ended, for ever without a deadline: a
// goroutine left running after Close.
func TestFollowEndsWhenTheReplicaCloses(t *testing.T) {
	log, _ := memoryWriter(t, 2)
	r := mustOpen(t, t.TempDir())
	// The deadline only keeps a failing test from hanging: Close must end
	// Follow long before it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- r.Follow(ctx, log, FollowOptions{}) }()
	_, err := r.Query(ctx, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 2})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	err = <-got
	require.ErrorIs(t, err, ErrClosed)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}

// TestReplicaPacksWhileFollowing: queries, pinned and latest, and Verify
// run on a replica while it follows and applies a writer's log (run it
// under -race), over commits of tenants, the shared corpus, a fact and a
// purge.
// Each pack equals, byte for byte, the writer's pack of the
// same request pinned to the generation it reads: a query never sees a
// half-applied commit, and a replica's pack verifies.
func TestReplicaPacksWhileFollowing(t *testing.T) {
	const gens = 16 // 14 ends an earlier chunk (a fact), 16 purges one
	ctx := context.Background()
	log, w := memoryWriter(t, gens-1)
	_, err := w.Purge(ctx, []string{"c003"}, "a takedown")
	require.NoError(t, err)
	tenants := []string{"", "acme", "globex"}
	questions := []string{"retention records", "capital liquidity audit", "ledger filing revenue"}
	req := func(g int64, tenant, q string, pinned bool) Request {
		r := Request{Question: q, AsOf: asof.MustDate("2023-06-01"), Tenant: tenant, MinGeneration: g}
		if pinned {
			r.Generation = g
		}
		return r
	}
	want := map[[3]string][]byte{} // generation, tenant, question: the writer's pack
	for g := int64(1); g <= gens; g++ {
		for _, tn := range tenants {
			for _, q := range questions {
				p, err := w.Query(ctx, req(g, tn, q, true))
				require.NoError(t, err)
				want[[3]string{fmt.Sprint(g), tn, q}] = p.Bytes()
			}
		}
	}
	r := checked(t, mustOpen(t, t.TempDir()))
	follow := make(chan error, 1)
	go func() { follow <- r.Follow(ctx, log, FollowOptions{Until: gens}) }()
	errs := make(chan error, 2*gens)
	for g := int64(1); g <= gens; g++ {
		go func() {
			for i, tn := range tenants {
				q := questions[(int(g)+i)%len(questions)]
				pinned, err := r.Query(ctx, req(g, tn, q, true))
				if err != nil {
					errs <- fmt.Errorf("generation %d, tenant %q: %w", g, tn, err)
					return
				}
				if w := want[[3]string{fmt.Sprint(g), tn, q}]; !bytes.Equal(pinned.Bytes(), w) {
					errs <- fmt.Errorf("generation %d, tenant %q: pinned pack differs from the writer's:\n%s\n---\n%s", g, tn, pinned.Bytes(), w)
					return
				}
				if _, err := r.Verify(ctx, pinned.Bytes()); err != nil {
					errs <- fmt.Errorf("generation %d, tenant %q: verify: %w", g, tn, err)
					return
				}
				latest, err := r.Query(ctx, req(g, tn, q, false))
				if err != nil {
					errs <- fmt.Errorf("generation %d, tenant %q, latest: %w", g, tn, err)
					return
				}
				if _, err := r.Verify(ctx, latest.Bytes()); err != nil {
					errs <- fmt.Errorf("generation %d, tenant %q: verify latest: %w", g, tn, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range gens {
		require.NoError(t, <-errs)
	}
	require.NoError(t, <-follow)
	require.EqualValues(t, gens, r.AppliedGeneration())
}

// TestCloseDuringFollowAndQueries: Close while a replica applies the log
// and requests wait for generations it has yet to apply, or run: every call
// ends, with a pack or ErrClosed (never a panic, another error or a hang),
// and no goroutine the replica started is left running.
func TestCloseDuringFollowAndQueries(t *testing.T) {
	const gens = 9
	ctx := context.Background()
	log, _ := memoryWriter(t, gens)
	before := runtime.NumGoroutine()
	r := mustOpen(t, t.TempDir())
	follow := make(chan error, 1)
	go func() { follow <- r.Follow(ctx, log, FollowOptions{}) }()
	const calls = 12
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			p, err := r.Query(ctx, Request{Question: "retention records", AsOf: asof.MustDate("2023-06-01"), Tenant: []string{"", "acme", "globex"}[i%3],
				MinGeneration: int64(i + 1)})
			if err == nil {
				_, err = r.Verify(ctx, p.Bytes())
			}
			errs <- err
		}()
	}
	_, err := r.Query(ctx, Request{Question: "audit", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 3})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	for range calls {
		if err := <-errs; err != nil {
			require.ErrorIs(t, err, ErrClosed)
		}
	}
	err = <-follow
	require.ErrorIs(t, err, ErrClosed)
	_, err = r.Query(ctx, Request{Question: "audit", AsOf: asof.MustDate("2023-06-01")})
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, r.Follow(ctx, log, FollowOptions{}), ErrClosed)
	for range 100 { // goroutines that returned may take a moment to exit
		if runtime.NumGoroutine() <= before {
			break
		}
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before the replica, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestFollowEndsWhenItsLogCloses: closing the PostgresLog a replica
// follows (Until 0) while it waits for the next entry ends Follow with
// ErrLogClosed, and the log's Close returns. Close waited for the waiting
// connection, which came back only when Follow's context ended.
func TestFollowEndsWhenItsLogCloses(t *testing.T) {
	ctx := context.Background()
	_, _, openLog := logWithWriter(t, 2)
	log := openLog()
	r := checked(t, mustOpen(t, t.TempDir()))
	wait, cancel := context.WithTimeout(ctx, 20*time.Second) // keeps a failing test from hanging
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- r.Follow(wait, log, FollowOptions{}) }()
	_, err := r.Query(wait, Request{Question: "retention", AsOf: asof.MustDate("2023-06-01"), MinGeneration: 2})
	require.NoError(t, err)
	log.Close()
	err = <-got
	require.ErrorIs(t, err, ErrLogClosed)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.EqualValues(t, 2, r.AppliedGeneration())
}
