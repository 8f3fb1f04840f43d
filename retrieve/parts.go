package retrieve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"

	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/strictjson"
)

// Partitions: the lexical index is one bleve index per partition, a
// partition being one tenant's chunks whose first eligible day (the later
// of the anchor day and the validity start) falls in one span of
// PartitionDays days. Each partition keeps a summary of what it holds
// (partSummary), written in the same bleve batch as its documents, and a
// search reads only the partitions whose summary leaves room for an eligible
// chunk: another tenant's chunks, and versions that came into force after
// the as-of day or had all ended by it, are never decoded. A regulatory
// mirror only grows, but what a request can see does not: the cost follows
// the latter.
//
// Partitioning changes no ranking. Every score is computed with the scope's
// statistics (BM25Stats), which are the same whichever index holds a
// document, and the lists are merged by (quantized score, chunk ID).
//
// Invariant: a partition's summary describes a superset of the documents its
// index holds (every document ever written to it, whatever was deleted or
// replaced since), so skipping a partition by its summary can only skip
// partitions with no eligible document.

// DefaultPartitionDays is the span of a time partition when
// LexicalOptions.PartitionDays is zero: a quarter of a year, short enough
// that yearly versions (statutes, filings, vintages) seldom share one, long
// enough that a daily mirror makes only four a year per tenant.
const DefaultPartitionDays = 90

// layoutName is the file of a partitioned lexical directory that names its
// format; layoutFormat its current version. Version 2 is the JSON of
// version 1 sealed as text (fsutil.SealText: a checksum line after it), so
// that a damaged layout is told from one of another build; version 1, the
// same JSON unsealed, is still read.
const (
	layoutName     = "evpack-lexical.json"
	layoutFormat   = "evpack-lexical-parts/2"
	layoutFormatV1 = "evpack-lexical-parts/1"
)

// Internal keys of a partition's bleve index.
const (
	partKeyInternal = "evpack.part"
	summaryInternal = "evpack.summary"
	summaryFormat   = 1
)

// layout is the content of layoutName.
type layout struct {
	Format        string `json:"format"`
	Analyzer      string `json:"analyzer"`
	PartitionDays int64  `json:"partition_days"`
}

// partKey names a partition: one tenant, one span of days.
type partKey struct {
	Tenant string `json:"tenant"`
	Epoch  int64  `json:"epoch"`
}

func comparePartKeys(a, b partKey) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Epoch, b.Epoch))
}

// dirName is the partition's directory: a digest of the tenant (names are
// the user's and may hold any character) and the epoch. The key itself is
// stored in the index and checked at open.
func (k partKey) dirName() string {
	sum := blake3.Sum256([]byte(k.Tenant))
	return "p-" + hex.EncodeToString(sum[:8]) + "-" + strconv.FormatInt(k.Epoch, 10)
}

// startDay is the first day a document can be eligible: the later of its
// anchor day (never, for an undated chunk) and its validity start.
func startDay(d Doc) int64 {
	c := d.Chunk
	from := int64(openFrom)
	if !c.Valid.From.IsZero() {
		from = c.Valid.From.Days()
	}
	return max(anchorDay(c), from)
}

// keyOf is the partition of d: a function of the chunk's immutable fields,
// so that a document a fact re-indexes replaces the one it replaced.
func (l *Lexical) keyOf(d Doc) partKey {
	if l.days == 0 {
		return partKey{}
	}
	s := startDay(d)
	e := s / l.days
	if s%l.days < 0 {
		e-- // floor
	}
	return partKey{Tenant: d.Chunk.Tenant, Epoch: e}
}

// partSummary is what a partition's documents can be, as bounds that only
// widen (see the invariant above).
type partSummary struct {
	Format int `json:"format"`
	// Bounds of the documents, as Bounds of the whole index are kept.
	Bounds Bounds `json:"bounds"`
	// MinStart is the least startDay; MaxTo the greatest validity end
	// (openTo if some document has none); MaxEnd the greatest day on which
	// a document stops being eligible to an unpinned request, its validity
	// end or its retirement, whichever comes first.
	MinStart int64 `json:"min_start"`
	MaxTo    int64 `json:"max_to"`
	MaxEnd   int64 `json:"max_end"`
}

func emptySummary() *partSummary {
	return &partSummary{Format: summaryFormat, Bounds: NewBounds(), MinStart: math.MaxInt64, MaxTo: math.MinInt64, MaxEnd: math.MinInt64}
}

