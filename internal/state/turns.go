package state

import (
	"sync"
	"time"
)

// turns counts an engine's commits in flight, for the checkpoint's writer
// to give way to (Ahead.pause). The zero value counts none. It is safe for
// concurrent use.
//
// Why: on two cores the writer (every core, then 332 MB to the disk at a
// million chunks) and a commit of one fact share the cores and the disk:
// the slowest of the commits made while it wrote took 48 to 59 ms, against
// 15 to 16 ms without a writer. Pausing at its stops while a commit is in
// flight, the slowest took 36 to 39 ms (docs/benchmarks.md, "The
// checkpoint's writer gives way"), and 20 to 34 ms once it paused up to
// three quarters of its time (pauseShare).
type turns struct {
	mu   sync.Mutex
	n    int           // commits in flight
	idle chan struct{} // closed when n falls to 0
}

// begin counts a commit in flight until the func it returns is called
// (once; later calls do nothing).
func (t *turns) begin() (end func()) {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
	return sync.OnceFunc(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.n--; t.n == 0 {
			close(t.idle)
		}
	})
}

// wait returns once no commit is in flight, once wanted is closed (someone
// waits for the writer), or after max, whichever comes first.
//
// Invariant: wait never blocks longer than max, so a commit that waits
// for the writer without closing wanted slows it, never stops it.
func (t *turns) wait(max time.Duration, wanted <-chan struct{}) {
	t.mu.Lock()
	idle, busy := t.idle, t.n > 0
	t.mu.Unlock()
	if !busy {
		return
	}
	timer := time.NewTimer(max)
	defer timer.Stop()
	select {
	case <-idle:
	case <-wanted:
	case <-timer.C:
	}
}

// pauseClock is a writer's time paused: while any of its goroutines
// gives way (enter to leave), counted once however many do.
type pauseClock struct {
	mu     sync.Mutex
	start  time.Time     // the writer's
	paused time.Duration // before since
	n      int           // goroutines pausing
	since  time.Time     // the first of them began, when n > 0
}

// pauseShare is the most of a writer's time it pauses (Ahead.pause), in
// quarters. At a million chunks, with commits of one fact back to back,
// the slowest commit of the window took 25 to 51 ms (31 the median of five
// runs) when the writer paused half its time at most, 20 to 34 ms (26) at
// three quarters (docs/benchmarks.md, "The writer gives way three quarters
// of its time"); the commit that names its file took 6 to 9 ms, as one
// that finds the file written does.
const pauseShare = 3

// owed returns how much longer the writer may pause: pauseShare quarters
// of its time so far, less what it paused.
func (c *pauseClock) owed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	paused := c.paused
	if c.n > 0 {
		paused += now.Sub(c.since)
	}
	return now.Sub(c.start)*pauseShare/4 - paused
}

func (c *pauseClock) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.since = time.Now()
	}
	c.n++
}

func (c *pauseClock) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		c.paused += time.Since(c.since)
	}
}
