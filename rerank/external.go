package rerank

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/evpack/evpack/evidence"
)

// MaxExternalBatch is the most candidates an External scorer is sent in one
// call; the engine's pool is capped to it when an External reranker is used.
const MaxExternalBatch = 50

// ErrScorer wraps a failure of an external scorer.
var ErrScorer = errors.New("rerank: external scorer")

// BitStable is implemented by rerankers that can promise identical scores on
// every machine. A reranker that does not implement it (any model) is not
// bit-stable: its scores are recorded in the pack's ledger, so that the pack
// replays without it.
type BitStable interface {
	BitStable() bool
}

// BitStable implements BitStable: integers only.
func (*Arithmetic) BitStable() bool { return true }

// BitStable implements BitStable: the fused order.
func (None) BitStable() bool { return true }

// TextFree is implemented by rerankers that never read a candidate's Text
// when its Terms are set (the engine sets them for every stored chunk, and
// a candidate without them has no text to read): the engine then need not
// read the pool's texts from storage. A reranker that does not implement
// it is handed every candidate's Text.
type TextFree interface {
	TextFree() bool
}

// TextFree implements TextFree: Terms.
func (*Arithmetic) TextFree() bool { return true }

// TextFree implements TextFree: ranks alone.
func (None) TextFree() bool { return true }

// TextFree implements TextFree: recorded scores.
func (*Ledger) TextFree() bool { return true }

// DocumentTerms is implemented by rerankers that analyse a candidate
// handed with its document's term numbers (Candidate.Doc with Nums, the
// Stats implementing TermNumbers) from those numbers alone, reading
// neither its Terms nor its Text: the engine then does not make the
// candidate's Terms, a slice of strings per candidate per query.
type DocumentTerms interface {
	DocumentTerms() bool
}

// Capped is implemented by rerankers that accept at most MaxCandidates()
// candidates per query; the engine refuses a larger pool when built.
type Capped interface {
	MaxCandidates() int
}

// MaxCandidates implements Capped.
func (e *External) MaxCandidates() int { return MaxExternalBatch }

// CapOf returns r's candidate cap (Capped), or 0 for none.
func CapOf(r Reranker) int {
	if c, ok := r.(Capped); ok {
		return c.MaxCandidates()
	}
	return 0
}

// ScoreFunc scores texts against a question in one call: an LLM, a hosted
// reranker, a cross-encoder in another process. Higher is better.
type ScoreFunc func(ctx context.Context, question string, texts []string) ([]float64, error)

// External is a reranker whose scores come from outside evpack, in one
// batched call per query (never one call per pair). It is off unless a
// service configures it, and never bit-stable.
type External struct {
	name  string
	score ScoreFunc
}

// NewExternal returns an External reranker; name must identify the model and
// its settings (it goes into the fingerprint and the cache key).
func NewExternal(name string, score ScoreFunc) (*External, error) {
	if name == "" || score == nil {
		return nil, fmt.Errorf("%w: a name and a score function are required", ErrScorer)
	}
	return &External{name: name, score: score}, nil
}

// Name implements Reranker.
func (e *External) Name() string { return "external/" + e.name }

// Rerank implements Reranker.
func (e *External) Rerank(ctx context.Context, question string, cands []Candidate, _ Stats) ([]evidence.Scored, error) {
	if len(cands) > MaxExternalBatch {
		return nil, fmt.Errorf("%w: %d candidates, at most %d per call", ErrScorer, len(cands), MaxExternalBatch)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	texts := make([]string, len(cands))
	for i, c := range cands {
		texts[i] = c.Text
	}
	scores, err := e.score(ctx, question, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrScorer, e.name, err)
	}
	if len(scores) != len(cands) {
		return nil, fmt.Errorf("%w: %s returned %d scores for %d candidates", ErrScorer, e.name, len(scores), len(cands))
	}
	out := make([]evidence.Scored, len(cands))
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > 1e9 {
			return nil, fmt.Errorf("%w: %s: score %v for %s", ErrScorer, e.name, s, cands[i].ID)
		}
		out[i] = evidence.Scored{ChunkID: cands[i].ID, Score: int64(math.Round(s * evidence.ScoreScale))}
	}
	sortScored(out)
	return out, nil
}

// Ledger replays recorded scores: the reranker Replay uses instead of the
// model. Its Name is the recorded reranker's, so the replayed fingerprint
// is the original's.
type Ledger struct {
	name   string
	scores map[string]int64
}

// ErrLedger reports a pool that the ledger does not cover: the index no
// longer returns the candidates the pack was ranked from.
var ErrLedger = errors.New("rerank: ledger does not cover the pool")

// NewLedger returns a reranker that scores from recorded scores.
func NewLedger(name string, scores []evidence.Scored) *Ledger {
	m := make(map[string]int64, len(scores))
	for _, s := range scores {
		m[s.ChunkID] = s.Score
	}
	return &Ledger{name: name, scores: m}
}

// Name implements Reranker.
func (l *Ledger) Name() string { return l.name }

// Rerank implements Reranker.
func (l *Ledger) Rerank(ctx context.Context, _ string, cands []Candidate, _ Stats) ([]evidence.Scored, error) {
	if len(cands) != len(l.scores) {
		return nil, fmt.Errorf("%w: pool of %d, ledger of %d", ErrLedger, len(cands), len(l.scores))
	}
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		s, ok := l.scores[c.ID]
		if !ok {
			return nil, fmt.Errorf("%w: %s was not scored", ErrLedger, c.ID)
		}
		out[i] = evidence.Scored{ChunkID: c.ID, Score: s}
	}
	sortScored(out)
	return out, ctx.Err()
}

// ErrRetired is what a Retired reranker's Rerank returns.
var ErrRetired = errors.New("rerank: the model is retired")

// Retired stands for a model that can no longer run (its file deleted, its
// service gone) whose identity name (its Name when it ran) a verifier still
// trusts. An engine configured with it verifies and replays that model's
// packs from their ledgers, as Verify requires the engine's reranker to be
// the pack's, and answers no new query: Rerank returns ErrRetired.
func Retired(name string) Reranker { return retired(name) }

type retired string

func (r retired) Name() string { return string(r) }

func (r retired) Rerank(context.Context, string, []Candidate, Stats) ([]evidence.Scored, error) {
	return nil, fmt.Errorf("%w: %s", ErrRetired, string(r))
}