// with returns s widened by docs.
func (s *partSummary) with(docs []Doc) *partSummary {
	n := *s
	n.Bounds = s.Bounds.Clone()
	n.widen(docs)
	return &n
}

// widen widens s by docs, in place.
func (s *partSummary) widen(docs []Doc) {
	for _, d := range docs {
		c := d.Chunk
		s.Bounds.Add(c)
		to := int64(openTo)
		if !c.Valid.To.IsZero() {
			to = c.Valid.To.Days()
		}
		end := to
		if !d.Retired.IsZero() {
			s.Bounds.Retire(d.Retired)
			end = min(end, d.Retired.Days())
		}
		s.MinStart = min(s.MinStart, startDay(d))
		s.MaxTo = max(s.MaxTo, to)
		s.MaxEnd = max(s.MaxEnd, end)
	}
}

// mayAdmit reports whether some document the summary describes may be
// eligible under e.
func (s *partSummary) mayAdmit(e Eligibility) bool {
	day := e.AsOf.Days()
	if s.MinStart > day || s.Bounds.inScope(e.Tenant) == 0 {
		return false
	}
	end := s.MaxEnd
	if e.Pinned || len(e.Readmit) > 0 {
		end = s.MaxTo // retirement may be set aside for a pinned request
	}
	return end > day
}

// meet returns bounds that hold for a set both b and o describe: each field
// the tighter of the two.
func (b Bounds) meet(o Bounds) Bounds {
	m := Bounds{
		MaxAnchorDay: min(b.MaxAnchorDay, o.MaxAnchorDay),
		Undated:      b.Undated && o.Undated,
		MaxFrom:      min(b.MaxFrom, o.MaxFrom),
		MinTo:        max(b.MinTo, o.MinTo),
		MinRetired:   max(b.MinRetired, o.MinRetired),
		Tenants:      map[string]int{},
	}
	for t, n := range b.Tenants {
		if k := o.Tenants[t]; k > 0 && n > 0 {
			m.Tenants[t] = min(n, k)
		}
	}
	return m
}

// part is one bleve index of the lexical index.
type part struct {
	key partKey
	dir string // "" in memory
	// idx is nil while a part from a catalog is unopened (see lazy), and
	// again when another holder took its lock as a write reopened it (see
	// reopen): then lazy is a fresh one, and the next read opens it.
	idx bleve.Index
	// sum is nil for an unpartitioned index, whose one part holds
	// everything. It is replaced, never changed, under Lexical.pmu: a part
	// from a catalog has the catalog's until it is opened, its index's
	// after.
	sum *partSummary
	// lazy is set for a part a catalog named (Lexical.Adopt): its index is
	// opened, and checked against the catalog, when a call first needs it.
	// ro: open read-only, as every existing partition is until a write
	// needs it (Lexical.writable).
	lazy *lazyPart
	ro   bool
	// cols caches the columns of the index's segments (columns.go).
	cols columns
	// damaged is set, and kept, once a read of the whole partition (Preload,
	// CheckSegments) found a segment that fails its checksum: every later
	// call that reads the partition fails with it (ensure), as a ranking
	// read from such a segment may be wrong without any read failing.
	damaged atomic.Pointer[error]
}

// markDamaged keeps err, an ErrDamaged of a whole-partition read, for
// the calls that read p after it (part.damaged); other errors pass.
func (p *part) markDamaged(err error) error {
	if errors.Is(err, ErrDamaged) {
		p.damaged.CompareAndSwap(nil, &err)
	}
	return err
}

// writing reports whether p is open for writing in this process: a write
// of this process can have reached it. The caller holds Lexical.pmu.
func (p *part) writing() bool { return p.idx != nil && !p.ro }

// searchPart is a part a search reads, with the bounds its clauses are
// compiled against.
type searchPart struct {
	p      *part
	bounds Bounds
}

// partsFor returns the parts that may hold a document e admits, in key
// order, each with the bounds of what it may hold (b, the whole index's,
// met with its summary's), opened. Opening one starts warming its tenant
// when the index warms (warmAfter).
func (l *Lexical) partsFor(e Eligibility, b Bounds) ([]searchPart, error) {
	out, err := l.selectParts(e, b)
	if err != nil {
		return nil, err
	}
	var cold []*part
	for _, sp := range out {
		if l.warmOn && sp.p.lazy != nil && !sp.p.lazy.done.Load() {
			cold = append(cold, sp.p)
		}
	}
	if err := l.ensureAll(out); err != nil {
		return nil, err
	}
	if len(cold) > 0 {
		l.warmAfter(cold)
	}
	return out, nil
}

