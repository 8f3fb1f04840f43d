package evpack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/denseleg"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/ingest"
	"github.com/evpack/evpack/internal/packcache"
	"github.com/evpack/evpack/internal/periodleg"
	"github.com/evpack/evpack/internal/pipeline"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// Engine is an evidence index and the pipeline that queries it. Query and
// Verify are safe for concurrent use with each other and with Ingest; Ingest
// calls are serialized.
type Engine struct {
	*index
	opts Options
}

// index is what views of one index share.
type index struct {
	dir   string       // "" for memory
	store *storage.Dir // nil for memory
	lex   *retrieve.Lexical
	emb   retrieve.Embedder // nil: no dense leg
	// graph holds the HNSW build settings when the index keeps a graph over
	// the dense vectors (Options.DenseIndex "hnsw" at Open); nil otherwise.
	graph *retrieve.GraphOptions
	// views caches the dense views of a corpus-dependent embedder per
	// scope and generation (denseview.go).
	views *denseleg.Views

	ingestMu sync.Mutex // one ingest at a time
	// ahead holds the checkpoint being written ahead of the commit that
	// will name it (state.Plan, state.AheadSlot).
	ahead state.AheadSlot
	// retired counts the rows of replaced states still being closed
	// (rebase).
	retired sync.WaitGroup
	// mu guards st, pending, closed and broken. A query reads under it only
	// while it searches the lexical index; a commit writes only to mark
	// itself pending and to swap st (a purge: while it deletes from bleve
	// too). No model or cache call ever runs under it.
	mu      sync.RWMutex
	st      *state.State
	pending *pendingCommit // see publish
	closed  bool
	broken  error // why the engine refuses work (see ErrBroken)
	// readOnly is set when Open could not write the rollback of an
	// unfinished commit (a full disk): the lexical index still holds that
	// commit's documents, so every search is pinned to st's generation,
	// and writes are refused (ErrReadOnly) until an Open with room rolls
	// the commit back, as its record, kept, asks.
	readOnly error
	// now is the clock a writer's commit times come from (time.Now; a test
	// sets another, to show a replica takes them from the entries).
	now func() time.Time
	// writer, when set (Lead), is the shared log every commit is appended
	// to before it is applied; advanced is closed, and replaced, each time
	// st moves (a request's MinGeneration waits on it).
	writer   *evlog.Writer
	advanced chan struct{}
	// done is closed by Close: a Follow waiting for the log's next entry
	// ends then.
	done chan struct{}
}

