package evlog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/evlog/logtest"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestMemoryConforms(t *testing.T) {
	logtest.Run(t, func(t *testing.T) logtest.Harness {
		clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		m := evlog.NewMemory(clock.now)
		return logtest.Harness{Log: m, Fence: m, Expire: func(*testing.T) { clock.t = clock.t.Add(2 * time.Hour) }}
	})
}

func TestCommitTime(t *testing.T) {
	head := evlog.Head{Generation: 3, CommittedAt: time.Date(2026, 1, 15, 9, 0, 5, 0, time.UTC)}
	cases := []struct {
		name        string
		now         time.Time
		want        time.Time
		wantClamped bool
	}{
		{"a clock ahead of the head is kept, in whole seconds, UTC",
			time.Date(2026, 1, 15, 10, 0, 5, 999, time.FixedZone("X", 3600)), time.Date(2026, 1, 15, 9, 0, 5, 0, time.UTC), false},
		{"a clock behind the head is raised to it and says so",
			time.Date(2026, 1, 15, 9, 0, 4, 0, time.UTC), head.CommittedAt, true},
		{"the head's own second is not behind it",
			time.Date(2026, 1, 15, 9, 0, 5, 500, time.UTC), head.CommittedAt, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, clamped := evlog.CommitTime(head, tc.now)
			if !got.Equal(tc.want) || got.Location() != time.UTC || clamped != tc.wantClamped {
				t.Errorf("CommitTime = %s (%s), %t; want %s, %t", got, got.Location(), clamped, tc.want, tc.wantClamped)
			}
		})
	}
}

// TestFollowAppliesInOrderAndStops: Follow applies each entry once, in
// order, from where the follower stands, returns at its target, wakes for
// an append after it has caught up, and stops on the first apply error.
func TestFollowAppliesInOrderAndStops(t *testing.T) {
	ctx := context.Background()
	m := evlog.NewMemory(time.Now)
	epoch, err := m.Acquire(ctx, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w := &evlog.Writer{Log: m, Fence: m, Holder: "w", Epoch: epoch, Lease: time.Hour}
	prev := ""
	appendN := func(g int64) {
		sum := fmt.Sprintf("s%d", g)
		if err := w.Append(ctx, evlog.Entry{Generation: g, Prev: prev, Sum: sum, Body: []byte{byte(g)}, CommittedAt: time.Unix(g, 0)}); err != nil {
			t.Fatal(err)
		}
		prev = sum
	}
	for g := int64(1); g <= 3; g++ {
		appendN(g)
	}
	var got []int64
	at := int64(1) // the follower already holds generation 1
	apply := func(e evlog.Entry) error { got = append(got, e.Generation); at = e.Generation; return nil }
	head := func() (int64, string) { return at, fmt.Sprintf("s%d", at) } // the follower's generation and its sum
	if err := evlog.Follow(ctx, m, head, 3, apply); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("applied %v, want [2 3]", got)
	}
	done := make(chan error, 1)
	go func() { done <- evlog.Follow(ctx, m, head, 5, apply) }()
	appendN(4) // evlog.Follow may be reading or waiting: either way it sees 4 and 5
	appendN(5)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[2 3 4 5]" {
		t.Fatalf("applied %v, want [2 3 4 5]", got)
	}
	boom := errors.New("disk full")
	at = 3
	err = evlog.Follow(ctx, m, head, 0, func(e evlog.Entry) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("evlog.Follow returned %v, want the apply error", err)
	}
	at = 9
	if err := evlog.Follow(ctx, m, head, 0, apply); !errors.Is(err, evlog.ErrGap) {
		t.Fatalf("a follower ahead of the log: %v, want evlog.ErrGap", err)
	}
	at = 5
	forked := func() (int64, string) { return at, "another s5" }
	if err := evlog.Follow(ctx, m, forked, 5, apply); !errors.Is(err, evlog.ErrChain) {
		t.Fatalf("a follower whose generation 5 is not the log's: %v, want evlog.ErrChain (it returned nil at its Until)", err)
	}
	appendN(6) // the log's head past the follower's generation: only the entry at 5 tells the fork
	for _, until := range []int64{3, 5} {
		if err := evlog.Follow(ctx, m, forked, until, apply); !errors.Is(err, evlog.ErrChain) {
			t.Fatalf("Follow(until %d) by a follower at 5 whose generation 5 is not the log's, head 6: %v, want evlog.ErrChain", until, err)
		}
		if err := evlog.Follow(ctx, m, head, until, apply); err != nil {
			t.Fatalf("Follow(until %d) by a follower at 5 that agrees with the log: %v", until, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := evlog.Follow(cctx, m, head, 0, apply); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v", err)
	}
	// A writer whose lease passed to another is refused before the log changes.
	if err := m.Release(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx, "v", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, evlog.Entry{Generation: 7, Prev: prev, Sum: "s7", Body: []byte{7}, CommittedAt: time.Unix(7, 0)}); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Fatalf("a fenced writer's append: %v, want evlog.ErrStaleEpoch", err)
	}
}