// selectParts is partsFor without opening a part.
func (l *Lexical) selectParts(e Eligibility, b Bounds) ([]searchPart, error) {
	if err := l.settle(); err != nil {
		return nil, err
	}
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	// Not sized to l.parts: a request reads a few of a million chunks'
	// hundreds of partitions, and the rest would be garbage each request.
	var out []searchPart
	for _, p := range l.parts {
		switch {
		case p.sum == nil:
			out = append(out, searchPart{p, b})
		case p.sum.mayAdmit(e):
			out = append(out, searchPart{p, b.meet(p.sum.Bounds)})
		}
	}
	return out, nil
}

// allParts returns every part, in key order, opened.
func (l *Lexical) allParts() ([]*part, error) {
	if err := l.settle(); err != nil {
		return nil, err
	}
	l.pmu.RLock()
	all := slices.Clone(l.parts)
	l.pmu.RUnlock()
	for _, p := range all {
		if err := l.ensure(p); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// find returns where the part of key k is, or would be, in l.parts; the
// caller holds l.pmu.
func (l *Lexical) find(k partKey) (int, bool) {
	return slices.BinarySearchFunc(l.parts, k, func(p *part, k partKey) int { return comparePartKeys(p.key, k) })
}

// partOf returns the part of key k, opened, making it if there is none
// yet.
func (l *Lexical) partOf(k partKey) (*part, error) {
	if err := l.settle(); err != nil {
		return nil, err
	}
	l.pmu.RLock()
	i, found := l.find(k)
	var p *part
	if found {
		p = l.parts[i]
	}
	l.pmu.RUnlock()
	if found {
		return p, l.ensure(p)
	}
	p, err := l.makePart(k)
	if err != nil {
		return nil, err
	}
	l.pmu.Lock()
	defer l.pmu.Unlock()
	i, _ = l.find(k)
	l.parts = slices.Insert(l.parts, i, p)
	return p, nil
}

// makePart creates (or, after a crash that left it empty, opens) the index
// of partition k.
func (l *Lexical) makePart(k partKey) (*part, error) {
	if l.dir == "" {
		idx, err := bleve.NewUsing("", newMapping(l.name), scorch.Name, scorch.Name, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: partition %s: %v", ErrLexical, k.dirName(), err)
		}
		return &part{key: k, idx: idx, sum: emptySummary()}, nil
	}
	dir := filepath.Join(l.dir, k.dirName())
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := createLexical(dir, l.name); err != nil {
			return nil, fmt.Errorf("%w: create partition %s: %v", ErrLexical, dir, err)
		}
	}
	p, err := l.openPart(dir, false)
	if err != nil {
		return nil, err
	}
	if p.key != k && p.sum.MinStart != math.MaxInt64 {
		p.idx.Close()
		return nil, fmt.Errorf("%w: partition %s holds %+v, not %+v", ErrLexical, dir, p.key, k)
	}
	p.key = k
	return p, nil
}

// openPart opens the partition at dir, read-only if ro, and reads its key
// and summary. A partition no batch ever reached (a crash after it was
// made) has neither: it is empty.
func (l *Lexical) openPart(dir string, ro bool) (*part, error) {
	// bleve opens an index for writing by persisting its snapshot again
	// (a bbolt commit and an fdatasync): not on a query's path.
	idx, err := openBleve(dir, ro, l.boltTimeout)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*part, error) {
		idx.Close()
		return nil, fmt.Errorf("%w: partition %s: %s", ErrLexical, dir, fmt.Sprintf(format, args...))
	}
	if im, ok := idx.Mapping().(*mapping.IndexMappingImpl); !ok || im.DefaultAnalyzer != l.name {
		return fail("not an evpack partition with analyzer %q", l.name)
	}
	p := &part{dir: dir, idx: idx, sum: emptySummary(), ro: ro}
	rawKey, err := idx.GetInternal([]byte(partKeyInternal))
	if err != nil {
		return fail("key: %v", err)
	}
	rawSum, err := idx.GetInternal([]byte(summaryInternal))
	if err != nil {
		return fail("summary: %v", err)
	}
	if rawKey == nil || rawSum == nil {
		if n, err := idx.DocCount(); err != nil || n != 0 {
			return fail("%d documents without a key and summary (%v)", n, err)
		}
		return p, nil
	}
	if err := json.Unmarshal(rawKey, &p.key); err != nil {
		return fail("key: %v", err)
	}
	if p.key.dirName() != filepath.Base(dir) {
		return fail("holds partition %+v, whose directory is %s", p.key, p.key.dirName())
	}
	if err := json.Unmarshal(rawSum, p.sum); err != nil {
		return fail("summary: %v", err)
	}
	if p.sum.Format != summaryFormat {
		return fail("summary format %d, this build reads %d", p.sum.Format, summaryFormat)
	}
	if p.sum.Bounds.Tenants == nil {
		p.sum.Bounds.Tenants = map[string]int{}
	}
	return p, nil
}

