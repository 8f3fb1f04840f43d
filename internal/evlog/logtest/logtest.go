// Package logtest is the conformance suite every evlog.Log runs: the file
// log, the PostgreSQL log and the in-memory reference answer the same way at
// every edge (gap, fork, broken chain, stale writer, redaction, wait).
package logtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/evpack/evpack/internal/evlog"
)

// Harness is one empty log under test.
type Harness struct {
	Log   evlog.Log
	Fence evlog.Fence
	// Expire ends the current writer's lease now, as if its time had run
	// out (a test cannot wait for a clock).
	Expire func(t *testing.T)
}

// Run runs the suite; open returns a new, empty log for each case.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	cases := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"an empty log has no head and reads nothing", emptyLog},
		{"entries read back whole and in order", order},
		{"a gap, a fork, a broken chain and time going backwards are refused and change nothing", refusals},
		{"an append without the lease is refused", noLease},
		{"a stale writer is fenced once another takes an expired lease", staleWriter},
		{"a released lease passes on at once", release},
		{"a purge redacts earlier bodies atomically and keeps the chain", redaction},
		{"a later purge rewrites a redacted entry, and a purge entry, again", redactAgain},
		{"wait returns once the head passes a generation", wait},
		{"of concurrent appends of one generation exactly one lands", race},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

var t0 = time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)

// Entry returns the well-formed entry g after prev, under epoch.
func Entry(g int64, prev string, epoch int64) evlog.Entry {
	return evlog.Entry{
		Generation:  g,
		Prev:        prev,
		Sum:         fmt.Sprintf("blake3:%064x", g*7919),
		CommittedAt: t0.Add(time.Duration(g) * time.Minute),
		Epoch:       epoch,
		Tenants:     []string{"", "acme"},
		Body:        fmt.Appendf(nil, "{\"format\":\"evpack-chunks/2\",\"generation\":%d}\n", g),
	}
}

func acquire(t *testing.T, h Harness, holder string) int64 {
	t.Helper()
	epoch, err := h.Fence.Acquire(context.Background(), holder, time.Hour)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", holder, err)
	}
	return epoch
}

// appendN appends entries 1..n under a new lease and returns them.
func appendN(t *testing.T, h Harness, n int) (int64, []evlog.Entry) {
	t.Helper()
	epoch := acquire(t, h, "writer-a")
	var out []evlog.Entry
	prev := ""
	for g := int64(1); g <= int64(n); g++ {
		e := Entry(g, prev, epoch)
		if err := h.Log.Append(context.Background(), e); err != nil {
			t.Fatalf("Append(%d): %v", g, err)
		}
		out = append(out, e)
		prev = e.Sum
	}
	return epoch, out
}

