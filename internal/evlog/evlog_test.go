package evlog_test

import (
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