// partMergePlan is the merge plan of every partition bleve opens (the
// fields of mergeplan.MergePlanOptions it changes; the rest keep bleve's
// defaults). Why not bleve's own: it sizes an index's budget of segments
// by its documents over a floor of 2,000, which suits one index of a whole
// corpus. A partition holds a tenant's quarter, a few thousand documents,
// so there a batch into a partition of fewer than 2,000 documents merged
// the whole partition again, and one of fewer than 4,000 its second
// segment: a commit of 100 chunks falling in 22 partitions rewrote 22 of
// them (issue 30: 317 ms at a million chunks, 6.6 times bleve's batch of
// 100, two thirds of its CPU in merges). With a floor of 200 and three
// segments a tier, a small batch's segment merges with other small ones,
// and a partition's large segment is merged again only when they add up
// to a tier of it. The price is read on a query's side: a partition that
// took many small batches holds up to four or five segments (one or two
// before), each a dictionary lookup per term. Merge makes every partition
// one segment again. docs/benchmarks.md, "Partitions that merge what a
// commit wrote" has the figures.
//
// Invariant: ranking does not depend on segments (scores take the
// scope's statistics, ties break on the chunk ID), so no plan moves a
// pack.
func partMergePlan() map[string]any {
	return map[string]any{"FloorSegmentSize": 200, "MaxSegmentsPerTier": 3}
}

// ErrDamaged: a partition's files are damaged: bleve refused them, failed
// or panicked reading them (bbolt asserts on a truncated root file), or a
// segment fails its checksum (CheckSegments). The error names the
// partition's directory; the other partitions are still read.
var ErrDamaged = fmt.Errorf("%w: damaged partition", ErrLexical)

// ErrPartitionLocked: a partition's files are locked by another holder
// (bbolt's lock on its root.bolt), which did not let go within
// LexicalOptions.LockWait: a tool that opened the partition directly, or a
// handle a bleve panic left open. The error names the partition's
// directory; unlike ErrDamaged it is not kept: the next call that reads the
// partition tries again.
var ErrPartitionLocked = fmt.Errorf("%w: partition locked by another holder", ErrLexical)

// openBleve opens the bleve index in dir, waiting boltTimeout (bleve's
// bolt_timeout) for another holder of its lock. bbolt and zapx panic on
// some damaged files instead of returning an error, in the opening
// goroutine (a partition may be opened in a goroutine of ensureAll's,
// where a panic would end the process): it is turned into ErrDamaged here,
// so that one tenant's damaged file fails that tenant's requests, not the
// service.
func openBleve(dir string, ro bool, boltTimeout string) (idx bleve.Index, err error) {
	// bbolt maps its file and trusts the size its meta page declares: a
	// truncated file faults on a page past its end, which would kill the
	// process unless the fault is a panic (then recovered below).
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, fmt.Errorf("%w: partition %s: bleve panicked opening it: %v", ErrDamaged, dir, r)
		}
	}()
	idx, err = bleve.OpenUsing(dir, map[string]any{"read_only": ro, "scorchMergePlanOptions": partMergePlan(), "bolt_timeout": boltTimeout})
	if lerr := lockedError(err, dir, boltTimeout); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open partition %s: %v", ErrDamaged, dir, err)
	}
	return idx, nil
}

// lockedError is ErrPartitionLocked for err, bleve's open of dir, when it
// gave up waiting boltTimeout for the lock; otherwise nil.
func lockedError(err error, dir, boltTimeout string) error {
	if !errors.Is(err, bolt.ErrTimeout) {
		return nil
	}
	return fmt.Errorf("%w: %s: its root.bolt stayed locked for %s", ErrPartitionLocked, dir, boltTimeout)
}

