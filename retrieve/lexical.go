package retrieve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// Field names in the bleve document.
const (
	fieldText      = "text"
	fieldTenant    = "tenant"
	fieldAnchorDay = "anchor_day"
	fieldFrom      = "valid_from"
	fieldTo        = "valid_to"
	fieldGen       = "gen"
	// fieldRetired is the first as-of day on which facts exclude the chunk
	// (openTo when none does); fieldFactGen the generation of the last fact
	// that changed it (0 for none), so that an unfinished commit's facts
	// can be found and undone.
	fieldRetired = "retired"
	fieldFactGen = "fact_gen"
	// fieldFirstFact is the generation of the chunk's first fact (0 for
	// none): a request pinned to generation G keeps every chunk whose first
	// fact came after G in one range clause instead of naming each.
	fieldFirstFact = "first_fact_gen"
	fieldMeta      = "meta"
	// fieldSum holds the chunk's content hash, stored, so that Check can
	// compare each lexical document with the chunk it was built from.
	fieldSum = "sum"
)

// Open interval ends are stored as day numbers far outside the supported
// years (asof accepts 1000..9999), so a range clause needs no special case.
const (
	openFrom = -1_000_000
	openTo   = 10_000_000
)

// noTenant stands for the shared tenant "" (bleve indexes no empty terms).
// Every other tenant is indexed under its own name, and no name can equal
// noTenant: evidence.CheckTenant refuses control characters (and so the
// leading NUL) at ingest and in requests. The term is kept rather than a
// prefixed encoding of every name, because changing it would change the terms
// of every existing lexical index.
const noTenant = "\x00shared"

// ScoreQuantum is the resolution at which BM25 scores are compared. bleve
// computes BM25 in float64 with expressions (tf + k1*x) that Go may fuse into
// one FMA instruction on arm64, so raw scores can differ in the last bits
// between CPUs. Rounding to 1e-9 before ordering makes such a difference
// change the order only if it straddles a rounding boundary (a chance of
// about 1e-7 per compared pair; the arm64 golden tests in CI check it).
const ScoreQuantum = 1e-9

// ErrLexical wraps failures of the lexical index.
var ErrLexical = errors.New("retrieve: lexical index")

// LexicalOptions configure a lexical index. The zero value is the default.
type LexicalOptions struct {
	// Analyzer is "en" (lower case, stop words, Porter stems; the default) or
	// "standard" (lower case, stop words). It is fixed when the index is made.
	Analyzer string
	// PartitionDays is the span of a time partition (see parts.go):
	// DefaultPartitionDays when zero. Unpartitioned makes one bleve index
	// for everything instead, the layout of indexes made before partitions.
	// Both are fixed when the index is made; an existing index keeps its own.
	PartitionDays int64
	Unpartitioned bool
	// Deferred opens no partition of a partitioned index: OpenLexical lists
	// them, and the caller then hands it their catalog (Adopt), so that
	// each is opened when a call first reads it, or opens them all
	// (OpenAll). A call before either opens them all first.
	Deferred bool
	// LockWait bounds how long an open of a partition waits for another
	// holder of its files' lock (bbolt's, on root.bolt) to let go: a tool
	// that opened the partition directly, or a handle that a bleve panic
	// left open. Zero means DefaultLockWait; a negative value, do not wait.
	// The open then fails with ErrPartitionLocked, and the next call that
	// reads the partition tries again.
	LockWait time.Duration
	// PostingsCache bounds, in bytes, the decoded postings that the pruned
	// search keeps for the terms questions ask (postings.go): zero means
	// DefaultPostingsCache, a negative value none. It changes no hit, only
	// how fast a question's terms are read again.
	PostingsCache int64
	// Warm makes the first request that opens a partition of a tenant also
	// start opening the tenant's other partitions, on one goroutine of the
	// index (warm.go), so that the tenant's requests on other days find
	// them open. It changes no hit. Off by default: each partition opened
	// maps its segments' files, and at a million chunks warming every
	// tenant read raised the process's RSS after 1,000 questions by a third
	// (docs/benchmarks.md, "Warming a tenant's partitions").
	Warm bool
}

// DefaultLockWait is LexicalOptions.LockWait's when it is zero: bbolt's
// own default waits for ever, and a request would hang on a lock nobody
// may ever release.
const DefaultLockWait = 2 * time.Second

// postingsCache is PostingsCache with its default: the cache's size in
// bytes, not positive for none.
func (o LexicalOptions) postingsCache() int64 {
	if o.PostingsCache == 0 {
		return DefaultPostingsCache
	}
	return o.PostingsCache
}

// boltTimeout is LockWait as bleve's bolt_timeout: bbolt reads 0 as no
// bound, so "not at all" is the shortest wait there is.
func (o LexicalOptions) boltTimeout() string {
	switch {
	case o.LockWait == 0:
		return DefaultLockWait.String()
	case o.LockWait < 0:
		return time.Nanosecond.String()
	}
	return o.LockWait.String()
}

func (o LexicalOptions) analyzer() (string, error) {
	switch o.Analyzer {
	case "", en.AnalyzerName:
		return en.AnalyzerName, nil
	case standard.Name:
		return standard.Name, nil
	}
	return "", fmt.Errorf("%w: unknown analyzer %q (want en or standard)", ErrLexical, o.Analyzer)
}

func (o LexicalOptions) days() (int64, error) {
	switch {
	case o.Unpartitioned:
		return 0, nil
	case o.PartitionDays == 0:
		return DefaultPartitionDays, nil
	case o.PartitionDays < 0:
		return 0, fmt.Errorf("%w: PartitionDays %d is negative", ErrLexical, o.PartitionDays)
	}
	return o.PartitionDays, nil
}

// Lexical is a BM25 index over chunk text: one bleve index per partition
// (parts.go). Search is safe for concurrent use, also with Index; Index
// must not run concurrently with another Index.
type Lexical struct {
	analyzer analysis.Analyzer
	// textAnalyzer is the one bleve's match query uses on the text field
	// (the field's, by the mapping): the pruned search analyzes with it.
	textAnalyzer analysis.Analyzer
	name         string
	facts        bool   // the mapping has the fact fields (HoldsFacts)
	dir          string // "" in memory: Merge has nothing to do
	days         int64  // a partition's span; 0: one part holds everything
	boltTimeout  string // LexicalOptions.boltTimeout
	// postings is the pruned search's cache of decoded postings, nil for
	// none; the index's searches share it.
	postings *postingsCache
	// searches holds the pruned search's scratch (*prunedSearch), emptied
	// between searches (prunedSearch.release).
	searches sync.Pool
	// warm opens a read tenant's other partitions (warm.go) when warmOn
	// (LexicalOptions.Warm).
	warm   warmer
	warmOn bool

	pmu   sync.RWMutex
	parts []*part // by key
	// deferred lists the partition directories of an index opened
	// deferred, until it is settled (Adopt, OpenAll); unsettled says
	// whether it is not yet.
	deferred  []string
	unsettled atomic.Bool
	// swap is held for reading by every call that reads partitions, for
	// its whole length, and for writing while a partition opened
	// read-only is reopened for writing (writable).
	swap sync.RWMutex

	// failed is why the index may no longer be touched, or nil. After a
	// write that bleve could not persist (a full disk), bleve's in-memory
	// snapshot can still name a segment it has closed, and the next search
	// panics (zapx: "assignment to entry in nil map") in a goroutine that
	// bleve starts, where no recover of ours reaches: the process dies. So
	// after a failed write nothing but Close reaches bleve; reopening reads
	// its last persisted state, which the commit record rolls back.
	mu     sync.Mutex
	failed error
	closed bool

	// Hooks are for tests; the zero value does nothing.
	Hooks LexicalHooks
}

