package retrieve

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
)

// A catalog lets a process open only the partitions its requests read. It
// names each partition a committed state's documents fall in, how many
// documents it holds and a summary of them; the caller keeps it with the
// state it describes (evpack's checkpoint), computes it with Catalog and
// hands it back with Adopt. A partition the catalog names is opened when a
// call first reads it, and checked then: its key, its document count, and
// that it holds nothing of a generation after the catalog's; read-only,
// until a write needs it. Opening every partition at Open costs a bleve
// open each and maps their segments: at a million chunks, 240 partitions
// of every tenant's history, where a request reads three.
//
// Invariant: a catalog's summary of a partition describes a superset of the
// documents the state it was computed from holds there, so skipping an
// unopened partition by it can only skip partitions with no eligible
// document of that state.

// catalogFormat is the version of a catalog's bytes.
const catalogFormat = 1

// ErrCatalogMismatch: the lexical index disagrees with the catalog it was
// opened with (Adopt): a partition is missing, holds another count of
// documents, or holds documents the catalog does not name.
var ErrCatalogMismatch = fmt.Errorf("%w: partitions disagree with the catalog", ErrLexical)

// catalog is the bytes Catalog returns, as JSON (whose maps are written in
// key order: the bytes are a function of the documents).
type catalog struct {
	Format int           `json:"format"`
	Parts  []catalogPart `json:"parts"`
}

type catalogPart struct {
	Key     partKey      `json:"key"`
	Docs    uint64       `json:"docs"`
	Summary *partSummary `json:"summary"`
}

// lazyPart is what a part from a catalog needs to be opened and checked.
type lazyPart struct {
	mu   sync.Mutex
	done atomic.Bool // opened, or failed for good: err is final
	err  error
	// locked counts the runs that found the partition locked by another
	// holder (ErrPartitionLocked), the last of which said lockedErr.
	locked    atomic.Int64
	lockedErr error
	docs      uint64 // the catalog's count
	gen       int64  // the catalog's generation: nothing after it may be there
}

// do runs f until it has run to an end, and returns its error at every
// later call: a damaged partition stays damaged. A partition another
// holder had locked (ErrPartitionLocked) is not an end: a later call runs
// f again. A call that waited for a run that found it locked returns that
// run's error instead of waiting a LockWait of its own, so that no call
// waits much more than one.
func (z *lazyPart) do(f func() error) error {
	if z.done.Load() {
		return z.err
	}
	seen := z.locked.Load()
	z.mu.Lock()
	defer z.mu.Unlock()
	switch {
	case z.done.Load():
		return z.err
	case z.locked.Load() != seen:
		return z.lockedErr
	}
	err := f()
	if errors.Is(err, ErrPartitionLocked) {
		z.lockedErr = err
		z.locked.Add(1)
		return err
	}
	z.err = err
	z.done.Store(true)
	return err
}

// Catalog returns the catalog of docs, every document of a committed state
// (each chunk once, as Index would be given it), in the partitions of l:
// nil for an unpartitioned index. Each comes with whether the index holds
// it: a purged chunk's document was deleted, but its partition stays, and
// the catalog names it so that Adopt need not open it. It reads no
// partition.
func (l *Lexical) Catalog(docs iter.Seq2[Doc, bool]) ([]byte, error) {
	if l.days == 0 {
		return nil, nil
	}
	type acc struct {
		docs uint64
		sum  *partSummary
	}
	at := map[partKey]*acc{}
	one := make([]Doc, 1)
	for d, held := range docs {
		k := l.keyOf(d)
		a := at[k]
		if a == nil {
			a = &acc{sum: emptySummary()}
			at[k] = a
		}
		if held {
			a.docs++
		}
		one[0] = d
		a.sum.widen(one)
	}
	keys := make([]partKey, 0, len(at))
	for k := range at {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePartKeys)
	c := catalog{Format: catalogFormat, Parts: make([]catalogPart, len(keys))}
	for i, k := range keys {
		c.Parts[i] = catalogPart{Key: k, Docs: at[k].docs, Summary: at[k].sum}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: catalog: %v", ErrLexical, err)
	}
	return raw, nil
}

