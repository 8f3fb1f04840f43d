package bert

import (
	"context"
	"fmt"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

// CrossEncoder reranks with a BERT-family cross-encoder (output "logits",
// [batch, 1]): each (question, passage) pair is scored jointly. Pairs are
// batched; at most rerank.MaxExternalBatch candidates are scored per query.
// It is not bit-stable, so packs it orders carry a score ledger and replay
// without it. It implements rerank.Reranker.
type CrossEncoder struct {
	m    *model
	name string
}

// NewCrossEncoder loads the model; name identifies it in fingerprints (the
// model file's hash is added).
func NewCrossEncoder(name string, o Options) (*CrossEncoder, error) {
	m, err := load(o, "logits")
	if err != nil {
		return nil, err
	}
	// One pair through the model, as NewEmbedder does: a model without a
	// "logits" output, or with logits of another shape, fails here rather
	// than at every query.
	c := &CrossEncoder{m: m, name: name}
	if _, err := c.Scores(context.Background(), "", []string{""}); err != nil {
		m.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the model.
func (c *CrossEncoder) Close() error { return c.m.Close() }

// Name implements rerank.Reranker.
func (c *CrossEncoder) Name() string {
	return fmt.Sprintf("cross-encoder/%s max_len=%d %s", c.name, c.m.maxLen, c.m.identity)
}

// Scores returns the raw logits of question against each passage.
func (c *CrossEncoder) Scores(ctx context.Context, question string, passages []string) ([]float64, error) {
	q := c.m.tok.Tokens(question)
	out := make([]float64, 0, len(passages))
	for start := 0; start < len(passages); start += c.m.batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+c.m.batch, len(passages))
		var ids, types, masks [][]int32
		for _, p := range passages[start:end] {
			id, ty, mask := c.m.tok.EncodePair(q, c.m.tok.Tokens(p), c.m.maxLen)
			ids, types, masks = append(ids, id), append(types, ty), append(masks, mask)
		}
		vals, shape, err := c.m.run(ids, types, masks)
		if err != nil {
			return nil, err
		}
		if len(shape) != 2 || shape[1] < 1 { // the batch: model.run
			return nil, fmt.Errorf("%w: logits have shape %v, want [%d, 1]", ErrModel, shape, end-start)
		}
		for i := 0; i < end-start; i++ {
			out = append(out, float64(vals[i*int(shape[1])]))
		}
	}
	return out, nil
}

// MaxCandidates implements rerank.Capped.
func (c *CrossEncoder) MaxCandidates() int { return rerank.MaxExternalBatch }

// Rerank implements rerank.Reranker.
func (c *CrossEncoder) Rerank(ctx context.Context, question string, cands []rerank.Candidate, _ rerank.Stats) ([]evidence.Scored, error) {
	ext, err := rerank.NewExternal(c.Name(), func(ctx context.Context, q string, texts []string) ([]float64, error) {
		return c.Scores(ctx, q, texts)
	})
	if err != nil {
		return nil, err
	}
	return ext.Rerank(ctx, question, cands, nil)
}

var _ rerank.Reranker = (*CrossEncoder)(nil)
