package retrieve

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Warming a tenant (LexicalOptions.Warm). An index opened with its
// catalog (Adopt) opens a partition when a request first reads it, about a
// millisecond of bleve's open each. A tenant's requests on other days then
// read partitions no request opened yet, and each pays their opens. With
// Warm, the first request that opens a partition of a tenant also starts
// opening the tenant's other partitions, one at a time on one goroutine of
// the index, nearest the partitions that request read first: a tenant
// that asked once asks again, and a day near the one it asked is the
// likeliest next. Warming opens what a request would open, the same way
// (ensure): it changes no hit, and pays the opens on a core a request is
// not using (the first pass's p99 a fifth lower at 100k and a million
// chunks, docs/benchmarks.md, "Warming a tenant's partitions"). What it
// costs instead is memory: every partition it opens maps its segments'
// files, which no request may ever read (at a million chunks, RSS after
// 1,000 questions 974 MiB against 717), so it is off by default.
//
// Invariant: warming opens only partitions of tenants a request read, and
// stops once the index is closed or a write failed (usable); Close waits
// for the partition being opened, if any (closeParts), and for the
// goroutine to end.

// warmer is a Lexical's queue of tenants to warm and the goroutine that
// warms them.
type warmer struct {
	mu      sync.Mutex
	queued  []warmTask
	seen    map[string]bool // tenants queued once: each is warmed at most once
	running bool
	stopped bool          // Close: nothing more starts
	done    chan struct{} // closed when the running goroutine ends
}

// stop keeps any further warming from starting and waits for the goroutine,
// which stops before its next partition (the index is closed: usable).
func (w *warmer) stop() {
	w.mu.Lock()
	w.stopped, w.queued = true, nil
	w.mu.Unlock()
	w.wait()
}

// wait waits for the goroutine running now, if any, to end.
func (w *warmer) wait() {
	w.mu.Lock()
	running, done := w.running, w.done
	w.mu.Unlock()
	if running {
		<-done
	}
}

// warmTask is a tenant to warm and the epoch to start nearest.
type warmTask struct {
	tenant string
	near   int64
}

// warmAfter queues for warming the tenant of each of cold, the parts a
// request opened, nearest the latest epoch among them of that tenant, and
// starts the goroutine if none runs. The caller warms (Lexical.warmOn).
func (l *Lexical) warmAfter(cold []*part) {
	var tasks []warmTask
	for _, p := range cold {
		k := p.key
		j := slices.IndexFunc(tasks, func(t warmTask) bool { return t.tenant == k.Tenant })
		switch {
		case j < 0:
			tasks = append(tasks, warmTask{tenant: k.Tenant, near: k.Epoch})
		case k.Epoch > tasks[j].near:
			tasks[j].near = k.Epoch
		}
	}
	if len(tasks) == 0 {
		return
	}
	w := &l.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	for _, t := range tasks {
		if !w.seen[t.tenant] {
			w.seen[t.tenant] = true
			w.queued = append(w.queued, t)
		}
	}
	if w.running || w.stopped || len(w.queued) == 0 {
		return
	}
	w.running, w.done = true, make(chan struct{})
	go l.warmLoop()
}

// warmLoop warms the queued tenants in the order they were queued, until
// the queue is empty, the index is closed, or an open fails (the request
// that reads that partition meets the error itself).
func (l *Lexical) warmLoop() {
	w := &l.warm
	for {
		w.mu.Lock()
		if len(w.queued) == 0 || w.stopped {
			w.running = false
			close(w.done)
			w.mu.Unlock()
			return
		}
		t := w.queued[0]
		w.queued = w.queued[1:]
		w.mu.Unlock()
		for _, p := range l.coldParts(t) {
			if l.usable() != nil || l.warmOne(p) != nil {
				w.mu.Lock()
				w.queued = nil
				w.mu.Unlock()
				break
			}
		}
	}
}

// warmOne opens p as a read would: under swap, so that no write reopens a
// partition for writing meanwhile.
func (l *Lexical) warmOne(p *part) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverRead(&err, "warm")
	l.swap.RLock()
	defer l.swap.RUnlock()
	return l.ensure(p)
}