// CatalogAdd returns the catalog of the documents prev (Catalog's bytes)
// describes and docs, documents of new chunks that the index holds: the
// bytes Catalog returns for all of them together, computed from prev and
// docs alone. (Every field of a summary is a count, a least or a greatest
// value, so adding documents to it in any order gives the same summary.)
// A commit that indexes no chunk again (no fact) computes its catalog so,
// in proportion to its chunks rather than the index's.
func (l *Lexical) CatalogAdd(prev []byte, docs []Doc) ([]byte, error) {
	if l.days == 0 {
		return nil, nil
	}
	var c catalog
	if err := json.Unmarshal(prev, &c); err != nil || c.Format != catalogFormat {
		return nil, fmt.Errorf("%w: catalog to add to: format %d, %v", ErrLexical, c.Format, err)
	}
	at := make(map[partKey]int, len(c.Parts))
	for i, cp := range c.Parts {
		if cp.Summary == nil {
			return nil, fmt.Errorf("%w: catalog to add to: partition %s has no summary", ErrLexical, cp.Key.dirName())
		}
		if cp.Summary.Bounds.Tenants == nil {
			cp.Summary.Bounds.Tenants = map[string]int{}
		}
		at[cp.Key] = i
	}
	one := make([]Doc, 1)
	for _, d := range docs {
		k := l.keyOf(d)
		i, ok := at[k]
		if !ok {
			i = len(c.Parts)
			c.Parts = append(c.Parts, catalogPart{Key: k, Summary: emptySummary()})
			at[k] = i
		}
		one[0] = d
		c.Parts[i].Docs++
		c.Parts[i].Summary.widen(one)
	}
	slices.SortFunc(c.Parts, func(a, b catalogPart) int { return comparePartKeys(a.Key, b.Key) })
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: catalog: %v", ErrLexical, err)
	}
	return raw, nil
}

// Adopt settles an index opened with LexicalOptions.Deferred by raw, the
// catalog of its committed state at generation gen (see Catalog): the
// partitions it names are opened when first read, and checked then; the
// others are opened now, and must be empty. It returns the documents the
// catalog counts. A partition the catalog names that is missing is
// ErrCatalogMismatch.
//
// Later are documents indexed again, in the partitions they were in, by
// generations after the catalog's up to gen (the facts a commit adds to a
// stored chunk): each widens its partition's summary, as a write of it
// does, so that the summary still describes what the partition holds.
func (l *Lexical) Adopt(raw []byte, gen int64, later []Doc) (docs uint64, err error) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if !l.unsettled.Load() {
		return 0, fmt.Errorf("%w: Adopt: the partitions are open already (want LexicalOptions.Deferred)", ErrLexical)
	}
	var c catalog
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return 0, fmt.Errorf("%w: catalog: %v", ErrCatalogMismatch, err)
		}
		if c.Format != catalogFormat {
			return 0, fmt.Errorf("%w: catalog format %d, this build reads %d", ErrCatalogMismatch, c.Format, catalogFormat)
		}
	}
	if l.days == 0 && len(c.Parts) > 0 {
		return 0, fmt.Errorf("%w: a catalog of %d partitions for an unpartitioned index", ErrCatalogMismatch, len(c.Parts))
	}
	widen := map[partKey][]Doc{}
	for _, d := range later {
		k := l.keyOf(d)
		widen[k] = append(widen[k], d)
	}
	named := map[string]bool{}
	var parts []*part
	for i, cp := range c.Parts {
		s := cp.Summary
		switch {
		case i > 0 && comparePartKeys(c.Parts[i-1].Key, cp.Key) >= 0:
			return 0, fmt.Errorf("%w: catalog: partitions out of order at %d", ErrCatalogMismatch, i)
		case s == nil || s.Format != summaryFormat || s.MinStart == math.MaxInt64:
			return 0, fmt.Errorf("%w: catalog: partition %s: no summary of its %d documents", ErrCatalogMismatch, cp.Key.dirName(), cp.Docs)
		case !slices.Contains(l.deferred, cp.Key.dirName()):
			return 0, fmt.Errorf("%w: partition %s (tenant %q, epoch %d) is missing from %s", ErrCatalogMismatch, cp.Key.dirName(), cp.Key.Tenant, cp.Key.Epoch, l.dir)
		}
		if s.Bounds.Tenants == nil {
			s.Bounds.Tenants = map[string]int{}
		}
		if ds, ok := widen[cp.Key]; ok {
			s.widen(ds)
			delete(widen, cp.Key)
		}
		named[cp.Key.dirName()] = true
		docs += cp.Docs
		parts = append(parts, &part{key: cp.Key, dir: filepath.Join(l.dir, cp.Key.dirName()), sum: s, lazy: &lazyPart{docs: cp.Docs, gen: gen}})
	}
	if len(widen) > 0 {
		return 0, fmt.Errorf("%w: %d documents indexed again after the catalog's generation lie in partitions it does not name", ErrCatalogMismatch, len(later))
	}
	var rest []string
	for _, name := range l.deferred {
		if !named[name] {
			rest = append(rest, name)
		}
	}
	if err := l.openDirs(rest, true); err != nil {
		return 0, err
	}
	l.parts = append(l.parts, parts...)
	slices.SortFunc(l.parts, func(a, b *part) int { return comparePartKeys(a.key, b.key) })
	l.deferred = nil
	l.unsettled.Store(false)
	return docs, nil
}

