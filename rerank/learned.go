package rerank

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/evpack/evpack/evidence"
)

// Learned reranks with a Model over the FeatureSet rows of the pool: gradient
// boosted trees with integer thresholds and leaves, so it is bit-stable. Its
// Name carries the model file's hash, so a pack's fingerprint and the cache
// key change with the model. It is safe for concurrent use.
type Learned struct {
	m *Model
	// scratch holds *featureScratch: what feature extraction works in,
	// kept between requests (see featureScratch).
	scratch sync.Pool
}

// NewLearned returns the reranker for m.
func NewLearned(m *Model) (*Learned, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: no model", ErrModel)
	}
	return &Learned{m: m}, nil
}

// Model returns the reranker's model.
func (l *Learned) Model() *Model { return l.m }

// Name implements Reranker.
func (l *Learned) Name() string { return "learned/1 model=" + l.m.Sum() + " features=" + FeatureSet }

// BitStable implements BitStable: integers only.
func (*Learned) BitStable() bool { return true }

// TextFree implements TextFree: features over Terms and documents.
func (*Learned) TextFree() bool { return true }

// DocumentTerms implements DocumentTerms: FeatureRows analyses a candidate
// with numbers by its numbers.
func (*Learned) DocumentTerms() bool { return true }

// Rerank implements Reranker. stats should implement Documents (the engine's
// does); without it the document features are zero.
func (l *Learned) Rerank(ctx context.Context, question string, cands []Candidate, stats Stats) ([]evidence.Scored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sc, _ := l.scratch.Get().(*featureScratch)
	if sc == nil {
		sc = &featureScratch{}
	}
	rows := featureRows(question, cands, stats, sc)
	scores := make([]int64, len(rows))
	l.m.ScoreRows(rows, scores)
	l.scratch.Put(sc) // after ScoreRows: rows are sc's
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: scores[i]}
	}
	sortScored(out)
	return out, nil
}

// defaultModel is the model trained on all of the ObliQA dev split (see
// docs/benchmarks.md for the command and its cross-validated figures).
//
//go:embed models/obliqa-dev.evm
var defaultModel []byte

// DefaultModelFile names the embedded model in errors and traces.
const DefaultModelFile = "rerank/models/obliqa-dev.evm"

var loadDefault = sync.OnceValues(func() (*Model, error) { return DecodeModel(defaultModel, DefaultModelFile) })

// DefaultModel returns the model shipped with the module, trained on all of
// the ObliQA dev split.
func DefaultModel() (*Model, error) { return loadDefault() }

// Fallback is the Arithmetic reranker standing in for a learned model that
// could not be loaded. Its Name says so (and why, by error class), so every
// pack it ranks and its cache key show the fallback: never silent.
type Fallback struct {
	*Arithmetic
	why string
}

// Name implements Reranker.
func (f *Fallback) Name() string {
	return f.Arithmetic.Name() + " fallback-from=learned (" + f.why + ")"
}

// Why returns the error class that caused the fallback.
func (f *Fallback) Why() string { return f.why }

// LearnedOrFallback loads the model at path ("" for DefaultModel) and returns
// its Learned reranker. When the model cannot be loaded it returns the
// Arithmetic reranker with DefaultWeights as a Fallback, together with the
// load error (for the caller's log); the reranker is usable either way.
func LearnedOrFallback(path string) (Reranker, error) {
	var m *Model
	var err error
	if path == "" {
		m, err = DefaultModel()
	} else {
		m, err = LoadModel(path)
	}
	if err == nil {
		return NewLearned(m)
	}
	a, aerr := NewArithmetic(DefaultWeights)
	if aerr != nil {
		return nil, errors.Join(err, aerr)
	}
	why := ErrModel.Error()
	if errors.Is(err, ErrModelVersion) {
		why = ErrModelVersion.Error()
	}
	return &Fallback{Arithmetic: a, why: why}, err
}

// Smoothed orders the pool by neighbour-smoothed BM25 alone: evpack's
// integer BM25 of the chunk plus 0.3 × the mean BM25 of its neighbours in its
// document (the "smoothed_rel" feature). It measures first-stage smoothing as
// its own layer of the ablation ledger, over the fused pool.
type Smoothed struct{}

// Name implements Reranker.
func (Smoothed) Name() string { return "bm25-smoothed/1 neighbours=0.3 features=" + FeatureSet }

// BitStable implements BitStable: integers only.
func (Smoothed) BitStable() bool { return true }

// TextFree implements TextFree.
func (Smoothed) TextFree() bool { return true }

// DocumentTerms implements DocumentTerms: FeatureRows.
func (Smoothed) DocumentTerms() bool { return true }

// Rerank implements Reranker.
func (Smoothed) Rerank(ctx context.Context, question string, cands []Candidate, stats Stats) ([]evidence.Scored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows := FeatureRows(question, cands, stats)
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: rows[i][12]}
	}
	sortScored(out)
	return out, nil
}

// IntBM25 orders the pool by evpack's integer BM25 over Terms alone (the
// "bm25" feature): the base that Smoothed adds neighbour smoothing to, so the
// ablation ledger can tell the smoothing from the change of BM25.
type IntBM25 struct{}

// Name implements Reranker.
func (IntBM25) Name() string { return "bm25-int/1 features=" + FeatureSet }

// BitStable implements BitStable: integers only.
func (IntBM25) BitStable() bool { return true }

// TextFree implements TextFree.
func (IntBM25) TextFree() bool { return true }

// DocumentTerms implements DocumentTerms: FeatureRows.
func (IntBM25) DocumentTerms() bool { return true }

// Rerank implements Reranker.
func (IntBM25) Rerank(ctx context.Context, question string, cands []Candidate, stats Stats) ([]evidence.Scored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows := FeatureRows(question, cands, stats)
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		out[i] = evidence.Scored{ChunkID: c.ID, Score: rows[i][1]}
	}
	sortScored(out)
	return out, nil
}
