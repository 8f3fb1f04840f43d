package state

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// returnsWithin fails t unless f returns within a minute: a watchdog for
// a wait that must not block for good, not a measure of time.
func returnsWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still waiting after a minute", what)
	}
}

// TestTurnsWait: the writer's wait returns at once with no commit in
// flight, only after every commit in flight has ended, at once when
// someone wants the writer, and after max at most; a commit's end counts
// once however often it is called.
func TestTurnsWait(t *testing.T) {
	const forever = time.Hour
	t.Run("no commit in flight", func(t *testing.T) {
		var tr turns
		returnsWithin(t, "wait", func() { tr.wait(forever, nil) })
		end := tr.begin()
		end()
		returnsWithin(t, "wait after a commit ended", func() { tr.wait(forever, nil) })
	})
	t.Run("until every commit in flight ends", func(t *testing.T) {
		var tr turns
		endA, endB := tr.begin(), tr.begin()
		var ended atomic.Bool
		returned := make(chan bool)
		go func() {
			tr.wait(forever, nil)
			returned <- ended.Load()
		}()
		endA()
		endA() // a second call is not a second commit's end
		ended.Store(true)
		endB()
		if !<-returned {
			t.Fatal("wait returned before the last commit in flight ended")
		}
	})
	t.Run("someone wants the writer", func(t *testing.T) {
		var tr turns
		defer tr.begin()() // in flight throughout
		wanted := make(chan struct{})
		close(wanted)
		returnsWithin(t, "wait while wanted", func() { tr.wait(forever, wanted) })
	})
	t.Run("max", func(t *testing.T) {
		var tr turns
		defer tr.begin()()
		returnsWithin(t, "wait of a millisecond at most", func() { tr.wait(time.Millisecond, nil) })
	})
}

// errNotWritten is the error of a test's writer that writes nothing.
var errNotWritten = errors.New("not written (test)")

// TestWriterWantedGivesWayNoMore: whoever waits for a writer (the commit
// that names its file, Close, a rebase) stops it giving way, for it may be
// the commit in flight the writer gives way to: with a writer that would
// otherwise pause for an hour, each of Take, Wait, Drop and WaitRows
// returns.
func TestWriterWantedGivesWayNoMore(t *testing.T) {
	for _, c := range []struct {
		name string
		wait func(s *AheadSlot, a *Ahead)
	}{
		{"Take, by the commit that names the file", func(_ *AheadSlot, a *Ahead) { a.Take(a.gen) }},
		{"Wait", func(_ *AheadSlot, a *Ahead) { a.Wait() }},
		{"Drop, by Close", func(_ *AheadSlot, a *Ahead) { a.Drop() }},
		{"WaitRows, by a rebase", func(s *AheadSlot, _ *Ahead) { s.WaitRows() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &AheadSlot{}
			defer s.Committing()() // the commit that waits
			a := &Ahead{gen: 7, done: make(chan struct{}), wrote: make(chan struct{}), wanted: make(chan struct{}), err: errNotWritten}
			s.a = a
			asked := make(chan struct{})
			go func() {
				defer close(a.done)
				defer close(a.wrote)
				stop := a.pause(&s.turns, time.Hour)
				close(asked)
				stop()
			}()
			<-asked
			returnsWithin(t, c.name, func() { c.wait(s, a) })
		})
	}
}

// TestWriterGivesWayHalfItsTimeAtMost: commits back to back (one always in
// flight) slow the writer, never stop it: with a pause of up to an hour
// at each of its stops, two hundred stops return, and its pauses sum to
// about half the time they took at most.
func TestWriterGivesWayHalfItsTimeAtMost(t *testing.T) {
	var tr turns
	defer tr.begin()() // in flight throughout
	a := &Ahead{wanted: make(chan struct{})}
	stop := a.pause(&tr, time.Hour)
	var paused, elapsed time.Duration
	returnsWithin(t, "two hundred stops", func() {
		start := time.Now()
		for range 200 {
			t0 := time.Now()
			stop()
			paused += time.Since(t0)
			for w := time.Now(); time.Since(w) < 500*time.Microsecond; { // the writer's work between stops
			}
		}
		elapsed = time.Since(start)
	})
	// The pauses run over by a timer's lateness; the next stops make it
	// up, all but the last's: 25 ms of slack (about 100 ms of pauses).
	if paused > elapsed/2+25*time.Millisecond {
		t.Fatalf("the writer paused %v of %v: more than half", paused, elapsed)
	}
	if paused == 0 {
		t.Fatal("the writer never gave way to the commit in flight")
	}
}