func readAll(t *testing.T, h Harness, from int64) []evlog.Entry {
	t.Helper()
	var got []evlog.Entry
	if err := h.Log.Read(context.Background(), from, func(e evlog.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatalf("Read(%d): %v", from, err)
	}
	return got
}

func headOf(t *testing.T, h Harness) evlog.Head {
	t.Helper()
	hd, err := h.Log.Head(context.Background())
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return hd
}

func same(t *testing.T, what string, got, want evlog.Entry) {
	t.Helper()
	if got.Generation != want.Generation || got.Prev != want.Prev || got.Sum != want.Sum ||
		!got.CommittedAt.Equal(want.CommittedAt) || got.Clamped != want.Clamped || got.Epoch != want.Epoch ||
		!slices.Equal(got.Tenants, want.Tenants) || string(got.Body) != string(want.Body) || got.RedactedBy != want.RedactedBy {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func emptyLog(t *testing.T, h Harness) {
	if hd := headOf(t, h); hd != (evlog.Head{}) {
		t.Errorf("Head of an empty log = %+v, want zero", hd)
	}
	if got := readAll(t, h, 1); len(got) != 0 {
		t.Errorf("Read(1) of an empty log gave %d entries", len(got))
	}
	err := h.Log.Read(context.Background(), 2, func(evlog.Entry) error { return nil })
	if !errors.Is(err, evlog.ErrGap) {
		t.Errorf("Read(2) of an empty log: %v, want ErrGap", err)
	}
}

func order(t *testing.T, h Harness) {
	_, want := appendN(t, h, 5)
	got := readAll(t, h, 1)
	if len(got) != 5 {
		t.Fatalf("Read(1) gave %d entries, want 5", len(got))
	}
	for i := range got {
		same(t, fmt.Sprintf("entry %d", i+1), got[i], want[i])
	}
	if got := readAll(t, h, 4); len(got) != 2 || got[0].Generation != 4 || got[1].Generation != 5 {
		t.Errorf("Read(4) gave generations %v, want [4 5]", gens(got))
	}
	if got := readAll(t, h, 6); len(got) != 0 {
		t.Errorf("Read(head+1) gave %d entries, want none", len(got))
	}
	hd := headOf(t, h)
	if hd.Generation != 5 || hd.Sum != want[4].Sum || !hd.CommittedAt.Equal(want[4].CommittedAt) {
		t.Errorf("Head = %+v, want generation 5, %s, %s", hd, want[4].Sum, want[4].CommittedAt)
	}
	stop := errors.New("stop")
	n := 0
	err := h.Log.Read(context.Background(), 1, func(evlog.Entry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("Read stops at fn's first error: got %v after %d calls", err, n)
	}
	// A clamped commit time round-trips.
	epoch := acquire(t, h, "writer-a")
	e := Entry(6, want[4].Sum, epoch)
	e.CommittedAt, e.Clamped = want[4].CommittedAt, true
	if err := h.Log.Append(context.Background(), e); err != nil {
		t.Fatalf("Append of a clamped entry at the head's time: %v", err)
	}
	same(t, "clamped entry", readAll(t, h, 6)[0], e)
}

func gens(es []evlog.Entry) []int64 {
	var g []int64
	for _, e := range es {
		g = append(g, e.Generation)
	}
	return g
}

func refusals(t *testing.T, h Harness) {
	epoch, have := appendN(t, h, 3)
	head := have[2]
	cases := []struct {
		name string
		edit func(e *evlog.Entry)
		want error
	}{
		{"a gap", func(e *evlog.Entry) { e.Generation = 5 }, evlog.ErrGap},
		{"a fork of the head", func(e *evlog.Entry) { *e = Entry(3, have[1].Sum, epoch) }, evlog.ErrFork},
		{"a fork of an older entry", func(e *evlog.Entry) { *e = Entry(1, "", epoch) }, evlog.ErrFork},
		{"prev is not the head's sum", func(e *evlog.Entry) { e.Prev = have[1].Sum }, evlog.ErrChain},
		{"prev is empty", func(e *evlog.Entry) { e.Prev = "" }, evlog.ErrChain},
		{"time goes backwards", func(e *evlog.Entry) { e.CommittedAt = head.CommittedAt.Add(-time.Second) }, evlog.ErrTimeBackwards},
		{"no body", func(e *evlog.Entry) { e.Body = nil }, evlog.ErrBadEntry},
		{"no sum", func(e *evlog.Entry) { e.Sum = "" }, evlog.ErrBadEntry},
		{"unsorted tenants", func(e *evlog.Entry) { e.Tenants = []string{"b", "a"} }, evlog.ErrBadEntry},
		{"a stale epoch", func(e *evlog.Entry) { e.Epoch = epoch + 1 }, evlog.ErrStaleEpoch},
	}
	for _, tc := range cases {
		e := Entry(4, head.Sum, epoch)
		tc.edit(&e)
		err := h.Log.Append(context.Background(), e)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Append = %v, want %v", tc.name, err, tc.want)
		}
		if hd := headOf(t, h); hd.Generation != 3 || hd.Sum != head.Sum {
			t.Fatalf("%s: the refused append moved the head to %+v", tc.name, hd)
		}
	}
	got := readAll(t, h, 1)
	for i := range have {
		same(t, fmt.Sprintf("entry %d after refusals", i+1), got[i], have[i])
	}
}

func noLease(t *testing.T, h Harness) {
	err := h.Log.Append(context.Background(), Entry(1, "", 1))
	if !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("Append with no lease taken: %v, want ErrStaleEpoch", err)
	}
	if hd := headOf(t, h); hd.Generation != 0 {
		t.Errorf("head moved to %d", hd.Generation)
	}
}

func staleWriter(t *testing.T, h Harness) {
	ctx := context.Background()
	// A second Acquire by the holder's name fences the first: two processes
	// sharing a name (a restart beside the process it replaces) appended
	// under one epoch.
	first := acquire(t, h, "writer-a")
	a := acquire(t, h, "writer-a")
	if a <= first {
		t.Errorf("the holder's second Acquire gave epoch %d, not above its first %d", a, first)
	}
	if err := h.Log.Append(ctx, Entry(1, "", first)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("Append under the holder's first epoch: %v, want ErrStaleEpoch", err)
	}
	if _, err := h.Fence.Acquire(ctx, "writer-b", time.Hour); !errors.Is(err, evlog.ErrLeaseHeld) {
		t.Fatalf("Acquire by another while the lease runs: %v, want ErrLeaseHeld", err)
	}
	e1 := Entry(1, "", a)
	if err := h.Log.Append(ctx, e1); err != nil {
		t.Fatal(err)
	}
	h.Expire(t)
	if err := h.Log.Append(ctx, Entry(2, e1.Sum, a)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("Append under an expired lease: %v, want ErrStaleEpoch", err)
	}
	b := acquire(t, h, "writer-b")
	if b <= a {
		t.Fatalf("a new writer's epoch %d is not above the old %d", b, a)
	}
	if err := h.Log.Append(ctx, Entry(2, e1.Sum, a)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the old writer's Append: %v, want ErrStaleEpoch", err)
	}
	if err := h.Fence.Renew(ctx, a, time.Hour); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the old writer's Renew: %v, want ErrStaleEpoch", err)
	}
	if err := h.Fence.Release(ctx, a); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("the old writer's Release: %v, want ErrStaleEpoch", err)
	}
	if err := h.Log.Append(ctx, Entry(2, e1.Sum, b)); err != nil {
		t.Errorf("the new writer's Append: %v", err)
	}
	if err := h.Fence.Renew(ctx, b, time.Hour); err != nil {
		t.Errorf("the new writer's Renew: %v", err)
	}
	got := readAll(t, h, 1)
	if len(got) != 2 || got[0].Epoch != a || got[1].Epoch != b {
		t.Errorf("entries' epochs = %v, want [%d %d]", got, a, b)
	}
}