// LexicalHooks let tests stop or fail a write between the batches of its
// partitions. Each runs, when set, in the writing goroutine.
type LexicalHooks struct {
	// BeforeBatch runs before the batch of each partition a write (Index,
	// Delete, RollBack) touches is started, in key order, with the
	// partition's directory name ("" for an unpartitioned index); an error
	// it returns fails the write as a cancelled context would, before bleve
	// sees the batch. Batches started before it may still be running (they
	// go side by side: eachPart); a hook that ends its goroutine
	// (runtime.Goexit, as a killed process would stop) lets them finish
	// first, and starts no other.
	BeforeBatch func(partition string) error
	// AfterBatch runs once the batch of a partition BeforeBatch let
	// through has returned (sent to bleve, or failed), with the
	// partition's directory name, in the goroutine that wrote it: what a
	// test waits for to know a batch is done while others may run.
	AfterBatch func(partition string)
	// ReadOnlyClosed runs when a write has closed a partition it had open
	// read-only, before it opens it for writing, with the partition's
	// directory name, in the goroutine that reopens it (several may run
	// at once).
	ReadOnlyClosed func(partition string)
}

// ErrLexicalFailed: an earlier write to the lexical index failed, and the
// index must be closed and reopened before it is used again.
var ErrLexicalFailed = fmt.Errorf("%w: a write failed earlier; reopen the index", ErrLexical)

// ErrLexicalClosed: the index was closed.
var ErrLexicalClosed = fmt.Errorf("%w: closed", ErrLexical)

// usable returns ErrLexicalClosed once the index is closed, and
// ErrLexicalFailed, with the first failure, once a write failed.
func (l *Lexical) usable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrLexicalClosed
	}
	if l.failed != nil {
		return fmt.Errorf("%w (%v)", ErrLexicalFailed, l.failed)
	}
	return nil
}

// fail records that a write failed (see Lexical.failed) and returns err.
func (l *Lexical) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = err
	}
	return err
}

// OpenLexical opens the index in dir, creating it if absent. An empty dir
// gives an in-memory index.
func OpenLexical(dir string, opts LexicalOptions) (*Lexical, error) {
	an, err := opts.analyzer()
	if err != nil {
		return nil, err
	}
	days, err := opts.days()
	if err != nil {
		return nil, err
	}
	l := &Lexical{dir: dir, name: an, days: days, facts: true, boltTimeout: opts.boltTimeout(),
		postings: newPostingsCache(opts.postingsCache()), warmOn: opts.Warm}
	unpartitioned := days == 0
	if dir != "" {
		_, err := os.Stat(filepath.Join(dir, "index_meta.json"))
		switch {
		case err == nil:
			unpartitioned = true // made before partitions, or asked so
		case errors.Is(err, os.ErrNotExist):
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if unpartitioned {
					err = createLexical(dir, an)
				} else {
					err = createParts(dir, an, days)
				}
				if err != nil {
					return nil, fmt.Errorf("%w: create %q: %v", ErrLexical, dir, err)
				}
			}
			unpartitioned = false
			if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err == nil {
				unpartitioned = true // just made so
			}
		default:
			return nil, fmt.Errorf("%w: open %q: %v", ErrLexical, dir, err)
		}
	}
	if !unpartitioned {
		l.days = max(l.days, 1)
		if dir != "" {
			if err := l.openParts(dir, opts.Deferred); err != nil {
				return nil, err
			}
		}
		m := newMapping(l.name)
		return l, l.setAnalyzers(m, dir)
	}
	l.days = 0
	var idx bleve.Index
	if dir == "" {
		// Scorch with no path keeps its segments in memory; bleve.NewMemOnly
		// would give the legacy upsidedown store, ~30x slower here.
		idx, err = bleve.NewUsing("", newMapping(an), scorch.Name, scorch.Name, nil)
	} else {
		idx, err = bleve.OpenUsing(dir, map[string]any{"bolt_timeout": l.boltTimeout})
		if lerr := lockedError(err, dir, l.boltTimeout); lerr != nil {
			return nil, lerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %q: %v", ErrLexical, dir, err)
	}
	im, ok := idx.Mapping().(*mapping.IndexMappingImpl)
	if !ok || im.DefaultAnalyzer == "" {
		idx.Close()
		return nil, fmt.Errorf("%w: %q has no evpack mapping", ErrLexical, dir)
	}
	l.name = im.DefaultAnalyzer
	_, l.facts = im.DefaultMapping.Properties[fieldRetired]
	if l.facts {
		_, l.facts = im.DefaultMapping.Properties[fieldFactGen]
	}
	if l.facts {
		_, l.facts = im.DefaultMapping.Properties[fieldFirstFact]
	}
	l.parts = []*part{{dir: dir, idx: idx}}
	if err := l.setAnalyzers(im, dir); err != nil {
		idx.Close()
		return nil, err
	}
	return l, nil
}

// setAnalyzers takes the analyzers of the index and of its text field from
// mapping m.
func (l *Lexical) setAnalyzers(m mapping.IndexMapping, dir string) error {
	l.analyzer = m.AnalyzerNamed(l.name)
	if l.analyzer == nil {
		closeParts(l.parts)
		return fmt.Errorf("%w: %q: analyzer %q unavailable", ErrLexical, dir, l.name)
	}
	l.textAnalyzer = m.AnalyzerNamed(m.AnalyzerNameForPath(fieldText))
	if l.textAnalyzer == nil {
		closeParts(l.parts)
		return fmt.Errorf("%w: %q: analyzer of field %q unavailable", ErrLexical, dir, fieldText)
	}
	return nil
}

// HoldsFacts reports whether the index was made with the fields that record
// facts (retirement day and fact generation). An index made before facts
// existed answers every query as before but cannot take a fact: rebuild it.
func (l *Lexical) HoldsFacts() bool { return l.facts }

// createLexical makes a new, empty bleve index at dir, atomically: bleve
// writes its metadata file without a rename or fsync, so an index created
// in place and interrupted by a crash is a directory that bleve.Open
// refuses for ever ("metadata missing" or "metadata corrupt"). It is built
// in a temporary directory beside dir and renamed into place; a crash
// leaves only that directory (.lexical.tmp-*), which Check reports as a
// stray and nothing deletes.
func createLexical(dir, an string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	path := filepath.Join(tmp, filepath.Base(dir))
	idx, err := bleve.NewUsing(path, newMapping(an), scorch.Name, scorch.Name, nil)
	if err != nil {
		return err
	}
	if err := idx.Close(); err != nil {
		return err
	}
	// bleve writes its metadata without an fsync: a power cut after the
	// rename could leave it empty, and the partition unopenable.
	if err := syncFile(filepath.Join(path, "index_meta.json")); err != nil {
		return err
	}
	if err := syncDir(path); err != nil {
		return err
	}
	if err := os.Rename(path, dir); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.Remove(tmp)
}

// syncDir makes the entries of directory dir, and of its store/
// subdirectory when there is one, durable.
func syncDir(dir string) error { return syncDirs(filepath.Join(dir, "store"), dir) }

