package evpack

import (
	"fmt"
	"strconv"
	"time"

	"github.com/evpack/evpack/internal/storage"

	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// Defaults. Pool and K follow docs/design.md; the RRF constant is the paper's.
const (
	DefaultK    = 10
	DefaultPool = 50
	MaxK        = 100
	MaxPool     = 1000
	// DefaultPeriodList and DefaultPeriodBoost won the FinanceBench
	// ablation ledger (docs/benchmarks.md, "Questions about one company's
	// year").
	DefaultPeriodList   = 200
	DefaultPeriodWeight = 2
	DefaultPeriodBoost  = 100
	MaxPeriodList       = 1000
)

// Lock waits: Options.LockWait's zero value waits DefaultLockWait; NoLockWait
// (any negative duration) fails at once.
const (
	DefaultLockWait               = storage.DefaultLockWait
	NoLockWait      time.Duration = -1
)

// Legs names the recall legs a query runs. The command line passes the
// same strings.
type Legs string

// The recall legs.
const (
	LegsLexical Legs = "lexical"       // BM25 alone (the default without an embedder)
	LegsDense   Legs = "dense"         // the dense leg alone
	LegsHybrid  Legs = "lexical,dense" // both, fused (the default with an embedder)
)

// DenseIndex names how the dense leg searches.
type DenseIndex string

// The dense indexes.
const (
	DenseExact DenseIndex = "exact" // every eligible vector scanned: exact and replayable (the default)
	DenseHNSW  DenseIndex = "hnsw"  // evpack's HNSW graph: approximate, faster on large corpora
)

// Analyzer names the lexical analyzer an index is made with.
type Analyzer string

// The analyzers.
const (
	AnalyzerEnglish  Analyzer = "en"       // lower case, stop words, Porter stems (the default)
	AnalyzerStandard Analyzer = "standard" // lower case, stop words
)

// Options configure an engine. The zero value is the default configuration;
// Open validates it and fills the defaults. Options are plain values, printed
// with String. == compares the plug-ins (Reranker, Embedder, Cache) by
// identity: two Options holding separately made rerankers of one kind are
// unequal under ==; compare their String forms, which name each plug-in by
// its identity, to ask whether two configurations rank alike.
type Options struct {
	// K is the default number of citations per pack (Request.K overrides).
	K int
	// Pool is how many fused candidates the reranker sees.
	Pool int
	// RRFK is the Reciprocal Rank Fusion constant, at most fuse.MaxK.
	RRFK int
	// LexicalWeight weighs the lexical leg in fusion (0 means 1; finite).
	LexicalWeight float64
	// Reranker orders the pool; nil means the learned reranker with the
	// model shipped with the module (rerank.DefaultModel, trained on the
	// ObliQA dev split; it won the dev cross-validation against the
	// arithmetic reranker, see docs/benchmarks.md). Should that model fail
	// to load, the arithmetic reranker ranks instead, and every pack's
	// trace and fingerprint say so (rerank.Fallback). The arithmetic
	// reranker is one option away: Reranker: rerank.DefaultArithmetic().
	// Use rerank.None{} to keep the fused order.
	Reranker rerank.Reranker
	// Embedder, when set, adds the dense leg. It belongs to the index (set
	// it when opening; a view cannot change it).
	Embedder retrieve.Embedder
	// Legs picks the recall legs: "lexical", "dense" or "lexical,dense";
	// "" means every configured leg.
	Legs Legs
	// DenseWeight weighs the dense leg in fusion (0 means 1; finite).
	DenseWeight float64
	// DenseIndex picks how the dense leg searches: "exact" (the default:
	// every eligible vector scanned, exact and replayable) or "hnsw" (an HNSW
	// graph, built when the index is opened and at every commit; faster on
	// large corpora, approximate, and marked so in the pack fingerprint). The
	// graph is deterministic, so its packs replay too.
	DenseIndex DenseIndex
	// Graph configures the HNSW graph when DenseIndex is "hnsw" (zero fields
	// take retrieve's defaults). Its build settings (M, EfConstruction,
	// Seed) belong to the index; a view may change EfSearch and ExactFactor.
	Graph retrieve.GraphOptions
	// KeepEntityNames keeps an entity's names in the ranking text when a
	// request filters on the entity its chunks declare
	// (connectors.MetaEntityKey; by default the names are removed).
	KeepEntityNames bool
	// Cache, when set, stores packs by the ranking's identity (see
	// Engine.CacheKey); a hit returns the identical bytes. It is not part of
	// the key.
	Cache Cache `cachekey:"-"`
	// LockWait bounds how long Open waits for another holder of the index
	// (another process, or another Open in this one) before failing with
	// ErrLocked: 0 means DefaultLockWait, a negative value means do not wait
	// (NoLockWait). The CLI's --lock-wait reads the same way. It also
	// bounds how long a request or a write waits for another holder of a
	// lexical partition's files (a tool that opened them directly): the
	// call then fails with ErrLocked, and the next one tries again.
	LockWait time.Duration `cachekey:"-"`
	// PostingsCache bounds, in bytes, the decoded postings the lexical search
	// keeps for the terms the engine's queries ask: 0 means
	// retrieve.DefaultPostingsCache (64 MiB), a negative value none. It
	// changes no pack, only how fast a term asked again is read.
	PostingsCache int64 `cachekey:"-"`
	// Analyzer is the lexical analyzer used when an index is created
	// ("en" or "standard"); an existing index keeps its own.
	Analyzer Analyzer
	// QuestionPeriods reads the period a question names ("FY2018", "in
	// 2019", "Q3 2021", "as of December 31, 2020": package period) and ranks
	// for it: the year list and the year boost below. Off by default: on the
	// ObliQA dev split one question in 2,788 names a year ("in 2015"), and
	// reading it moves that question's pool, which the pinned digest of the
	// learned reranker's rows records (docs/benchmarks.md). A request's
	// explicit Period is read whatever this says.
	QuestionPeriods bool
	// PeriodList is how deep the year list is read: the eligible chunks
	// that name the asked-about year in their text or metadata, ranked by
	// BM25 for the question and fused as one more list (see period.go); it
	// runs with the lexical leg. 0 means DefaultPeriodList, -1 no list.
	PeriodList int
	// PeriodWeight weighs the year list in fusion (0 means
	// DefaultPeriodWeight; finite).
	PeriodWeight float64
	// PeriodBoost is the boost in fusion of a fused chunk whose metadata
	// declares the asked-about year, in percent of a first place in one
	// list (fuse.Boost): 0 means DefaultPeriodBoost, -1 none, at most 100.
	PeriodBoost int
	// PartitionDays is the span in days of the lexical index's time partitions when an index
	// is created: 0 means retrieve.DefaultPartitionDays, -1 one bleve index for everything (the
	// layout of indexes made before partitions). An existing index keeps its own. Partitions
	// change no ranking, only what a request reads: a tenant's chunks that came into force
	// after the as-of day, or had all ended by it, are left unread.
	PartitionDays int64 `cachekey:"-"`
	// WarmTenants opens a tenant's other lexical partitions on a goroutine after its first
	// request, for a service that does not call Engine.Preload (which opens all). No pack moves.
	WarmTenants bool `cachekey:"-"`
}

// lexicalOptions are the options of the lexical index o asks for.
func (o Options) lexicalOptions() retrieve.LexicalOptions {
	return retrieve.LexicalOptions{Analyzer: string(o.Analyzer), PartitionDays: max(o.PartitionDays, 0), Unpartitioned: o.PartitionDays == -1,
		LockWait: o.LockWait, PostingsCache: o.PostingsCache, Warm: o.WarmTenants}
}

func (o Options) withDefaults() (Options, error) {
	orDefault(&o.K, DefaultK)
	orDefault(&o.Pool, DefaultPool)
	orDefault(&o.RRFK, fuse.DefaultK)
	orDefault(&o.LexicalWeight, 1)
	orDefault(&o.DenseWeight, 1)
	orDefault(&o.PeriodWeight, DefaultPeriodWeight)
	orDefault(&o.PeriodList, DefaultPeriodList)
	orDefault(&o.PeriodBoost, DefaultPeriodBoost)
	switch o.Legs {
	case "":
		o.Legs = "lexical"
		if o.Embedder != nil {
			o.Legs = "lexical,dense"
		}
	case "lexical", "dense", "lexical,dense":
		if o.Legs != "lexical" && o.Embedder == nil {
			return o, fmt.Errorf("%w: legs %q need an Embedder", ErrBadOptions, o.Legs)
		}
	default:
		return o, fmt.Errorf("%w: legs %q (want lexical, dense or lexical,dense)", ErrBadOptions, o.Legs)
	}
	switch o.DenseIndex {
	case "":
		o.DenseIndex = "exact"
		if o.Graph != (retrieve.GraphOptions{}) {
			return o, fmt.Errorf("%w: graph options %s need DenseIndex \"hnsw\"", ErrBadOptions, o.Graph)
		}
	case "exact":
	case "hnsw":
		if o.Embedder == nil {
			return o, fmt.Errorf("%w: DenseIndex \"hnsw\" needs an Embedder", ErrBadOptions)
		}
		g, err := o.Graph.WithDefaults()
		if err != nil {
			return o, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		o.Graph = g
	default:
		return o, fmt.Errorf("%w: DenseIndex %q (want exact or hnsw)", ErrBadOptions, o.DenseIndex)
	}
	if o.Reranker == nil {
		// The load error needs no return: the Fallback names its class in
		// every pack's trace and fingerprint, and the engine still works.
		r, _ := rerank.LearnedOrFallback("")
		if r == nil {
			return o, fmt.Errorf("%w: no default reranker", ErrBadOptions)
		}
		o.Reranker = r
	}
	switch {
	case o.K < 1 || o.K > MaxK:
		return o, fmt.Errorf("%w: K %d not in [1, %d]", ErrBadOptions, o.K, MaxK)
	case o.Pool < 1 || o.Pool > MaxPool:
		return o, fmt.Errorf("%w: Pool %d not in [1, %d]", ErrBadOptions, o.Pool, MaxPool)
	case o.RRFK < 1 || o.RRFK > fuse.MaxK:
		return o, fmt.Errorf("%w: RRFK %d not in [1, %d]", ErrBadOptions, o.RRFK, fuse.MaxK)
	case rerank.CapOf(o.Reranker) > 0 && o.Pool > rerank.CapOf(o.Reranker):
		return o, fmt.Errorf("%w: pool %d: reranker %s takes at most %d candidates", ErrBadOptions, o.Pool, o.Reranker.Name(), rerank.CapOf(o.Reranker))
	case o.PartitionDays < -1:
		return o, fmt.Errorf("%w: PartitionDays %d (want -1, 0 or a number of days)", ErrBadOptions, o.PartitionDays)
	case !fuse.ValidWeight(o.LexicalWeight) || !fuse.ValidWeight(o.DenseWeight) || !fuse.ValidWeight(o.PeriodWeight):
		return o, fmt.Errorf("%w: weights must be finite and >= 0 (lexical %v, dense %v, period %v)", ErrBadOptions, o.LexicalWeight, o.DenseWeight, o.PeriodWeight)
	case o.PeriodList < -1 || o.PeriodList > MaxPeriodList:
		return o, fmt.Errorf("%w: PeriodList %d not in [-1, %d]", ErrBadOptions, o.PeriodList, MaxPeriodList)
	case o.PeriodBoost < -1 || o.PeriodBoost > fuse.MaxBoost:
		return o, fmt.Errorf("%w: PeriodBoost %d not in [-1, %d]", ErrBadOptions, o.PeriodBoost, fuse.MaxBoost)
	}
	return o, nil
}

// orDefault sets *v to d where it is zero: an option left unset.
func orDefault[T comparable](v *T, d T) {
	if *v == *new(T) {
		*v = d
	}
}

// String prints the options as the fingerprint would record them.
func (o Options) String() string {
	name := "learned (default)"
	if o.Reranker != nil {
		name = o.Reranker.Name()
	}
	emb := "none"
	if o.Embedder != nil {
		emb = o.Embedder.Identity()
	}
	dense := string(o.DenseIndex)
	if o.DenseIndex == DenseHNSW {
		dense = o.Graph.String()
	}
	return fmt.Sprintf("k=%d pool=%d rrf_k=%d legs=%q lexical_weight=%s dense_weight=%s dense_index=%q reranker=%q embedder=%q analyzer=%q keep_entity_names=%t question_periods=%t period_list=%d period_weight=%s period_boost=%d",
		o.K, o.Pool, o.RRFK, o.Legs, strconv.FormatFloat(o.LexicalWeight, 'g', -1, 64), strconv.FormatFloat(o.DenseWeight, 'g', -1, 64),
		dense, name, emb, o.Analyzer, o.KeepEntityNames, o.QuestionPeriods, o.PeriodList, strconv.FormatFloat(o.PeriodWeight, 'g', -1, 64), o.PeriodBoost)
}
