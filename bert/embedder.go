package bert

import (
	"context"
	"fmt"
	"math"

	"github.com/evpack/evpack/retrieve"
)

// EmbedderOptions configure a sentence embedder.
type EmbedderOptions struct {
	Options
	// Pooling is "mean" (over the attention mask; sentence-transformers) or
	// "cls" (bge). Default "mean".
	Pooling string
	// QueryPrefix and PassagePrefix are prepended before tokenization, for
	// models trained with them (e5: "query: " and "passage: ").
	QueryPrefix, PassagePrefix string
}

// Embedder is a BERT-family sentence embedder for the dense leg. It
// implements retrieve.Embedder. Its vectors come from floating-point model
// arithmetic that may differ in the last bits between CPUs; they are stored
// as int8 unit vectors, which absorbs most such differences but cannot
// promise to absorb all.
type Embedder struct {
	m          *model
	pooling    string
	qpre, ppre []int32
	qtext      string
	ptext      string
	dims       int
}

// NewEmbedder loads the model; its output must be last_hidden_state.
func NewEmbedder(o EmbedderOptions) (*Embedder, error) {
	if o.Pooling == "" {
		o.Pooling = "mean"
	}
	if o.Pooling != "mean" && o.Pooling != "cls" {
		return nil, fmt.Errorf("%w: pooling %q (want mean or cls)", ErrModel, o.Pooling)
	}
	m, err := load(o.Options, "last_hidden_state")
	if err != nil {
		return nil, err
	}
	e := &Embedder{m: m, pooling: o.Pooling, qtext: o.QueryPrefix, ptext: o.PassagePrefix,
		qpre: m.tok.Tokens(o.QueryPrefix), ppre: m.tok.Tokens(o.PassagePrefix)}
	ids, mask := m.tok.Encode(nil, 0)
	_, shape, err := m.run([][]int32{ids}, [][]int32{make([]int32, len(ids))}, [][]int32{mask})
	if err != nil {
		m.Close()
		return nil, err
	}
	if len(shape) != 3 || shape[2] <= 0 {
		m.Close()
		return nil, fmt.Errorf("%w: last_hidden_state has shape %v, want [batch, seq, hidden]", ErrModel, shape)
	}
	e.dims = int(shape[2])
	return e, nil
}

// Close releases the model.
func (e *Embedder) Close() error { return e.m.Close() }

// Identity implements retrieve.Embedder.
func (e *Embedder) Identity() string {
	return fmt.Sprintf("onnx bert pooling=%s dims=%d max_len=%d query_prefix=%q passage_prefix=%q %s",
		e.pooling, e.dims, e.m.maxLen, e.qtext, e.ptext, e.m.identity)
}

// Dims implements retrieve.Embedder.
func (e *Embedder) Dims() int { return e.dims }

// CorpusFree implements retrieve.CorpusFree: a model needs no corpus counts.
func (e *Embedder) CorpusFree() bool { return true }

// Analyze implements retrieve.Embedder: the text's WordPiece IDs.
func (e *Embedder) Analyze(text string) []int32 { return e.m.tok.Tokens(text) }

// Embed implements retrieve.Embedder; corpus counts are not used.
func (e *Embedder) Embed(ctx context.Context, features [][]int32, _ *retrieve.Counts, query bool) ([][]int8, error) {
	floats, err := e.EmbedFloat(ctx, features, query)
	if err != nil {
		return nil, err
	}
	out := make([][]int8, len(floats))
	for i, v := range floats {
		out[i] = retrieve.Quantize(v)
	}
	return out, nil
}

// EmbedFloat returns the pooled, L2-normalized float vectors before int8
// quantization.
func (e *Embedder) EmbedFloat(ctx context.Context, features [][]int32, query bool) ([][]float32, error) {
	pre := e.ppre
	if query {
		pre = e.qpre
	}
	out := make([][]float32, 0, len(features))
	for start := 0; start < len(features); start += e.m.batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+e.m.batch, len(features))
		var ids, types, masks [][]int32
		for _, f := range features[start:end] {
			id, mask := e.m.tok.Encode(append(append([]int32(nil), pre...), f...), e.m.maxLen)
			ids, masks, types = append(ids, id), append(masks, mask), append(types, make([]int32, len(id)))
		}
		vals, shape, err := e.m.run(ids, types, masks)
		if err != nil {
			return nil, err
		}
		if len(shape) != 3 || shape[2] != int64(e.dims) { // batch and width: model.run
			return nil, fmt.Errorf("%w: last_hidden_state has shape %v, want [%d, width, %d]", ErrModel, shape, len(ids), e.dims)
		}
		out = append(out, pool(vals, shape, masks, e.pooling)...)
	}
	return out, nil
}

// pool reduces [batch, seq, hidden] to one L2-normalized vector per row.
func pool(vals []float32, shape []int64, masks [][]int32, how string) [][]float32 {
	b, s, h := int(shape[0]), int(shape[1]), int(shape[2])
	out := make([][]float32, b)
	for i := 0; i < b; i++ {
		v := make([]float64, h)
		n := 0
		for j := 0; j < s; j++ {
			if how == "cls" && j > 0 || j >= len(masks[i]) || masks[i][j] == 0 {
				continue
			}
			n++
			for k := 0; k < h; k++ {
				v[k] += float64(vals[(i*s+j)*h+k])
			}
		}
		var n2 float64
		for k := range v {
			v[k] /= float64(max(n, 1))
			n2 += v[k] * v[k]
		}
		out[i] = make([]float32, h)
		if n2 == 0 {
			continue
		}
		norm := math.Sqrt(n2)
		for k := range v {
			out[i][k] = float32(v[k] / norm)
		}
	}
	return out
}

var _ retrieve.Embedder = (*Embedder)(nil)