func release(t *testing.T, h Harness) {
	ctx := context.Background()
	a := acquire(t, h, "writer-a")
	if err := h.Fence.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := h.Log.Append(ctx, Entry(1, "", a)); !errors.Is(err, evlog.ErrStaleEpoch) {
		t.Errorf("Append after Release: %v, want ErrStaleEpoch", err)
	}
	if b := acquire(t, h, "writer-b"); b <= a {
		t.Errorf("epoch after release %d, want above %d", b, a)
	}
}

func redaction(t *testing.T, h Harness) {
	ctx := context.Background()
	epoch, have := appendN(t, h, 3)
	body := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":1}\n{\"redacted\":true}\n")
	for _, tc := range []struct {
		name string
		gen  int64
	}{
		{"of the purge itself", 4},
		{"of no generation", 0},
	} {
		p := Entry(4, have[2].Sum, epoch)
		p.Redactions = []evlog.Redaction{{Generation: 1, Body: body}, {Generation: tc.gen, Body: body}}
		if err := h.Log.Append(ctx, p); !errors.Is(err, evlog.ErrBadEntry) {
			t.Errorf("a purge redacting %s: %v, want ErrBadEntry", tc.name, err)
		}
	}
	same(t, "entry 1 after refused purges", readAll(t, h, 1)[0], have[0])
	p := Entry(4, have[2].Sum, epoch)
	p.Redactions = []evlog.Redaction{{Generation: 1, Body: body}}
	if err := h.Log.Append(ctx, p); err != nil {
		t.Fatalf("Append of a purge: %v", err)
	}
	got := readAll(t, h, 1)
	want := have[0]
	want.Body, want.RedactedBy = body, 4
	same(t, "redacted entry", got[0], want)
	same(t, "the entry after it", got[1], have[1])
	p.Redactions = nil
	same(t, "the purge entry", got[3], p)
	if got[1].Prev != got[0].Sum {
		t.Errorf("the chain broke: entry 2 names %q, entry 1 is %q", got[1].Prev, got[0].Sum)
	}
	e := Entry(5, p.Sum, epoch)
	e.RedactedBy = 1
	if err := h.Log.Append(ctx, e); !errors.Is(err, evlog.ErrBadEntry) {
		t.Errorf("an append that sets RedactedBy: %v, want ErrBadEntry", err)
	}
}