// coldParts returns the parts of t's tenant not yet opened, nearest t's
// epoch first; at equal distance the earlier, then by key.
func (l *Lexical) coldParts(t warmTask) []*part {
	l.pmu.RLock()
	var out []*part
	for _, p := range l.parts {
		if p.key.Tenant == t.tenant && p.lazy != nil && !p.lazy.done.Load() {
			out = append(out, p)
		}
	}
	l.pmu.RUnlock()
	dist := func(p *part) int64 {
		d := p.key.Epoch - t.near
		return max(d, -d)
	}
	slices.SortFunc(out, func(a, b *part) int {
		return cmp.Or(cmp.Compare(dist(a), dist(b)), comparePartKeys(a.key, b.key))
	})
	return out
}

// WaitWarm waits until the warming that requests started so far has ended
// (LexicalOptions.Warm): for a test or a benchmark that measures after it.
// It returns at once when nothing warms; unlike Close, it lets later
// requests start more.
func (l *Lexical) WaitWarm() { l.warm.wait() }

// columnFields are the fields whose clauses the eligibility filter may
// decide on columns (Eligibility.filter's onColumn), in a fixed order.
var columnFields = []string{fieldGen, fieldAnchorDay, fieldFrom, fieldTo, fieldRetired, fieldFirstFact}

// Preload opens every partition not yet opened, read-only and checked
// against the catalog as a request would open it (ensure), and reads
// every segment's columns, so that no request pays for either: at a
// million chunks, after it, the slowest tenant's first request took 10 to
// 12 ms against 28 to 39 (docs/benchmarks.md, issue 30, stop 75). What it
// costs is memory: four bytes a document per column field that any of
// its documents holds (eight where a value needs them: column). The pages
// of the segments it read them from are handed back once read
// (columns.forSnapshot); left mapped, they made the resident set after
// 1,000 questions 845 MiB against 638. It also reads each segment whole
// against its checksum (checkSegments), and hands those pages back too.
//
// It opens one partition at a time, each under swap for reading as a
// request holds it, so a write waits for one open, not for all. A
// partition that fails (damaged, locked by another holder) is left for
// the requests that read it to meet, as they would have; one found
// damaged is kept so (part.damaged). Preload goes on with the others and
// returns the first such error in partition order.
// It stops when ctx is done, returning ctx's error, wrapped.
func (l *Lexical) Preload(ctx context.Context) error {
	if err := l.settle(); err != nil {
		return err
	}
	l.pmu.RLock()
	parts := slices.Clone(l.parts)
	l.pmu.RUnlock()
	var first error
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: preload: %w", ErrLexical, err)
		}
		if err := l.usable(); err != nil {
			return err
		}
		if err := p.markDamaged(l.preloadOne(p)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// preloadOne opens p if it is not open, reads its segments' columns and
// checks its segments' checksums (checkSegments).
func (l *Lexical) preloadOne(p *part) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverRead(&err, "preload")
	l.swap.RLock()
	defer l.swap.RUnlock()
	return l.withSnapshot(p, "preload", func(snap *scorch.IndexSnapshot) error {
		if _, err := p.cols.forSnapshot(snap, columnFields); err != nil {
			return fmt.Errorf("preload %s: %w", p.dir, err)
		}
		return checkSegments(snap, p.dir)
	})
}

// withSnapshot opens p if it is not open and calls fn with its current
// snapshot, when it has one (a partition another holder reopened for
// writing meanwhile, or one not of scorch, has none: fn is not called).
// The caller holds l.swap.
func (l *Lexical) withSnapshot(p *part, op string, fn func(*scorch.IndexSnapshot) error) error {
	if err := l.ensure(p); err != nil {
		return err
	}
	l.pmu.RLock()
	idx := p.idx
	l.pmu.RUnlock()
	if idx == nil { // another holder took its lock as a write reopened it
		return nil
	}
	adv, err := idx.Advanced()
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrLexical, op, p.dir, err)
	}
	r, err := adv.Reader()
	if err != nil {
		return fmt.Errorf("%w: %s %s: reader: %v", ErrLexical, op, p.dir, err)
	}
	defer r.Close()
	if snap, ok := r.(*scorch.IndexSnapshot); ok {
		return fn(snap)
	}
	return nil
}