// write applies one batch to p: adds (indexed, or replacing the document of
// the same chunk) and deletes, with p's summary widened by adds. The summary
// is widened before bleve holds the documents, and written in the same
// batch, so that it describes them whenever they can be read.
func (l *Lexical) write(ctx context.Context, p *part, adds []Doc, deletes []string) error {
	if err := l.writable(p); err != nil {
		return err
	}
	b := p.idx.NewBatch()
	for i, d := range adds {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := l.add(p, b, d); err != nil {
			return fmt.Errorf("%w: chunk %q: %v", ErrLexical, d.Chunk.ID, err)
		}
	}
	for _, id := range deletes {
		b.Delete(id)
	}
	if p.sum != nil {
		sum := p.sum.with(adds)
		raw, err := json.Marshal(sum)
		if err != nil {
			return fmt.Errorf("%w: partition summary: %v", ErrLexical, err)
		}
		key, _ := json.Marshal(p.key)
		b.SetInternal([]byte(partKeyInternal), key)
		b.SetInternal([]byte(summaryInternal), raw)
		l.pmu.Lock()
		p.sum = sum
		l.pmu.Unlock()
	}
	if err := p.idx.Batch(b); err != nil {
		return l.fail(fmt.Errorf("%w: partition %s: batch of %d: %v", ErrLexical, p.key.dirName(), len(adds)+len(deletes), err))
	}
	// bleve fsyncs the segment file and its root file, not the directory
	// that names the segment: without this a power cut after the manifest
	// could lose the segment's entry, and bleve would load an older
	// snapshot than the manifest's. A batch changes store/ alone: the
	// partition's own directory was synced when it was made (createLexical),
	// and syncing it again cost each commit one more wait for the journal.
	if p.dir != "" {
		if err := syncDirs(filepath.Join(p.dir, "store")); err != nil {
			return l.fail(fmt.Errorf("%w: partition %s: %v", ErrLexical, p.key.dirName(), err))
		}
	}
	return nil
}

// openParts opens a partitioned lexical directory: its layout, and every
// partition in it unless deferred (see LexicalOptions.Deferred), when it
// only lists them.
func (l *Lexical) openParts(dir string, deferred bool) error {
	lay, err := readLayout(filepath.Join(dir, layoutName))
	if err != nil {
		return err
	}
	l.name, l.days = lay.Analyzer, lay.PartitionDays
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLexical, err)
	}
	var names []string
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() && strings.HasPrefix(e.Name(), "p-") {
			names = append(names, e.Name()) // not the layout, nor a partition a crash left half made (.p-*.tmp-*)
		}
	}
	if deferred {
		l.deferred = names
		l.unsettled.Store(true)
		return nil
	}
	return l.openDirs(names, false)
}

// readLayout reads and checks the layout file name: sealed (version 2),
// or unsealed of version 1 (written before the seal).
func readLayout(name string) (layout, error) {
	var lay layout
	raw, err := os.ReadFile(name)
	if err != nil {
		return lay, fmt.Errorf("%w: %v", ErrLexical, err)
	}
	want := layoutFormat
	body, serr := fsutil.UnsealText(raw)
	if serr != nil {
		body, want = raw, layoutFormatV1
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(&lay)
	if err == nil && !strictjson.Ended(dec) {
		err = errors.New("data after the layout")
	}
	if err != nil {
		if serr != nil {
			err = serr // neither sealed nor the JSON of version 1
		}
		return lay, fmt.Errorf("%w: %s: %v", ErrLexical, name, err)
	}
	if lay.Format != want || lay.PartitionDays <= 0 || lay.Analyzer == "" {
		if serr != nil && lay.Format == layoutFormat {
			return lay, fmt.Errorf("%w: %s: %v", ErrLexical, name, serr)
		}
		return lay, fmt.Errorf("%w: %s: format %q with %d days a partition and analyzer %q, this build reads %q (or %q unsealed)",
			ErrLexical, name, lay.Format, lay.PartitionDays, lay.Analyzer, layoutFormat, layoutFormatV1)
	}
	return lay, nil
}

// openDirs opens the partitions of the directories names under l.dir, each
// of which must hold no document if empty is set, and adds them to
// l.parts; the caller holds l.pmu or has not shared l yet.
func (l *Lexical) openDirs(names []string, empty bool) error {
	for _, name := range names {
		// Read-only, as a catalog's (see writable): opening for writing
		// persists bleve's snapshot again, in a goroutine of bleve's, so that
		// Open would write to the disk at no time the caller can tell.
		p, err := l.openPart(filepath.Join(l.dir, name), true)
		if err != nil {
			closeParts(l.parts)
			l.parts = nil
			return err
		}
		if empty {
			if n, err := p.idx.DocCount(); err != nil || n != 0 {
				p.idx.Close()
				closeParts(l.parts)
				l.parts = nil
				return fmt.Errorf("%w: partition %s holds %d documents, and the catalog names none of it (%v)", ErrCatalogMismatch, name, n, err)
			}
		}
		if p.sum.MinStart == math.MaxInt64 && p.key == (partKey{}) {
			p.idx.Close() // empty and nameless: made again when first written
			continue
		}
		l.parts = append(l.parts, p)
	}
	slices.SortFunc(l.parts, func(a, b *part) int { return comparePartKeys(a.key, b.key) })
	return nil
}

// createParts makes a new, empty partitioned lexical directory at dir,
// atomically (a temporary directory renamed into place).
func createParts(dir, an string, days int64) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	raw, err := json.Marshal(layout{Format: layoutFormat, Analyzer: an, PartitionDays: days})
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(tmp, layoutName))
	if err != nil {
		return err
	}
	_, err = f.Write(fsutil.SealText(append(raw, '\n')))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// closeParts closes parts, waiting for any being opened (ensure) first: a
