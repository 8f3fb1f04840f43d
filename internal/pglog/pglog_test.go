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