// syncDirs makes the entries of each directory of dirs that exists
// durable.
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		f, err := os.Open(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncFile makes the content of file name durable.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func newMapping(an string) *mapping.IndexMappingImpl {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = an
	doc := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = an
	text.Store = false
	text.IncludeTermVectors = false
	text.DocValues = false
	doc.AddFieldMappingsAt(fieldText, text)
	for _, f := range []string{fieldTenant, fieldMeta} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Analyzer = keyword.Name
		kw.Store = false
		kw.DocValues = false
		doc.AddFieldMappingsAt(f, kw)
	}
	for _, f := range []string{fieldAnchorDay, fieldFrom, fieldTo, fieldGen, fieldRetired, fieldFactGen, fieldFirstFact} {
		num := bleve.NewNumericFieldMapping()
		num.Store = f == fieldGen || f == fieldRetired || f == fieldFactGen || f == fieldFirstFact
		num.DocValues = false
		doc.AddFieldMappingsAt(f, num)
	}
	sum := bleve.NewKeywordFieldMapping()
	sum.Analyzer = keyword.Name
	sum.Store = true
	sum.Index = false
	sum.DocValues = false
	doc.AddFieldMappingsAt(fieldSum, sum)
	// No "_all" composite field: no query reads it, and indexing every
	// token a second time there cost about a third of ingest. (An index
	// made before keeps its stored mapping, and its composite: same hits,
	// same scores, since no query names it.)
	for _, fms := range doc.Properties {
		for _, fm := range fms.Fields {
			fm.IncludeInAll = false
		}
	}
	doc.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	m.DefaultMapping = doc
	return m
}

// Analyzer names the analyzer the index was made with.
func (l *Lexical) Analyzer() string { return l.name }

// Terms returns the distinct terms the index's analyzer makes of text, in
// ascending order, and how many tokens it makes: the field length BM25 uses.
func (l *Lexical) Terms(text string) ([]string, int) {
	a := l.Analyze(text)
	return a.Terms, a.Tokens
}

// Analysis is what the index's analyzer makes of a text: its distinct terms
// in ascending order, how often each occurs, and how many tokens it makes
// (the field length BM25 uses).
type Analysis struct {
	Terms  []string
	Freqs  []int
	Tokens int
}

// Analyze runs the index's analyzer over text.
func (l *Lexical) Analyze(text string) Analysis {
	ts := l.analyzer.Analyze([]byte(text))
	terms := make([]string, len(ts))
	for i, t := range ts {
		terms[i] = string(t.Term)
	}
	slices.Sort(terms)
	a := Analysis{Tokens: len(ts)}
	for i, t := range terms {
		if i > 0 && t == terms[i-1] {
			a.Freqs[len(a.Freqs)-1]++
			continue
		}
		a.Terms, a.Freqs = append(a.Terms, t), append(a.Freqs, 1)
	}
	return a
}

// analyzedField is the text field of a document whose analysis was made
// before (Lexical.Analyze): bleve takes its terms' frequencies and its token
// count as they are, instead of analyzing the text again and counting the
// tokens one by one. With term vectors off, that is all bleve keeps of a
// text field (TestIndexWithAnalysisIsTheSame compares every posting).
type analyzedField struct {
	*document.TextField
	a     *Analysis
	freqs index.TokenFrequencies
}

func (f *analyzedField) Analyze() {
	f.freqs = make(index.TokenFrequencies, len(f.a.Terms))
	tfs := make([]index.TokenFreq, len(f.a.Terms))
	for i, t := range f.a.Terms {
		tf := &tfs[i]
		tf.Term = []byte(t)
		tf.SetFrequency(f.a.Freqs[i])
		f.freqs[t] = tf
	}
}

func (f *analyzedField) AnalyzedLength() int { return f.a.Tokens }

func (f *analyzedField) AnalyzedTokenFrequencies() index.TokenFrequencies { return f.freqs }

// Doc is one lexical document: a chunk, the generation that committed it,
// and what facts say of it as of the generation being committed.
type Doc struct {
	Chunk *evidence.Chunk
	Gen   int64
	// Retired is the first as-of day on which facts exclude the chunk
	// (evidence.Fact.Retires, the earliest over its facts); zero for never.
	Retired asof.Date
	// FactGen is the generation of the newest of those facts (0 for none),
	// FirstFactGen of the oldest.
	FactGen, FirstFactGen int64
	// Analysis, when set, is Analyze's output for the chunk's text, made
	// for the corpus statistics: Index then hands it to bleve instead of
	// analyzing the text a second time.
	Analysis *Analysis
}

// Index adds docs to the index, or replaces the documents of the same chunk
// (a fact changed what is known of it): one atomic batch per partition the
// docs fall in.
func (l *Lexical) Index(ctx context.Context, docs []Doc) (err error) {
	defer l.recoverBleve(&err, "index")
	if err := l.usable(); err != nil {
		return err
	}
	return l.eachPart(ctx, docs, func(p *part, docs []Doc) error { return l.write(ctx, p, docs, nil) })
}

// Ready starts making the partitions that chunks fall in ready for Index
// to write them, on a goroutine of its own, and returns what waits for it
// and gives its error: those not yet opened are opened and checked, those
// open read-only are reopened for writing, as Index's first step does
// (writableAll), which then finds them ready. Why: the first write after
// Open pays about a millisecond of opens for each partition it touches,
// and a commit can pay them beside the rest of its work (its analysis,
// its next state, its batch file) instead of before its batches.
// Partitions that do not exist yet are left to Index, which makes them.
// Of a chunk it reads only what places it in a partition: its tenant, its
// anchor and its validity start. Like Index, it is serialized with the writes by the caller, who waits
// before any other write, and before Close.
func (l *Lexical) Ready(chunks []*evidence.Chunk) (wait func() error) {
	if len(chunks) == 0 {
		return func() error { return nil }
	}
	docs := make([]Doc, len(chunks))
	for i, c := range chunks {
		docs[i] = Doc{Chunk: c}
	}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer l.recoverBleve(&err, "ready")
		if err = l.usable(); err == nil {
			err = l.writableAll(l.existing(l.group(docs)))
		}
	}()
	return sync.OnceValue(func() error { return <-done })
}

// batchesAtOnce bounds the partitions one write sends bleve their batches
// side by side. A partition's batch mostly waits on its fsyncs (its
// segment's, its root.bolt's, its store directory's), not on a core, and a
// write's chunks fall in many partitions: at 100k chunks in the spread
// shape, 100 new chunks fell in 14 or 15, each batch 2 to 20 ms, one after
// the other (docs/benchmarks.md, "A write's partitions side by side").
const batchesAtOnce = 8