func redactAgain(t *testing.T, h Harness) {
	ctx := context.Background()
	epoch, have := appendN(t, h, 2)
	first := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":1}\n{\"redacted\":\"first\"}\n")
	p3 := Entry(3, have[1].Sum, epoch)
	p3.Redactions = []evlog.Redaction{{Generation: 1, Body: first}}
	if err := h.Log.Append(ctx, p3); err != nil {
		t.Fatalf("Append of the first purge: %v", err)
	}
	second := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":1}\n{\"redacted\":\"second\"}\n")
	purge := []byte("{\"format\":\"evpack-chunks/3\",\"generation\":3}\n{\"redacted\":\"the purge\"}\n")
	p4 := Entry(4, p3.Sum, epoch)
	p4.Redactions = []evlog.Redaction{{Generation: 3, Body: purge}, {Generation: 1, Body: second}}
	if err := h.Log.Append(ctx, p4); err != nil {
		t.Fatalf("Append of the second purge: %v", err)
	}
	got := readAll(t, h, 1)
	if len(got) != 4 {
		t.Fatalf("Read gave %d entries, want 4", len(got))
	}
	w1 := have[0]
	w1.Body, w1.RedactedBy = second, 4
	same(t, "entry 1, redacted twice", got[0], w1)
	same(t, "entry 2, never redacted", got[1], have[1])
	w3 := p3
	w3.Redactions, w3.Body, w3.RedactedBy = nil, purge, 4
	same(t, "the first purge, redacted by the second", got[2], w3)
	p4.Redactions = nil
	same(t, "the second purge", got[3], p4)
}

func wait(t *testing.T, h Harness) {
	ctx := context.Background()
	_, have := appendN(t, h, 1)
	hd, err := h.Log.Wait(ctx, 0)
	if err != nil || hd.Generation != 1 {
		t.Fatalf("Wait(0) with head 1 = %+v, %v", hd, err)
	}
	epoch := acquire(t, h, "writer-a")
	started := make(chan struct{})
	done := make(chan evlog.Head, 1)
	errc := make(chan error, 1)
	go func() {
		close(started)
		hd, err := h.Log.Wait(ctx, 1)
		done <- hd
		errc <- err
	}()
	<-started
	if err := h.Log.Append(ctx, Entry(2, have[0].Sum, epoch)); err != nil {
		t.Fatal(err)
	}
	if hd := <-done; hd.Generation != 2 {
		t.Errorf("Wait(1) returned head %d, want 2", hd.Generation)
	}
	if err := <-errc; err != nil {
		t.Errorf("Wait(1): %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.Log.Wait(cctx, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v, want context.Canceled", err)
	}
}

func race(t *testing.T, h Harness) {
	ctx := context.Background()
	epoch, have := appendN(t, h, 1)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := Entry(2, have[0].Sum, epoch)
			e.Body = fmt.Appendf(nil, "writer %d\n", i)
			errs[i] = h.Log.Append(ctx, e)
		}()
	}
	wg.Wait()
	landed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			landed++
		case !errors.Is(err, evlog.ErrFork):
			t.Errorf("append %d: %v, want nil or ErrFork", i, err)
		}
	}
	if landed != 1 {
		t.Errorf("%d of %d concurrent appends of generation 2 landed, want exactly 1", landed, n)
	}
	if got := readAll(t, h, 1); len(got) != 2 {
		t.Errorf("the log holds %d entries, want 2", len(got))
	}
}
