package pglog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/evlog/logtest"
	"github.com/evpack/evpack/internal/pglog"
	"github.com/evpack/evpack/internal/pgtest"
	"github.com/evpack/evpack/internal/testsize"
)

// TestPostgresConforms runs the log conformance suite on a real server, one
// database per case.
func TestPostgresConforms(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	admin := srv.Conn(t)
	n := 0
	logtest.Run(t, func(t *testing.T) logtest.Harness {
		n++
		db := fmt.Sprintf("case%d", n)
		if _, err := admin.Exec(context.Background(), "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		l, err := pglog.Open(context.Background(), srv.DSNFor(db))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return logtest.Harness{Log: l, Fence: l, Expire: func(t *testing.T) {
			c := srv.ConnTo(t, db)
			if _, err := c.Exec(context.Background(), `UPDATE evpack_writer SET expires_at = now() - interval '1 second'`); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

// TestAppendSurvivesSIGKILL acknowledges appends on a durable server, kills
// the server with SIGKILL and restarts it: every acknowledged entry is there,
// linked, and the writer's lease still fences a stale epoch.
func TestAppendSurvivesSIGKILL(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	ctx := context.Background()
	l, err := pglog.Open(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := l.Acquire(ctx, "writer-a", 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	const n = 50
	for g := int64(1); g <= n; g++ {
		e := logtest.Entry(g, prev, epoch)
		if err := l.Append(ctx, e); err != nil {
			t.Fatalf("append %d: %v", g, err)
		}
		prev = e.Sum
	}
	l.Close()
	srv.Kill(t)
	srv.Restart(t)
	l, err = pglog.Open(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := 0
	prev = ""
	err = l.Read(ctx, 1, func(e evlog.Entry) error {
		got++
		if e.Prev != prev || e.Sum != logtest.Entry(e.Generation, prev, epoch).Sum {
			return fmt.Errorf("generation %d does not link", e.Generation)
		}
		prev = e.Sum
		return nil
	})
	if err != nil || got != n {
		t.Fatalf("after SIGKILL: read %d of %d acknowledged entries: %v", got, n, err)
	}
	if err := l.Append(ctx, logtest.Entry(n+1, prev, epoch-1)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("a stale epoch after restart: %v, want ErrStaleEpoch", err)
	}
}

// TestFailoverKeepsEveryAcknowledgedAppend appends (200 at full size)
// under a synchronous standby, kills the primary with SIGKILL and promotes the standby: every
// acknowledged entry is on it, none forked, and once the lease passes to a
// new writer the old writer's appends are refused.
func TestFailoverKeepsEveryAcknowledgedAppend(t *testing.T) {
	primary := pgtest.Start(t, pgtest.Options{Durable: true})
	ctx := context.Background()
	l, err := pglog.Open(ctx, primary.DSN) // the schema exists before the standby copies it
	if err != nil {
		t.Fatal(err)
	}
	standby := primary.StartStandby(t, "s1")
	a, err := l.Acquire(ctx, "writer-a", 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	// 200 acknowledged appends at full size (.ci/run), 40 in a user's
	// go test ./...: each waits for the standby's flush.
	n := int64(40)
	if testsize.Long() {
		n = 200
	}
	t.Logf("%d appends under a synchronous standby", n)
	prev := ""
	for g := int64(1); g <= n; g++ {
		e := logtest.Entry(g, prev, a)
		if err := l.Append(ctx, e); err != nil {
			t.Fatalf("append %d: %v", g, err)
		}
		prev = e.Sum
	}
	l.Close()
	primary.Kill(t)
	standby.Promote(t)

	l2, err := pglog.Open(ctx, standby.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got, link := 0, ""
	err = l2.Read(ctx, 1, func(e evlog.Entry) error {
		got++
		if e.Prev != link || e.Epoch != a {
			return fmt.Errorf("generation %d: prev %q epoch %d, want %q and %d", e.Generation, e.Prev, e.Epoch, link, a)
		}
		link = e.Sum
		return nil
	})
	if err != nil || int64(got) != n {
		t.Fatalf("after failover: %d of %d acknowledged entries: %v", got, n, err)
	}
	// The old writer's lease is replicated too: an operator ends it (a new
	// writer would otherwise wait out its expiry), and the next writer's
	// epoch fences the old one.
	c := standby.Conn(t)
	if _, err := c.Exec(ctx, `UPDATE evpack_writer SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	b, err := l2.Acquire(ctx, "writer-b", 1<<40)
	if err != nil || b <= a {
		t.Fatalf("new writer: epoch %d (old %d): %v", b, a, err)
	}
	if err := l2.Append(ctx, logtest.Entry(n+1, link, a)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the old writer after failover: %v, want ErrStaleEpoch", err)
	}
	if err := l2.Append(ctx, logtest.Entry(n+1, link, b)); err != nil {
		t.Errorf("the new writer after failover: %v", err)
	}
}