// eachPart calls fn with each partition docs fall in and its docs, making
// the partitions there are none of yet: in key order, up to batchesAtOnce
// of them side by side, each call in a goroutine of its own when there are
// several. No partition is started after a call failed or ctx was
// cancelled, and every call started has returned when eachPart returns
// (or when a hook ends the calling goroutine). The error is the first
// partition's in key order.
func (l *Lexical) eachPart(ctx context.Context, docs []Doc, fn func(*part, []Doc) error) error {
	groups := l.group(docs)
	if err := l.writableAll(l.existing(groups)); err != nil {
		return err
	}
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	defer wg.Wait() // also when BeforeBatch ends this goroutine: what started finishes
	sem := make(chan struct{}, batchesAtOnce)
	var failed atomic.Bool
	for i, g := range groups {
		sem <- struct{}{} // a slot first: a batch that failed while this waited stops the loop
		p, err := l.nextBatch(ctx, g.key, &failed)
		if p == nil {
			<-sem
			errs[i] = err
			break
		}
		if len(groups) == 1 {
			errs[i] = fn(p, g.docs)
			l.afterBatch(p)
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := func() (err error) {
				defer l.recoverBleve(&err, "write")
				return fn(p, g.docs)
			}()
			l.afterBatch(p)
			if err != nil {
				failed.Store(true)
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// nextBatch returns the partition of key k, made if there is none yet,
// for eachPart to start its batch, once BeforeBatch let it through; nil
// when no batch is to be started: ctx ended, a batch failed (failed), or
// the partition or the hook refused, with the error for the write (nil
// after a failed batch, whose own error the write returns).
func (l *Lexical) nextBatch(ctx context.Context, k partKey, failed *atomic.Bool) (*part, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if failed.Load() {
		return nil, nil
	}
	p, err := l.partOf(k)
	if errors.Is(err, ErrPartitionLocked) {
		return nil, err // not bleve's failure: nothing of this partition was written
	}
	if err != nil {
		return nil, l.fail(err)
	}
	if err := l.beforeBatch(p); err != nil {
		return nil, err
	}
	return p, nil
}

// beforeBatch runs Hooks.BeforeBatch, when set, for partition p.
func (l *Lexical) beforeBatch(p *part) error {
	if h := l.Hooks.BeforeBatch; h != nil {
		return h(l.hookName(p))
	}
	return nil
}

// afterBatch runs Hooks.AfterBatch, when set, for partition p.
func (l *Lexical) afterBatch(p *part) {
	if h := l.Hooks.AfterBatch; h != nil {
		h(l.hookName(p))
	}
}

// hookName is p's name for the hooks: its directory's, "" unpartitioned.
func (l *Lexical) hookName(p *part) string {
	if l.days > 0 {
		return p.key.dirName()
	}
	return ""
}

// existing returns the parts of groups that exist already (partOf makes
// the others, writable), in groups' order.
func (l *Lexical) existing(groups []docGroup) []*part {
	if l.settle() != nil {
		return nil // partOf returns the error
	}
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	var out []*part
	for _, g := range groups {
		if i, ok := l.find(g.key); ok {
			out = append(out, l.parts[i])
		}
	}
	return out
}

// docGroup is the documents of one partition, in the order given.
type docGroup struct {
	key  partKey
	docs []Doc
}

// group splits docs by partition, in key order.
func (l *Lexical) group(docs []Doc) []docGroup {
	var out []docGroup
	at := map[partKey]int{}
	for _, d := range docs {
		k := l.keyOf(d)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, docGroup{key: k})
		}
		out[i].docs = append(out[i].docs, d)
	}
	slices.SortFunc(out, func(a, b docGroup) int { return comparePartKeys(a.key, b.key) })
	return out
}

// add adds d to batch b of part p: mapped as the index's mapping says, with
// its text field analyzed as d.Analysis says when it is set (and the field
// keeps no term vectors, whose positions it does not hold).
func (l *Lexical) add(p *part, b *bleve.Batch, d Doc) error {
	if d.Analysis == nil || len(d.Analysis.Terms) != len(d.Analysis.Freqs) {
		return b.Index(d.Chunk.ID, docOf(d))
	}
	doc := document.NewDocument(d.Chunk.ID)
	if err := p.idx.Mapping().MapDocument(doc, docOf(d)); err != nil {
		return err
	}
	for i, f := range doc.Fields {
		if tf, ok := f.(*document.TextField); ok && f.Name() == fieldText && !f.Options().IncludeTermVectors() {
			doc.Fields[i] = &analyzedField{TextField: tf, a: d.Analysis}
		}
	}
	return b.IndexAdvanced(doc)
}

// anchorDay is c's anchor day, or openTo for an undated chunk: never
// eligible.
func anchorDay(c *evidence.Chunk) int64 {
	if c.Anchor.At.IsZero() {
		return openTo
	}
	return c.Anchor.Day().Days()
}

// docOf returns the fields of d's document. A field at its open value (no
// validity start or end, no retirement, no fact) is left out: bleve indexes
// sixteen terms of every number, and most chunks have none of those values,
// so ingest and the index are smaller without them (filter's clauses name
// the documents they exclude, so a missing field excludes nothing).
func docOf(d Doc) map[string]any {
	c := d.Chunk
	anchor := float64(anchorDay(c))
	meta := make([]string, 0, len(c.Meta))
	for _, k := range evidence.SortedKeys(c.Meta) {
		meta = append(meta, k+"="+c.Meta[k])
	}
	tenant := c.Tenant
	if tenant == "" {
		tenant = noTenant
	}
	fields := map[string]any{
		fieldText: c.Text, fieldTenant: tenant, fieldMeta: meta,
		fieldAnchorDay: anchor, fieldGen: float64(d.Gen), fieldSum: c.ContentHash,
	}
	if !c.Valid.From.IsZero() {
		fields[fieldFrom] = float64(c.Valid.From.Days())
	}
	if !c.Valid.To.IsZero() {
		fields[fieldTo] = float64(c.Valid.To.Days())
	}
	if !d.Retired.IsZero() {
		fields[fieldRetired] = float64(d.Retired.Days())
	}
	if d.FactGen != 0 {
		fields[fieldFactGen] = float64(d.FactGen)
	}
	if d.FirstFactGen != 0 {
		fields[fieldFirstFact] = float64(d.FirstFactGen)
	}
	return fields
}

// Eligibility is the set of chunks a request may see: owned by Tenant,
// matching every filter, and eligible as of AsOf (asof.Eligible).
//
// A request of a named tenant also sees the shared tenant "": its scope is
// the two of them (evidence.Header.Admits is the one definition). With
// Pinned, documents committed after generation UpTo are kept out: a request
// that reads an earlier state of the index.
type Eligibility struct {
	AsOf    asof.Date
	Tenant  string
	Filters []evidence.Filter
	Pinned  bool
	UpTo    int64
	// FewerAfter says fewer documents were committed after UpTo than at or
	// before it: the search then keeps the later ones out (a must-not
	// clause over the few) instead of requiring the earlier ones (a clause
	// every match must be intersected with). Either gives the same hits and
	// scores.
	FewerAfter bool
	// A pinned request keeps, despite their documents' retirement day, the
	// chunks whose first fact came after UpTo (one range clause), and the
	// chunks named in Readmit (sorted): those with facts by UpTo that
	// generation UpTo still held valid on AsOf but later facts retire.
	Readmit []string
	// Exclude names chunks (sorted) kept out whatever else holds: the
	// documents of a commit that bleve holds before its state is the
	// committed one.
	Exclude []string
	// naming, set only by SearchNaming and NamedIn, further restricts the
	// set to the chunks that name something (see Naming).
	naming *Naming
}

// Bounds summarize the committed chunks exactly, so that a query can leave
// out a clause that cannot exclude anything (every chunk dated on or before
// the as-of day, say). They only grow: chunks are never removed.
type Bounds struct {
	MaxAnchorDay int64          // latest anchor day of a dated chunk
	Undated      bool           // some chunk has no anchor
	MaxFrom      int64          // latest set valid_from, openFrom if none
	MinTo        int64          // earliest set valid_to, openTo if none
	MinRetired   int64          // earliest retirement day facts set, openTo if none
	Tenants      map[string]int // chunks per tenant
}

// Clone returns a copy of b that shares nothing with it.
func (b Bounds) Clone() Bounds {
	b.Tenants = maps.Clone(b.Tenants)
	return b
}

// NewBounds returns the bounds of an empty index.
func NewBounds() Bounds {
	return Bounds{MaxAnchorDay: openFrom, MaxFrom: openFrom, MinTo: openTo, MinRetired: openTo, Tenants: map[string]int{}}
}

// Retire extends b with a fact that retires a chunk from day on.
func (b *Bounds) Retire(day asof.Date) {
	b.MinRetired = min(b.MinRetired, day.Days())
}

// Add extends b with c.
func (b *Bounds) Add(c *evidence.Chunk) {
	if c.Anchor.At.IsZero() {
		b.Undated = true
	} else {
		b.MaxAnchorDay = max(b.MaxAnchorDay, c.Anchor.Day().Days())
	}
	if !c.Valid.From.IsZero() {
		b.MaxFrom = max(b.MaxFrom, c.Valid.From.Days())
	}
	if !c.Valid.To.IsZero() {
		b.MinTo = min(b.MinTo, c.Valid.To.Days())
	}
	b.Tenants[c.Tenant]++
}

// filter is an Eligibility compiled into boost-0 clauses: must, which
// every admitted document matches, and mustNot, which none does.
//
// A field at its open value (no validity start or end, no retirement, no
// fact) is not indexed at all (see docOf), so the clauses on those fields
// name the documents kept out, never the ones kept: "valid_to ≤ as-of" as a
// must-not, not "valid_to > as-of" as a must. (An index made when every
// document held every field gives the same answer: an open value is never
// inside the excluding range.)
//
// Beside each clause, mustCols and mustNotCols hold its form over a
// segment's columns (columns.go) when numbers alone decide it, else nil:
// the pruned search compares those per candidate instead of running their
// queries. Search's exhaustive path and Eligible run the queries.
type filter struct {
	must, mustNot         []query.Query
	mustCols, mustNotCols []*colClause
}

// addMust adds a must clause q, decided by col when not nil.
func (f *filter) addMust(q query.Query, col *colClause) {
	f.must, f.mustCols = append(f.must, q), append(f.mustCols, col)
}

// addMustNot adds a must-not clause q, decided by col when not nil.
func (f *filter) addMustNot(q query.Query, col *colClause) {
	f.mustNot, f.mustNotCols = append(f.mustNot, q), append(f.mustNotCols, col)
}

// onColumn returns the column form of one numeric range clause.
func onColumn(field string, le bool, v float64) *colClause {
	return &colClause{all: []colTest{{field: field, le: le, v: v}}}
}

// filter compiles e, leaving out the clauses that b proves can exclude no
// committed chunk.
func (e Eligibility) filter(b Bounds) filter {
	day := e.AsOf.Days()
	asOf := float64(day)
	yes, no := true, false
	var f filter
	if outside := len(b.Tenants) - b.inScope(e.Tenant); outside > 0 {
		var scope []query.Query
		for _, t := range scopeTerms(e.Tenant) {
			tq := bleve.NewTermQuery(t)
			tq.SetField(fieldTenant)
			tq.SetBoost(0)
			scope = append(scope, tq)
		}
		if len(scope) == 1 {
			f.addMust(scope[0], nil)
		} else {
			f.addMust(bleve.NewDisjunctionQuery(scope...), nil)
		}
	}
	upTo := float64(e.UpTo)
	if e.Pinned && !e.FewerAfter {
		gen := bleve.NewNumericRangeInclusiveQuery(nil, &upTo, nil, &yes)
		gen.SetField(fieldGen)
		f.addMust(gen, onColumn(fieldGen, true, upTo))
	}
	if b.Undated || b.MaxAnchorDay > day {
		anchor := bleve.NewNumericRangeInclusiveQuery(nil, &asOf, nil, &yes)
		anchor.SetField(fieldAnchorDay)
		f.addMust(anchor, onColumn(fieldAnchorDay, true, asOf))
	}
	if b.MaxFrom > day { // not yet in force
		from := bleve.NewNumericRangeInclusiveQuery(&asOf, nil, &no, nil)
		from.SetField(fieldFrom)
		f.addMustNot(from, onColumn(fieldFrom, false, asOf))
	}
	if b.MinTo <= day { // no longer in force
		to := bleve.NewNumericRangeInclusiveQuery(nil, &asOf, nil, &yes)
		to.SetField(fieldTo)
		f.addMustNot(to, onColumn(fieldTo, true, asOf))
	}
	if b.MinRetired <= day { // retired by a fact, unless kept
		retired := bleve.NewNumericRangeInclusiveQuery(nil, &asOf, nil, &yes)
		retired.SetField(fieldRetired)
		col := onColumn(fieldRetired, true, asOf)
		var kept []query.Query
		if e.Pinned {
			later := bleve.NewNumericRangeInclusiveQuery(&upTo, nil, &no, nil)
			later.SetField(fieldFirstFact)
			kept = append(kept, later)
			col.none = []colTest{{field: fieldFirstFact, le: false, v: upTo}}
		}
		if len(e.Readmit) > 0 {
			kept = append(kept, bleve.NewDocIDQuery(e.Readmit))
			col = nil // an ID list: the query decides
		}
		if len(kept) == 0 {
			f.addMustNot(retired, col)
		} else {
			out := bleve.NewBooleanQuery()
			out.AddMust(retired)
			for _, q := range kept {
				q.(query.BoostableQuery).SetBoost(0)
				out.AddMustNot(q)
			}
			f.addMustNot(out, col)
		}
	}
	for _, fl := range e.Filters {
		fq := bleve.NewTermQuery(fl.Key + "=" + fl.Value)
		fq.SetField(fieldMeta)
		f.addMust(fq, nil)
	}
	if e.Pinned && e.FewerAfter {
		f.addMustNot(afterGeneration(e.UpTo), onColumn(fieldGen, false, upTo))
	}
	if len(e.Exclude) > 0 {
		f.addMustNot(bleve.NewDocIDQuery(e.Exclude), nil)
	}
	if e.naming != nil {
		f.addMust(e.naming.query(), nil)
	}
	// Boost 0: the clauses restrict the match set and add nothing to a score
	// (nor to the query norm, which sums squared boosted weights).
	for _, q := range slices.Concat(f.must, f.mustNot) {
		q.(query.BoostableQuery).SetBoost(0)
	}
	return f
}

// none reports whether f admits every document.
func (f filter) none() bool { return len(f.must) == 0 && len(f.mustNot) == 0 }

// restrict returns q limited to the documents e admits: q conjoined with
// e's must clauses, and with its must-not clauses kept out (see filter).
// Search and Eligible share it, so the eligible set a test reads is the one
// every search runs over.
func (e Eligibility) restrict(q query.Query, b Bounds) query.Query {
	return e.filter(b).apply(q)
}

// apply returns q limited to the documents f admits.
func (f filter) apply(q query.Query) query.Query {
	if len(f.must) > 0 {
		q = bleve.NewConjunctionQuery(append([]query.Query{q}, f.must...)...)
	}
	if len(f.mustNot) > 0 {
		bq := bleve.NewBooleanQuery()
		bq.AddMust(q)
		bq.AddMustNot(f.mustNot...)
		q = bq
	}
	return q
}

// Eligible returns the IDs of every document elig admits, sorted: a
// match-all query restricted exactly as Search restricts its text query
// (the eligibility clauses, the retirement clause with its re-admitted IDs,
// the generation clause of a pinned request). It is the eligible set as the
// index computes it, for tests and audits to compare with the in-memory
// predicate. b must describe the committed index (see Bounds); like Search,
// it reads every document the index holds, so the caller keeps a commit
// from landing meanwhile.
func (l *Lexical) Eligible(ctx context.Context, elig Eligibility, b Bounds) ([]string, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	parts, err := l.partsFor(elig, b)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sp := range parts {
		got, err := eligibleIn(ctx, sp.p.idx, elig.restrict(bleve.NewMatchAllQuery(), sp.bounds))
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	slices.Sort(ids) // each part's are sorted; the order is ours to promise
	return ids, nil
}

// eligibleIn returns the IDs of the documents of idx that q matches.
func eligibleIn(ctx context.Context, idx bleve.Index, q query.Query) ([]string, error) {
	// bleve allocates a page's matches up front: a small page keeps a small
	// eligible set cheap, and a large one takes a few searches.
	const page = 128
	var ids, after []string
	for {
		req := bleve.NewSearchRequestOptions(q, page, 0, false)
		req.Score = "none"
		req.SortBy([]string{"_id"})
		req.SearchAfter = after
		res, err := idx.SearchInContext(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: eligible: %v", ErrLexical, err)
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if len(res.Hits) < page {
			return ids, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// scopeTerms are the tenant field's terms a request of tenant may see.
func scopeTerms(tenant string) []string {
	if tenant == "" {
		return []string{noTenant}
	}
	return []string{tenant, noTenant}
}

// inScope counts the tenants of b that a request of tenant may see.
func (b Bounds) inScope(tenant string) int {
	n := 0
	if b.Tenants[tenant] > 0 {
		n++
	}
	if tenant != "" && b.Tenants[""] > 0 {
		n++
	}
	return n
}

// BM25Stats are the true corpus statistics of the text field for the
// request's scope (its tenant and the shared one) at the generation it reads,
// kept by the caller so that neither segment layout, nor another tenant's
// chunks, nor later commits can change a score.
type BM25Stats struct {
	Docs   int64 // chunks in the scope
	Tokens int64 // analyzed tokens over all of them
	// DocFreq, when set, gives each analyzed question term's document
	// frequency in the scope; bleve would take it from the whole index.
	DocFreq map[string]uint64
}

// Hit is one lexical result.
type Hit struct {
	ID    string
	Score float64 // BM25, quantized to ScoreQuantum
}

// Result is a ranked lexical list.
//
// It carries no count of the chunks that matched: the pruned search does not
// score, nor even read, most of them.
type Result struct {
	Hits []Hit
}

// Search returns up to n eligible chunks ranked by BM25 for text: the n best
// by score quantized to ScoreQuantum, descending, then chunk ID. b must
// describe the committed index (see Bounds).
//
// It prunes (MaxScore over bleve's postings, see maxscore.go) and returns
// exactly what SearchExhaustive returns, the same IDs with the same scores in
// the same order, for every question. The rare question whose pruned scores
// cannot be shown to round as bleve's do (see nearBoundary) is answered by
// SearchExhaustive itself.
func (l *Lexical) Search(ctx context.Context, text string, elig Eligibility, b Bounds, n int, stats BM25Stats) (res Result, err error) {
	if n <= 0 {
		return Result{}, nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a fault on a mapped segment's page: a panic, recovered below
	defer recoverRead(&err, "search")
	if err := l.usable(); err != nil {
		return Result{}, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	hits, _, err := l.searchPruned(ctx, text, elig, b, n, stats)
	var unprunable errUnprunable
	if errors.As(err, &unprunable) {
		return l.searchExhaustive(ctx, text, elig, b, n, stats)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, err
	}
	return Result{Hits: hits}, nil
}

// SearchExhaustive is Search by bleve's own match query, which scores every
// posting of every question term: the reference the pruned search is tested
// against, and the peer it is measured with.
func (l *Lexical) SearchExhaustive(ctx context.Context, text string, elig Eligibility, b Bounds, n int, stats BM25Stats) (Result, error) {
	if n <= 0 {
		return Result{}, nil
	}
	if err := l.usable(); err != nil {
		return Result{}, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	return l.searchExhaustive(ctx, text, elig, b, n, stats)
}

// searchExhaustive is SearchExhaustive under l.swap, held by the caller.
func (l *Lexical) searchExhaustive(ctx context.Context, text string, elig Eligibility, b Bounds, n int, stats BM25Stats) (Result, error) {
	parts, err := l.partsFor(elig, b)
	if err != nil || len(parts) == 0 {
		return Result{}, err
	}
	if len(parts) > 1 || l.days > 0 {
		var err error
		if stats, err = l.wholeStats(ctx, text, stats); err != nil {
			return Result{}, err
		}
	}
	var hits []Hit
	for _, sp := range parts {
		q, pre := exhaustiveQuery(text, elig, sp.bounds, stats)
		got, err := exhaustiveIn(ctx, sp.p.idx, q, pre, n)
		if err != nil {
			return Result{}, err
		}
		hits = append(hits, got...)
	}
	// Each part's list holds its n best by (score, ID), so theirs are among
	// them.
	slices.SortFunc(hits, compareHits)
	return Result{Hits: hits[:min(n, len(hits))]}, nil
}

// exhaustiveIn returns the n best documents of idx for q by quantized score,
// then ID.
func exhaustiveIn(ctx context.Context, idx bleve.Index, q query.Query, pre map[string]any, n int) ([]Hit, error) {
	// bleve orders by raw score only (ties by its internal doc number, which
	// depends on segment layout). Fetch one past the cut, quantize, re-sort
	// with the ID tie-break, and fetch more while the lowest fetched score
	// still ties the score at rank n: an unfetched chunk could tie it too.
	// Rounding is monotone, so every chunk left unfetched then scores
	// strictly below rank n on every CPU whose raw scores round the same.
	for size := n + 1; ; size *= 2 {
		req := bleve.NewSearchRequestOptions(q, size, 0, false)
		req.PreSearchData = pre
		res, err := idx.SearchInContext(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: search: %v", ErrLexical, err)
		}
		hits := make([]Hit, len(res.Hits))
		for i, h := range res.Hits {
			hits[i] = Hit{ID: h.ID, Score: quantize(h.Score)}
		}
		complete := len(res.Hits) < size || uint64(len(res.Hits)) == res.Total
		var lowest float64
		if len(hits) > 0 {
			lowest = hits[len(hits)-1].Score // bleve's order: lowest raw score last
		}
		slices.SortFunc(hits, compareHits)
		if len(hits) > n {
			if !complete && lowest == hits[n-1].Score {
				continue
			}
			hits = hits[:n]
		}
		return hits, nil
	}
}

// wholeStats returns stats, or when it is unset (Docs 0), the statistics of
// the whole index as one bleve index would take them: documents, field
// cardinality and each question term's document frequency, summed over the
// partitions, so that a partitioned index scores as one.
func (l *Lexical) wholeStats(ctx context.Context, text string, stats BM25Stats) (BM25Stats, error) {
	if stats.Docs > 0 && stats.DocFreq != nil {
		return stats, nil
	}
	tokens := l.textAnalyzer.Analyze([]byte(text))
	whole := BM25Stats{DocFreq: map[string]uint64{}}
	all, err := l.allParts()
	if err != nil {
		return BM25Stats{}, err
	}
	for _, p := range all {
		err := func() error {
			adv, err := p.idx.Advanced()
			if err != nil {
				return err
			}
			r, err := adv.Reader()
			if err != nil {
				return err
			}
			defer r.Close()
			docs, err := r.DocCount()
			if err != nil {
				return err
			}
			whole.Docs += int64(docs)
			if br, ok := r.(index.BM25Reader); ok {
				card, err := br.FieldCardinality(fieldText)
				if err != nil {
					return err
				}
				whole.Tokens += int64(card)
			}
			seen := map[string]bool{}
			for _, tok := range tokens {
				t := string(tok.Term)
				if seen[t] {
					continue
				}
				seen[t] = true
				tfr, err := r.TermFieldReader(ctx, tok.Term, fieldText, false, false, false)
				if err != nil {
					return err
				}
				whole.DocFreq[t] += tfr.Count()
				tfr.Close()
			}
			return nil
		}()
		if err != nil {
			return BM25Stats{}, fmt.Errorf("%w: statistics of partition %s: %v", ErrLexical, p.key.dirName(), err)
		}
	}
	if stats.Docs > 0 {
		whole.Docs, whole.Tokens = stats.Docs, stats.Tokens
	}
	if stats.DocFreq != nil {
		whole.DocFreq = stats.DocFreq
	}
	return whole, nil
}

// exhaustiveQuery is bleve's query for text restricted by elig, and the
// search request's pre-search data that hands bleve the scope's statistics.
func exhaustiveQuery(text string, elig Eligibility, b Bounds, stats BM25Stats) (query.Query, map[string]any) {
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fieldText)
	var q query.Query = mq
	if stats.DocFreq != nil {
		q = &scopedMatch{MatchQuery: mq, df: stats.DocFreq}
	}
	q = elig.restrict(q, b)
	var pre map[string]any
	if stats.Docs > 0 {
		pre = map[string]any{search.BM25PreSearchDataKey: &search.BM25Stats{
			DocCount: float64(stats.Docs),
			// The other fields are filters with boost 0; bleve still asks
			// for their statistics, and any positive figure will do.
			FieldCardinality: map[string]int{fieldText: int(stats.Tokens),
				fieldTenant: int(stats.Docs), fieldMeta: int(stats.Docs), fieldAnchorDay: int(stats.Docs),
				fieldFrom: int(stats.Docs), fieldTo: int(stats.Docs), fieldGen: int(stats.Docs),
				fieldRetired: int(stats.Docs), fieldFactGen: int(stats.Docs), fieldFirstFact: int(stats.Docs)},
		}}
	}
	return q, pre
}

func quantize(score float64) float64 { return math.Round(score/ScoreQuantum) * ScoreQuantum }

// compareHits orders by score descending, then ID ascending.
func compareHits(a, b Hit) int {
	if a.Score != b.Score {
		if a.Score > b.Score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

// recoverBleve turns a panic inside bleve, in the calling goroutine, into
// an error, and marks the index failed. bleve panics on some write failures
// instead of returning them (on a full disk zapx assigns into a nil map);
// evpack must report those as errors, not crash the service that embeds it.
// A panic in a goroutine bleve starts is beyond any recover: Lexical.failed
// keeps calls away from a bleve that could panic there.
func (l *Lexical) recoverBleve(err *error, op string) {
	if r := recover(); r != nil {
		*err = l.fail(fmt.Errorf("%w: %s: bleve panicked (a full disk or a failed write?): %v", ErrLexical, op, r))
	}
}

// recoverRead is recoverBleve for a read (a search, Check's walk, Preload,
// warming): a panic of bleve's or zapx's reading a damaged segment (a slice
// bound from a flipped bit, a fault on a page past a truncated file's end)
// is ErrDamaged, and fails that call alone. Unlike a write's, it leaves the
// index usable: nothing was written, and marking it failed stopped every
// later commit and then every request over one damaged read.
func recoverRead(err *error, op string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: bleve panicked reading a partition: %v", ErrDamaged, op, r)
	}
}

// Merge merges each partition of the on-disk index into one segment (a
// no-op for memory). A done ctx stops it between partitions, or in
// bleve's merge, with ctx's error (wrapped): the partitions merged so far
// stay merged.
func (l *Lexical) Merge(ctx context.Context) (err error) {
	defer l.recoverBleve(&err, "merge")
	if err := l.usable(); err != nil {
		return err
	}
	if l.dir == "" { // bleve's in-memory scorch never finishes a forced merge
		return nil
	}
	all, err := l.allParts()
	if err != nil {
		return err
	}
	if err := l.writableAll(all); err != nil {
		return err
	}
	for _, p := range all {
		adv, err := p.idx.Advanced()
		if err != nil {
			return fmt.Errorf("%w: merge %s: %v", ErrLexical, p.dir, err)
		}
		s, ok := adv.(*scorch.Scorch)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil { // between partitions: each merged is durable
			return fmt.Errorf("%w: merge: %w", ErrLexical, err)
		}
		opts := mergeplan.SingleSegmentMergePlanOptions
		if err := s.ForceMerge(ctx, &opts); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: merge %s: %w", ErrLexical, p.dir, ctx.Err())
			}
			return fmt.Errorf("%w: merge %s: %v", ErrLexical, p.dir, err)
		}
		// The merged segment's entry, and the removal of the segments it
		// replaced (which may hold a purged text), made durable.
		if err := syncDir(p.dir); err != nil {
			return fmt.Errorf("%w: merge %s: %v", ErrLexical, p.dir, err)
		}
	}
	return nil
}

// Close closes the index; closing it again does nothing.
func (l *Lexical) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.warm.stop()
	l.pmu.Lock()
	parts := l.parts
	l.parts, l.deferred = nil, nil // bleve panics on a second Close
	l.unsettled.Store(false)
	l.pmu.Unlock()
	// Outside pmu: a partition being opened (ensure) takes it to finish,
	// and closeParts waits for that.
	return closeParts(parts)
}

// RollBack undoes what an unfinished commit after generation gen did to the
// index: it removes every document of a later generation, and puts back
// restore's document for every chunk a later fact re-indexed. It returns how
// many documents it removed or restored.
func (l *Lexical) RollBack(ctx context.Context, gen int64, restore func(id string) (Doc, error)) (changed int, err error) {
	defer l.recoverBleve(&err, "roll back")
	if err := l.usable(); err != nil {
		return 0, err
	}
	all, err := l.allParts()
	if err != nil {
		return 0, err
	}
	return l.rollBackParts(ctx, all, gen, restore)
}

// Undo is RollBack over the partitions this process has opened for
// writing: the only ones a write of this process, the one being undone,
// can have reached (a write opens each partition it touches for writing
// before its first batch). A partition the write could not open for
// writing, because another holder keeps it locked, is left alone, where
// RollBack, which must look at every partition (a crash's writes are
// undone at Open), would wait for it again and fail.
func (l *Lexical) Undo(ctx context.Context, gen int64, restore func(id string) (Doc, error)) (changed int, err error) {
	defer l.recoverBleve(&err, "undo")
	if err := l.usable(); err != nil {
		return 0, err
	}
	var written []*part
	l.pmu.RLock()
	for _, p := range l.parts {
		if p.writing() {
			written = append(written, p)
		}
	}
	l.pmu.RUnlock()
	return l.rollBackParts(ctx, written, gen, restore)
}

// rollBackParts is rollBackPart for each of parts, in order.
func (l *Lexical) rollBackParts(ctx context.Context, parts []*part, gen int64, restore func(id string) (Doc, error)) (changed int, err error) {
	for _, p := range parts {
		n, err := l.rollBackPart(ctx, p, gen, restore)
		changed += n
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// Restore is Index for the documents that fall in partitions this process
// has opened for writing: it puts back what a write of this process, the
// one being undone, deleted (Delete opens each partition it touches for
// writing before its first batch). A partition the write could not open
// for writing, because another holder keeps it locked, was never reached,
// and is left alone.
func (l *Lexical) Restore(ctx context.Context, docs []Doc) error {
	var reached []Doc
	l.pmu.RLock()
	for _, d := range docs {
		if i, ok := l.find(l.keyOf(d)); ok && l.parts[i].writing() {
			reached = append(reached, d)
		}
	}
	l.pmu.RUnlock()
	if len(reached) == 0 {
		return nil
	}
	return l.Index(ctx, reached)
}

func (l *Lexical) rollBackPart(ctx context.Context, p *part, gen int64, restore func(id string) (Doc, error)) (changed int, err error) {
	for {
		req := bleve.NewSearchRequestOptions(changedAfter(gen), 1000, 0, false)
		req.Score = "none"
		req.Fields = []string{fieldGen}
		req.SortBy([]string{"_id"})
		res, err := p.idx.SearchInContext(ctx, req)
		if err != nil {
			return changed, fmt.Errorf("%w: roll back %s to %d: %v", ErrLexical, p.dir, gen, err)
		}
		if len(res.Hits) == 0 {
			return changed, nil
		}
		var adds []Doc
		var deletes []string
		for _, h := range res.Hits {
			if g, _ := h.Fields[fieldGen].(float64); int64(g) > gen {
				deletes = append(deletes, h.ID)
				continue
			}
			d, err := restore(h.ID)
			if err == nil && l.keyOf(d) != p.key {
				err = fmt.Errorf("its partition is %s, not %s", l.keyOf(d).dirName(), p.key.dirName())
			}
			if err != nil {
				return changed, fmt.Errorf("%w: roll back to %d: chunk %q: %w", ErrLexical, gen, h.ID, err)
			}
			adds = append(adds, d)
		}
		if err := l.beforeBatch(p); err != nil {
			return changed, fmt.Errorf("roll back to %d: %w", gen, err)
		}
		err = l.write(ctx, p, adds, deletes)
		l.afterBatch(p)
		if err != nil {
			return changed, fmt.Errorf("roll back to %d: %w", gen, err)
		}
		changed += len(res.Hits)
	}
}

// Delete removes the documents of chunks, one atomic batch per partition
// they fall in: a purge takes the chunks' text out of the inverted index for
// good.
func (l *Lexical) Delete(ctx context.Context, chunks []*evidence.Chunk) (err error) {
	defer l.recoverBleve(&err, "delete")
	if err := l.usable(); err != nil {
		return err
	}
	docs := make([]Doc, len(chunks))
	for i, c := range chunks {
		docs[i] = Doc{Chunk: c}
	}
	return l.eachPart(ctx, docs, func(p *part, docs []Doc) error {
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.Chunk.ID
		}
		return l.write(ctx, p, nil, ids)
	})
}

// DocCount returns the number of documents in the index, committed or not.
func (l *Lexical) DocCount() (uint64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	all, err := l.allParts()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, p := range all {
		c, err := p.idx.DocCount()
		if err != nil {
			return 0, fmt.Errorf("%w: count %s: %v", ErrLexical, p.dir, err)
		}
		n += c
	}
	return n, nil
}

// afterGeneration matches the documents committed after generation gen.
func afterGeneration(gen int64) *query.NumericRangeQuery {
	after, no := float64(gen), false
	q := bleve.NewNumericRangeInclusiveQuery(&after, nil, &no, nil)
	q.SetField(fieldGen)
	return q
}

// changedAfter matches the documents a commit after generation gen wrote:
// its chunks, and the earlier chunks its facts re-indexed.
func changedAfter(gen int64) query.Query {
	after, no := float64(gen), false
	facts := bleve.NewNumericRangeInclusiveQuery(&after, nil, &no, nil)
	facts.SetField(fieldFactGen)
	return bleve.NewDisjunctionQuery(afterGeneration(gen), facts)
}

// CountAbove returns how many documents a commit after generation gen
// wrote: chunks of a later generation, and chunks a later fact re-indexed.
func (l *Lexical) CountAbove(ctx context.Context, gen int64) (uint64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	all, err := l.allParts()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, p := range all {
		req := bleve.NewSearchRequestOptions(changedAfter(gen), 0, 0, false)
		req.Score = "none"
		res, err := p.idx.SearchInContext(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("%w: count above %d in %s: %v", ErrLexical, gen, p.dir, err)
		}
		n += res.Total
	}
	return n, nil
}

// StoredDoc is what the lexical index records of a chunk besides its
// searchable fields: enough to tell which chunk, and which commit, it was
// built from.
type StoredDoc struct {
	ID          string
	ContentHash string
	Generation  int64
	Retired     asof.Date // zero: no fact retires the chunk
	FactGen     int64
	FirstFact   int64  // FirstFactGen
	Partition   string // the directory of its partition ("" unpartitioned)
}

// Docs calls fn for every document of the index in chunk ID order.
func (l *Lexical) Docs(ctx context.Context, fn func(StoredDoc) error) error {
	return l.readParts("read documents", func(parts []*part) error { return docsOf(ctx, l.days > 0, parts, fn) })
}

// readParts calls fn with every partition, opened, under swap for reading:
// a read of the whole index (Docs, CheckSegments). A fault or a panic of
// bleve's reading one is ErrDamaged (recoverRead).
func (l *Lexical) readParts(op string, fn func([]*part) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverRead(&err, op)
	if err := l.usable(); err != nil {
		return err
	}
	l.swap.RLock()
	defer l.swap.RUnlock()
	parts, err := l.allParts()
	if err != nil {
		return err
	}
	return fn(parts)
}

// docsOf is Docs over parts (partitioned: each document names its own).
func docsOf(ctx context.Context, partitioned bool, parts []*part, fn func(StoredDoc) error) error {
	var all []StoredDoc
	for _, p := range parts {
		if err := storedDocs(ctx, p, func(d StoredDoc) error {
			if partitioned {
				d.Partition = p.key.dirName()
			}
			all = append(all, d)
			return nil
		}); err != nil {
			return err
		}
	}
	slices.SortStableFunc(all, func(a, b StoredDoc) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range all {
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// storedDocs calls fn for every document of p in chunk ID order.
func storedDocs(ctx context.Context, p *part, fn func(StoredDoc) error) error {
	const page = 1000
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), page, 0, false)
		req.Score = "none"
		req.Fields = []string{fieldSum, fieldGen, fieldRetired, fieldFactGen, fieldFirstFact}
		req.SortBy([]string{"_id"})
		req.SearchAfter = after
		res, err := p.idx.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: list documents of %s: %v", ErrLexical, p.dir, err)
		}
		for _, h := range res.Hits {
			d := StoredDoc{ID: h.ID}
			d.ContentHash, _ = h.Fields[fieldSum].(string)
			if g, ok := h.Fields[fieldGen].(float64); ok {
				d.Generation = int64(g)
			}
			if r, ok := h.Fields[fieldRetired].(float64); ok && r < openTo {
				d.Retired = asof.DateFromDays(int64(r))
			}
			if g, ok := h.Fields[fieldFactGen].(float64); ok {
				d.FactGen = int64(g)
			}
			if g, ok := h.Fields[fieldFirstFact].(float64); ok {
				d.FirstFact = int64(g)
			}
			if err := fn(d); err != nil {
				return err
			}
		}
		if len(res.Hits) < page {
			return nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}