// View returns an engine over the same index with other query options (K,
// Pool, RRFK, LexicalWeight, Reranker): for comparing configurations without
// building the index twice. The analyzer belongs to the index and cannot
// change. Closing any view closes the index for all of them.
func (e *Engine) View(opts Options) (*Engine, error) {
	if opts.Analyzer != "" && string(opts.Analyzer) != e.lex.Analyzer() {
		return nil, fmt.Errorf("%w: a view cannot change the analyzer (%q) to %q", ErrBadOptions, e.lex.Analyzer(), opts.Analyzer)
	}
	if opts.Embedder != nil && opts.Embedder != e.emb {
		return nil, fmt.Errorf("%w: a view cannot change the embedder", ErrBadOptions)
	}
	opts.Analyzer, opts.Embedder = Analyzer(e.lex.Analyzer()), e.emb
	if opts.DenseIndex == "hnsw" {
		if e.graph == nil {
			return nil, fmt.Errorf("%w: a view cannot add an HNSW graph; open the index with DenseIndex \"hnsw\"", ErrBadOptions)
		}
		g := opts.Graph
		if g.M == 0 && g.EfConstruction == 0 && g.Seed == 0 {
			g.M, g.EfConstruction, g.Seed = e.graph.M, e.graph.EfConstruction, e.graph.Seed
		}
		if g.Build == "" {
			g.Build = e.graph.Build
		}
		if g.M != e.graph.M || g.EfConstruction != e.graph.EfConstruction || g.Seed != e.graph.Seed || g.Build != e.graph.Build {
			return nil, fmt.Errorf("%w: a view cannot change the graph's build settings (%s)", ErrBadOptions, e.graph)
		}
		opts.Graph = g
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Engine{index: e.index, opts: opts}, nil
}

// Open opens the on-disk index in dir, creating it when dir is missing or
// empty. It takes the index's lock first (see Options.LockWait and
// ErrLocked), then reads and checks the manifest and the generation's
// checkpoint (or, for an index without one, or with a dense leg, every
// batch file it names: see docs/design.md §5). A commit that a crash
// interrupted is rolled back, or finished, as its record says; nothing else
// is ever deleted: a directory that is not an index is ErrNotIndex, and one
// whose files disagree is ErrCorrupt naming the file.
func Open(dir string, opts Options) (*Engine, error) {
	return open(dir, opts, true)
}

func open(dir string, opts Options, create bool) (*Engine, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	o, err := state.OpenDir(dir, state.DirOptions{Create: create, LockWait: opts.LockWait, Lexical: opts.lexicalOptions(),
		Embedder: opts.Embedder, Graph: graphSettings(opts), Damaged: func(err error) error { return audit.CorruptLexical(context.Background(), err) },
		Check: func(lex *retrieve.Lexical) error {
			if opts.Analyzer != "" && string(opts.Analyzer) != lex.Analyzer() {
				return fmt.Errorf("%w: index %s was made with analyzer %q, options ask %q", ErrBadOptions, dir, lex.Analyzer(), opts.Analyzer)
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	opts.Analyzer = Analyzer(o.Lex.Analyzer())
	ix := &index{dir: dir, store: o.Store, lex: o.Lex, emb: opts.Embedder, graph: graphSettings(opts), st: o.State,
		views: denseleg.NewViews(), now: time.Now, readOnly: o.ReadOnly, advanced: make(chan struct{}), done: make(chan struct{})}
	ix.ahead.Then.ReadBack = ix.emb == nil // as state.ReadBack reads back a checkpoint a commit names
	return &Engine{index: ix, opts: opts}, nil
}

// OpenExisting is Open for a directory that must already hold an index: a
// missing or empty one is ErrNotIndex instead of a new index. Read-only
// tools (query, verify, check) use it so that a mistyped path is an error.
func OpenExisting(dir string, opts Options) (*Engine, error) {
	return open(dir, opts, false)
}

// OpenMemory returns an engine whose index lives in memory only.
func OpenMemory(opts Options) (*Engine, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	lex, err := retrieve.OpenLexical("", opts.lexicalOptions())
	if err != nil {
		return nil, err
	}
	opts.Analyzer = Analyzer(lex.Analyzer())
	st := state.NewState()
	ix := &index{lex: lex, emb: opts.Embedder, st: st, graph: graphSettings(opts), views: denseleg.NewViews(), now: time.Now, advanced: make(chan struct{}), done: make(chan struct{})}
	if state.CorpusFree(opts.Embedder) {
		dense, err := st.BuildDense(context.Background(), opts.Embedder, nil, nil)
		if err != nil {
			lex.Close()
			return nil, err
		}
		g, err := state.BuildGraph(context.Background(), dense, ix.graph)
		if err != nil {
			lex.Close()
			return nil, err
		}
		st.SetDense(dense, g)
	}
	return &Engine{index: ix, opts: opts}, nil
}

// graphSettings returns the graph build settings opts ask of a new index.
func graphSettings(opts Options) *retrieve.GraphOptions {
	if g := opts.Graph; opts.DenseIndex == "hnsw" {
		return &g
	}
	return nil
}

// Options returns the engine's options with defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Close releases the index. Queries after Close fail with ErrClosed.
func (e *Engine) Close() error {
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	close(e.advanced) // requests waiting for a generation see closed
	close(e.done)     // and Follow stops waiting for the log
	// The writer reads st's rows and lex's analyzers and partition keys: it
	// ends first.
	err := e.ahead.Drop()
	err = errors.Join(err, e.lex.Close())
	e.retired.Wait()
	if e.st.Rows != nil {
		err = errors.Join(err, e.st.Rows.Close())
	}
	if e.store != nil {
		err = errors.Join(err, e.store.Close())
	}
	return err
}

// Merge compacts the lexical index into one segment. Rankings do not change:
// BM25 statistics are evpack's own, not the segments'.
func (e *Engine) Merge(ctx context.Context) error {
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	if _, err := e.snapshot(); err != nil {
		return err
	}
	if e.store == nil {
		return nil // a memory index has no segments to compact (and bleve's in-memory merge never returns)
	}
	if e.readOnly != nil {
		return e.readOnly
	}
	return e.lex.Merge(ctx)
}

// snapshot returns the committed state queries read, or why there is none.
func (e *Engine) snapshot() (*state.State, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	switch {
	case e.closed:
		return nil, ErrClosed
	case e.broken != nil:
		return nil, e.broken
	}
	return e.st, nil
}

// Flag names a chunk that was ingested but can never be cited, and why.
type Flag = ingest.Flag

// IngestReport says what one Ingest did.
type IngestReport struct {
	Read       int    // records the connector produced
	Added      int    // new chunks committed
	Documents  int    // distinct documents among the added chunks
	Versions   int    // distinct (document, version) pairs among them
	Unchanged  int    // records identical to a stored chunk or fact, skipped
	Facts      int    // new facts committed (explicit, or ends of stored chunks)
	Flagged    []Flag // added but uncitable or undated, in input order
	Generation int64  // the generation committed (unchanged if nothing added)

	// NewFacts holds the Facts committed, in the order they were read
	// (copies): what each says ended, superseded or retracted.
	NewFacts []evidence.Fact
}

// IngestOptions tune one ingest.
type IngestOptions struct {
	// Progress, when set, is called with (done, total) as records are
	// prepared, and with (total, total) once the batch is committed.
	Progress func(done, total int)
}

// Ingest reads every record of src and commits the new chunks and facts as
// one batch: all of them or, on any error, none. A record whose ID is
// already stored as the same evidence (evidence.SameEvidence: every field
// alike but the time it was fetched) is skipped and the stored chunk kept.
// One that differs only in an earlier (or newly set) end of validity
// becomes a fact on the stored chunk (see connectors.Record); one that would
// Extend the validity is evidence.ErrValidityExtended, and one that differs
// in anything else evidence.ErrDuplicateChunk: a new version needs a new
// chunk ID. A fact that names no chunk, or contradicts it, is
// evidence.ErrBadFact naming its record (see facts.go).
//
// Ingest is resumable: after a failure, running it again adds what is
// missing and skips what was committed.
func (e *Engine) Ingest(ctx context.Context, src connectors.Connector, opts IngestOptions) (IngestReport, error) {
	recs, err := src.Read(ctx)
	if err != nil {
		return IngestReport{}, err
	}
	return e.ingest(ctx, recs, opts)
}

func (e *Engine) ingest(ctx context.Context, recs []connectors.Record, opts IngestOptions) (IngestReport, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(int, int) {}
	}
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	rep := IngestReport{Read: len(recs)}
	if e.readOnly != nil {
		return rep, e.readOnly
	}

	// Only ingest (serialized by ingestMu) replaces st, so st stays the
	// latest state until this commit swaps in the next.
	st, err := e.snapshot()
	if err != nil {
		return rep, err
	}
	rep.Generation = st.Gen

	// Validate everything before touching storage.
	b, err := ingest.Prepare(ctx, st, recs, e.lex.HoldsFacts(), progress)
	rep.Unchanged, rep.Flagged = b.Unchanged, b.Flagged
	if err != nil {
		return rep, err
	}
	add, facts := b.Add, b.Facts
	if len(add) == 0 && len(facts) == 0 {
		return rep, nil
	}
	if len(facts) > 0 && !e.lex.HoldsFacts() {
		return rep, fmt.Errorf("%w: the lexical index was made before facts existed and cannot record them; rebuild the index (evpack ingest into a new directory)", ErrOldFormat)
	}
	// Prepare the entry (its commit time chosen here, once: applying it
	// again gives the same generation), then apply it: the one path by
	// which an index changes.
	en, err := e.prepare(st, storage.Contents{Chunks: add, Facts: facts})
	if err != nil {
		return rep, err
	}
	if err := e.apply(ctx, st, en); err != nil {
		return rep, err
	}
	gen := en.gen
	rep.Added, rep.Facts = len(add), len(facts)
	for _, f := range facts {
		rep.NewFacts = append(rep.NewFacts, *f)
	}
	rep.Generation = gen
	docs, versions := map[string]bool{}, map[[2]string]bool{}
	for _, ch := range add {
		docs[ch.DocID] = true
		versions[[2]string{ch.DocID, ch.Version}] = true
	}
	rep.Documents, rep.Versions = len(docs), len(versions)
	progress(len(recs), len(recs))
	return rep, nil
}

// Request asks for evidence. It is plain data; its canonical form (question
// normalized, filters sorted, K resolved) is what packs and cache keys use.
//
// A request reads its tenant's chunks and the shared corpus (tenant "");
// a request of "" reads the shared corpus alone. It reads the latest
// committed state of the index, or an earlier one: Generation names a
// generation, KnownAt the last generation committed at or before an
// instant ("what would we have cited then"; an instant before the first
// commit is ErrBeforeFirstCommit); at most one may be set.
type Request struct {
	Question   string
	AsOf       asof.Date
	Tenant     string
	Filters    map[string]string
	K          int       // 0: the engine's default
	Generation int64     // 0: the latest
	KnownAt    time.Time // zero: the latest
	// Period is the period asked about, in a canonical form of package
	// period ("2019", "FY2018", "2021-Q3", "2020-12-31"), or PeriodNone;
	// "" means the one the question names, if any (see period.go).
	Period string
	// MinGeneration, when set, waits until this engine has applied that
	// generation (a replica following a log: a client reads its own writes
	// on any replica), up to ctx's deadline; then ErrBehind.
	MinGeneration int64
}

// canonical validates r and returns the pack header it asks for.
func (r Request) canonical(defaultK int) (evidence.Header, error) {
	h := evidence.Header{Question: evidence.Normalize(r.Question), AsOf: r.AsOf, Tenant: r.Tenant, K: r.K}
	orDefault(&h.K, defaultK)
	switch {
	case h.Question == "":
		return h, fmt.Errorf("%w: question is empty", ErrBadRequest)
	case len(h.Question) > evidence.MaxQuestionLen:
		return h, fmt.Errorf("%w: question of %d bytes (at most %d)", ErrBadRequest, len(h.Question), evidence.MaxQuestionLen)
	case r.AsOf.IsZero():
		return h, fmt.Errorf("%w: as-of date is not set", ErrBadRequest)
	case r.AsOf.Check() != nil:
		return h, fmt.Errorf("%w: as-of date: %w", ErrBadRequest, r.AsOf.Check())
	case asof.CheckInstant(r.KnownAt) != nil:
		return h, fmt.Errorf("%w: known-at: %w", ErrBadRequest, asof.CheckInstant(r.KnownAt))
	case h.K < 1 || h.K > MaxK:
		return h, fmt.Errorf("%w: k %d not in [1, %d]", ErrBadRequest, h.K, MaxK)
	case r.Generation < 0:
		return h, fmt.Errorf("%w: generation %d < 0", ErrBadRequest, r.Generation)
	case r.MinGeneration < 0:
		return h, fmt.Errorf("%w: minimum generation %d < 0", ErrBadRequest, r.MinGeneration)
	case r.Generation > 0 && !r.KnownAt.IsZero():
		return h, fmt.Errorf("%w: set a generation or a known-at instant, not both", ErrBadRequest)
	}
	// Names obey the ingest rules: a request can name anything stored,
	// nothing else, and its pack always parses back.
	if err := evidence.CheckTenant(r.Tenant); err != nil {
		return h, fmt.Errorf("%w: tenant: %w", ErrBadRequest, err)
	}
	filters, err := evidence.FiltersOf(r.Filters)
	if err != nil {
		return h, fmt.Errorf("%w: filter: %w", ErrBadRequest, err)
	}
	h.Filters = filters
	if err := periodleg.FromRequestPeriod(r.Period, &h); err != nil {
		return h, fmt.Errorf("%w: period: %w", ErrBadRequest, err)
	}
	return h, nil
}

// Query answers r with an evidence pack. It reads one committed state from
// start to end; a commit that lands meanwhile never mixes into the pack.
func (e *Engine) Query(ctx context.Context, r Request) (*evidence.Pack, error) {
	h, err := r.canonical(e.opts.K)
	if err != nil {
		return nil, err
	}
	periodleg.Asked(&h, e.opts.QuestionPeriods)
	if err := e.awaitGeneration(ctx, r.MinGeneration); err != nil {
		return nil, err
	}
	for {
		p, err := e.queryOnce(ctx, h, state.Reads{Gen: r.Generation, KnownAt: r.KnownAt})
		if !errors.Is(err, errMoved) {
			return p, err
		}
	}
}

// errMoved says a commit landed between a query's snapshot and its lexical
// search; the query starts again on the new state. It never leaves the
// package.
var errMoved = errors.New("evpack: index moved during the query")

func (e *Engine) queryOnce(ctx context.Context, h evidence.Header, at state.Reads) (*evidence.Pack, error) {
	st, err := e.snapshot()
	if err != nil {
		return nil, err
	}
	sc, err := st.ScopeOf(&h, at)
	if err != nil {
		return nil, err
	}
	if e.opts.Cache == nil {
		return e.query(ctx, h, sc, e.opts.Reranker)
	}
	key, err := e.cacheKey(h, sc)
	if err != nil {
		return nil, err
	}
	if raw, ok := e.opts.Cache.Get(key); ok {
		if p, err := evidence.Parse(raw); err == nil && packcache.Answers(p, h, e.fingerprintFor(h, sc, e.opts.Reranker)) && pipeline.Holds(h, state.RankView{Scope: sc}, p) {
			return p, nil
		}
		// A store that hands back other bytes, another request's pack, one
		// this engine would not make now, or citations the store does not
		// hold as cited (edited, purged since), is not trusted: recompute.
	}
	p, err := e.query(ctx, h, sc, e.opts.Reranker)
	if err != nil {
		return nil, err
	}
	e.opts.Cache.Put(key, p.Bytes())
	return p, nil
}

// searchLexical runs the lexical leg against st with the scope's statistics
// (through whileCommitted: bleve may hold documents st does not know).
func (e *Engine) searchLexical(ctx context.Context, st *state.State, text string, elig retrieve.Eligibility, stats retrieve.BM25Stats) (retrieve.Result, error) {
	var res retrieve.Result
	err := e.whileCommitted(st, elig, func(elig retrieve.Eligibility, bounds retrieve.Bounds) (err error) {
		res, err = e.lex.Search(ctx, text, elig, bounds, e.opts.Pool, stats)
		return err
	})
	return res, audit.LexicalErr(err)
}

// readFailed returns the error of a query on st that could not read a
// stored chunk: ErrClosed after Close, errMoved when st is no longer the
// committed state (a purge may have rewritten its file: start again), else err.
func (e *Engine) readFailed(st *state.State, err error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.st != st:
		return errMoved
	}
	return err
}

// CacheKey returns the key under which the pack for r is cached: the
// identity of the ranking for this engine's options and index state.
func (e *Engine) CacheKey(r Request) (string, error) {
	h, err := r.canonical(e.opts.K)
	if err != nil {
		return "", err
	}
	periodleg.Asked(&h, e.opts.QuestionPeriods)
	st, err := e.snapshot()
	if err != nil {
		return "", err
	}
	sc, err := st.ScopeOf(&h, state.Reads{Gen: r.Generation, KnownAt: r.KnownAt})
	if err != nil {
		return "", err
	}
	return e.cacheKey(h, sc)
}

// query runs the pipeline with reranker rr (the engine's, or a ledger on
// replay).
func (e *Engine) query(ctx context.Context, h evidence.Header, sc state.Scope, rr rerank.Reranker) (*evidence.Pack, error) {
	st := sc.State
	defer st.Pin()() // the term numbers of its documents' rows point into its mapped checkpoint
	elig, text, steps := sc.Eligibility(h), h.Question, []string(nil)
	if !e.opts.KeepEntityNames {
		text, steps = sc.RankingText(h.Question, h.Filters)
	}
	var lists []fuse.List
	asked := periodleg.Of(h)
	guard := func(read func(retrieve.Eligibility, retrieve.Bounds) error) error {
		return e.whileCommitted(st, elig, read)
	}
	if h.Period != "" {
		steps = append(steps, periodleg.Step(h))
	}
	if strings.Contains(string(e.opts.Legs), "lexical") {
		terms, _ := e.lex.Terms(text)
		res, err := e.searchLexical(ctx, st, text, elig, sc.BM25(terms))
		if err != nil {
			return nil, err
		}
		// The line names what the request determines, never how many
		// chunks matched: the pruned search does not count them.
		if len(res.Hits) == 0 {
			steps = append(steps, fmt.Sprintf("lexical: 0 chunks eligible as of %s match", h.AsOf))
		} else {
			steps = append(steps, fmt.Sprintf("lexical: kept %d of the chunks eligible as of %s that match", len(res.Hits), h.AsOf))
		}
		ids := make([]string, len(res.Hits))
		for i, hit := range res.Hits {
			ids[i] = hit.ID
		}
		lists = append(lists, fuse.List{Name: "lexical", Weight: e.opts.LexicalWeight, IDs: ids})
		if !asked.IsZero() && e.opts.PeriodList > 0 {
			l, step, err := periodleg.List(ctx, e.lex, guard, text, asked, sc.BM25(terms), e.periodSettings())
			if err != nil {
				return nil, err
			}
			steps, lists = append(steps, step), append(lists, l)
		}
	}
	if strings.Contains(string(e.opts.Legs), "dense") {
		hits, step, err := e.views.Search(ctx, denseleg.Request{Scope: sc, Text: text, Elig: elig, AsOf: h.AsOf}, e.denseLeg())
		if err != nil {
			return nil, err
		}
		steps = append(steps, step)
		ids := make([]string, len(hits))
		for i, hit := range hits {
			ids[i] = hit.ID
		}
		lists = append(lists, fuse.List{Name: "dense", Weight: e.opts.DenseWeight, IDs: ids})
	}
	fusion := e.fusionSetting()
	if len(lists) > 0 && lists[len(lists)-1].Name == "period" {
		fusion += " period=" + strconv.FormatFloat(e.opts.PeriodWeight, 'g', -1, 64)
	}
	in := pipeline.Input{Header: h, Text: text, Lists: lists, Steps: steps, RRFK: e.opts.RRFK, Fusion: fusion,
		Pool: e.opts.Pool, Reranker: rr, Fingerprint: e.fingerprintFor(h, sc, rr)}
	if !asked.IsZero() && e.opts.PeriodBoost > 0 {
		in.Boost = func(fused []fuse.Item) (string, error) {
			return periodleg.Boost(ctx, e.lex, guard, fused, asked, e.periodSettings())
		}
	}
	p, err := pipeline.Rank(ctx, in, state.RankView{Scope: sc})
	if re := (*pipeline.ReadError)(nil); errors.As(err, &re) {
		return nil, e.readFailed(st, re.Err)
	}
	return p, err
}

// denseLeg returns the dense leg's settings.
func (e *Engine) denseLeg() denseleg.Settings {
	return denseleg.Settings{Embedder: e.emb, Build: e.graph, Pool: e.opts.Pool, HNSW: e.opts.DenseIndex == "hnsw", Graph: e.opts.Graph}
}

// fingerprint lists every setting that shaped a pack from scope sc with
// reranker rr.
func (e *Engine) fingerprint(sc state.Scope, rr rerank.Reranker) evidence.Fingerprint {
	o := e.opts
	return pipeline.Fingerprint(pipeline.Settings{Corpus: sc.Corpus, Legs: string(o.Legs), Analyzer: e.lex.Analyzer(), RRFK: o.RRFK, Pool: o.Pool,
		LexicalWeight: o.LexicalWeight, DenseWeight: o.DenseWeight, KeepEntityNames: o.KeepEntityNames,
		Dense: pipeline.DenseSetting(string(o.Legs), e.emb, o.DenseIndex == "hnsw", o.Graph.String())}, rr)
}

func (e *Engine) fusionSetting() string {
	return pipeline.FusionSetting(e.opts.RRFK, string(e.opts.Legs), e.opts.LexicalWeight, e.opts.DenseWeight)
}