// OpenAll settles an index opened with LexicalOptions.Deferred by opening
// every partition now, as OpenLexical does without it. Any other call on an
// unsettled index does the same first.
func (l *Lexical) OpenAll() error { return l.settle() }

// settle opens every listed partition of an index opened deferred and not
// yet settled; otherwise it does nothing.
func (l *Lexical) settle() error {
	if !l.unsettled.Load() {
		return nil
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if !l.unsettled.Load() {
		return nil
	}
	if err := l.openDirs(l.deferred, false); err != nil {
		return err
	}
	l.deferred = nil
	l.unsettled.Store(false)
	return nil
}

// ensure opens p if it is a catalog's part not yet opened, and checks it
// against the catalog; every later call returns the first one's error,
// unless that was ErrPartitionLocked (lazyPart.do), or the damage a read
// of the whole partition found (part.damaged).
func (l *Lexical) ensure(p *part) error {
	if err := p.damaged.Load(); err != nil {
		return *err
	}
	if p.lazy == nil {
		return nil
	}
	return p.lazy.do(func() error { return l.openLazy(p) })
}

// ensureAll is ensure for each of parts, the ones not yet opened opened
// side by side, at most GOMAXPROCS at once: a tenant's first request
// opens a few partitions, about a millisecond each. The error is the
// first part's in parts order, whichever open failed first.
func (l *Lexical) ensureAll(parts []searchPart) error {
	var todo []*part
	for _, sp := range parts {
		if sp.p.lazy != nil && !sp.p.lazy.done.Load() {
			todo = append(todo, sp.p)
		}
	}
	// The error of each part opened here: a locked part's is not kept, and
	// asking it again would wait LockWait a second time.
	var tried map[*part]error
	if len(todo) > 1 {
		tried = make(map[*part]error, len(todo))
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for _, p := range todo {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				err := l.ensure(p)
				mu.Lock()
				tried[p] = err
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	for _, sp := range parts {
		err, ok := tried[sp.p]
		if !ok {
			err = l.ensure(sp.p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// openLazy opens p, a catalog's part, and checks that bleve holds what the
// catalog says: the key, the count, nothing after the catalog's generation.
func (l *Lexical) openLazy(p *part) error {
	q, err := l.openPart(p.dir, true)
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		q.idx.Close()
		return fmt.Errorf("%w: partition %s: %s", ErrCatalogMismatch, p.dir, fmt.Sprintf(format, args...))
	}
	if q.key != p.key {
		return fail("holds partition %+v, the catalog's is %+v", q.key, p.key)
	}
	n, err := q.idx.DocCount()
	if err != nil {
		return fail("count: %v", err)
	}
	if n != p.lazy.docs {
		return fail("holds %d documents, the catalog %d", n, p.lazy.docs)
	}
	req := bleve.NewSearchRequestOptions(changedAfter(p.lazy.gen), 0, 0, false)
	req.Score = "none"
	res, err := q.idx.Search(req)
	if err != nil {
		return fail("count above generation %d: %v", p.lazy.gen, err)
	}
	if res.Total > 0 {
		return fail("holds %d documents written after generation %d, the catalog's", res.Total, p.lazy.gen)
	}
	l.pmu.Lock()
	p.idx, p.sum, p.ro = q.idx, q.sum, true // its own summary from now on: the one its writes widen
	l.pmu.Unlock()
	return nil
}

// writable reopens p for writing if it is open read-only (every partition
// an existing index opens is, until written), once no read holds it
// (Lexical.swap). Writes are the caller's to serialize
// (the engine's commit lock); a read never calls it.
func (l *Lexical) writable(p *part) error { return l.writableAll([]*part{p}) }

// reopensAtOnce bounds the partitions writableAll reopens side by side. A
// reopen mostly waits on its fdatasync, not on a core: at a million
// chunks, a first write after Open whose 100 chunks fell in 22 partitions
// cost 1.3 and 1.9 times the next write with two at once (GOMAXPROCS
// here), 1.05 with eight (docs/benchmarks.md, "Partitions that merge what
// a commit wrote").
const reopensAtOnce = 8

// writableAll is writable for each of parts, the partitions one write
// touches: those not yet opened are opened side by side (ensureAll), and
// those open read-only are reopened side by side, reopensAtOnce at most,
// under one hold of swap. A reopen persists bleve's snapshot again (a
// bbolt commit and an fdatasync), and each hold of swap parks the searches
// that start while it waits: a commit whose chunks fell in 20 partitions
// paid both 20 times, one after the other. The error is the first part's
// in parts order.
//
// A part not yet opened is opened read-only and checked against the
// catalog before it is opened for writing, though that costs the first
// write after Open two opens of it: bleve's open for writing changes the
// directory (it makes a root.bolt where there is none, persists its
// snapshot again and removes the segment files that snapshot does not
// name), and a partition that fails the check must be left as it is
// (TestFirstWriteLeavesADamagedPartitionAlone).
func (l *Lexical) writableAll(parts []*part) error {
	opened := make([]searchPart, len(parts))
	for i, p := range parts {
		opened[i] = searchPart{p: p}
	}
	if err := l.ensureAll(opened); err != nil {
		return err
	}
	// Most writes find every part writable: they must not take swap, whose
	// Lock parks every search that starts while it waits for those in
	// flight. Only a write turns an open partition's ro from true to false.
	var todo []*part
	l.pmu.RLock()
	for _, p := range parts {
		if p.ro {
			todo = append(todo, p)
		}
	}
	l.pmu.RUnlock()
	if len(todo) == 0 {
		return nil
	}
	l.swap.Lock()
	defer l.swap.Unlock()
	errs := make([]error, len(todo))
	if len(todo) == 1 {
		errs[0] = l.reopen(todo[0])
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, reopensAtOnce)
		for i, p := range todo {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				errs[i] = l.reopen(p)
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// reopen reopens p, open read-only, for writing. The caller holds swap
// for writing.
func (l *Lexical) reopen(p *part) error {
	// What a fresh open must find, should another holder take the lock
	// between the close and the opens below.
	again := p.lazy
	if again != nil {
		again = &lazyPart{docs: again.docs, gen: again.gen}
	} else if n, err := p.idx.DocCount(); err == nil {
		again = &lazyPart{docs: n, gen: math.MaxInt64} // no catalog: its count alone
	}
	if err := p.idx.Close(); err != nil {
		return fmt.Errorf("%w: partition %s: close to write: %v", ErrLexical, p.dir, err)
	}
	l.pmu.Lock()
	p.idx = nil // closed: should the open below panic (recoverBleve), Close must not close it again
	l.pmu.Unlock()
	if h := l.Hooks.ReadOnlyClosed; h != nil {
		h(filepath.Base(p.dir))
	}
	q, err := l.openPart(p.dir, false)
	if err == nil && q.key != p.key {
		q.idx.Close()
		err = fmt.Errorf("%w: partition %s: holds %+v after reopening, not %+v", ErrCatalogMismatch, p.dir, q.key, p.key)
	}
	if errors.Is(err, ErrPartitionLocked) {
		// Another holder shares the lock a write needs alone (a tool
		// reading the partition): the partition is as it was, so it is
		// read-only again, and the write fails before any batch.
		r, rerr := l.openPart(p.dir, true)
		switch {
		case rerr == nil && r.key == p.key:
			l.pmu.Lock()
			p.idx = r.idx
			l.pmu.Unlock()
			return err
		case rerr == nil:
			r.idx.Close()
		case errors.Is(rerr, ErrPartitionLocked) && again != nil:
			// A holder waiting to lock it alone took the lock the moment
			// it was closed: the partition is as it was, closed, and the
			// next call that reads it opens it afresh and checks it as a
			// catalog's partition is checked at first.
			l.pmu.Lock()
			p.idx, p.lazy = nil, again
			l.pmu.Unlock()
			return err
		}
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if err != nil {
		p.idx = nil // closed: nothing reads it again (l.fail)
		return l.fail(err)
	}
	p.idx, p.ro = q.idx, false
	return nil
}

// Opened returns how many of the index's partitions are open, and how
// many there are: a catalog's are opened when a call first reads them.
func (l *Lexical) Opened() (open, all int) {
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	for _, p := range l.parts {
		if p.idx != nil {
			open++
		}
	}
	return open, len(l.parts) + len(l.deferred)
}
