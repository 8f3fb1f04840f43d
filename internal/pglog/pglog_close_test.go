package pglog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evpack/evpack/internal/pglog"
	"github.com/evpack/evpack/internal/pgtest"
)

// TestCloseEndsWait: Close while a Wait listens for the next append (a
// replica following a quiet log) ends the Wait with ErrClosed and returns.
// Close waited for the pool's connections to come back, and the waiting one
// came back only when the Wait's context ended: for ever without a deadline.
func TestCloseEndsWait(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	l, err := pglog.Open(context.Background(), srv.DSN+"&application_name=waiter")
	if err != nil {
		t.Fatal(err)
	}
	// The deadline only keeps a failing test from hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { _, err := l.Wait(ctx, 0); waited <- err }()
	// The Wait listens once its connection ran LISTEN and read the head.
	admin := srv.Conn(t)
	for {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'waiter' AND state = 'idle' AND query LIKE 'SELECT generation, sum, committed_at%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	err = <-waited
	if !errors.Is(err, pglog.ErrClosed) {
		t.Fatalf("Wait after Close: %v, want ErrClosed", err)
	}
	<-closed
}