// part of a catalog not yet opened never will be.
func closeParts(parts []*part) error {
	var errs []error
	for _, p := range parts {
		if p.lazy != nil {
			p.lazy.do(func() error { return fmt.Errorf("%w: partition %s: closed", ErrLexical, p.key.dirName()) })
		}
		if p.idx == nil {
			continue
		}
		if err := p.idx.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%w: close partition %s: %v", ErrLexical, p.key.dirName(), err))
		}
	}
	return errors.Join(errs...)
}

// Partitions returns how many bleve indexes the lexical index is made of,
// and how many of them a search under e reads: for benchmarks and traces of
// cost.
// It opens none.
func (l *Lexical) Partitions(e Eligibility, b Bounds) (all, read int, err error) {
	sel, err := l.selectParts(e, b)
	if err != nil {
		return 0, 0, err
	}
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	return len(l.parts), len(sel), nil
}

// CheckDoc reports whether stored, a document Docs listed, sits in the
// partition of d (the document the committed state makes of its chunk) and
// whether that partition's summary covers d, without which a search could
// skip a partition that holds an eligible chunk (an edited summary, say).
func (l *Lexical) CheckDoc(stored StoredDoc, d Doc) error {
	k := l.keyOf(d)
	if l.days > 0 && stored.Partition != k.dirName() {
		return fmt.Errorf("in partition %s, its chunk belongs in %s", stored.Partition, k.dirName())
	}
	if err := l.settle(); err != nil {
		return err
	}
	l.pmu.RLock()
	i, found := l.find(k)
	var sum *partSummary
	if found {
		sum = l.parts[i].sum
	}
	l.pmu.RUnlock()
	if !found || sum == nil {
		return nil
	}
	if w := sum.with([]Doc{d}); !sum.sameAs(w) {
		return fmt.Errorf("partition %s's summary does not cover it: %+v, with it %+v", k.dirName(), *sum, *w)
	}
	return nil
}

// sameAs reports whether s and o describe the same bounds.
func (s *partSummary) sameAs(o *partSummary) bool {
	sb, ob := s.Bounds, o.Bounds
	if s.Format != o.Format || s.MinStart != o.MinStart || s.MaxTo != o.MaxTo || s.MaxEnd != o.MaxEnd ||
		sb.MaxAnchorDay != ob.MaxAnchorDay || sb.Undated != ob.Undated || sb.MaxFrom != ob.MaxFrom ||
		sb.MinTo != ob.MinTo || sb.MinRetired != ob.MinRetired || len(sb.Tenants) != len(ob.Tenants) {
		return false
	}
	for t := range s.Bounds.Tenants {
		if (s.Bounds.Tenants[t] > 0) != (o.Bounds.Tenants[t] > 0) {
			return false
		}
	}
	return true
}

// ReadLayout returns the analyzer and partition span of the partitioned
// lexical index in dir, from its layout file, without opening any bleve
// index: what a rebuild of a damaged index keeps. An unpartitioned index
// (bleve's metadata at the top, whose mapping, and so analyzer, is in a
// store that may be the damaged part) gives "" and 0.
func ReadLayout(dir string) (analyzer string, partitionDays int64, err error) {
	if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err == nil {
		return "", 0, nil
	}
	lay, err := readLayout(filepath.Join(dir, layoutName))
	if err != nil {
		return "", 0, err
	}
	return lay.Analyzer, lay.PartitionDays, nil
}
