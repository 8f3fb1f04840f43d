package bert

import (
	"context"
	"errors"
	"testing"

	"github.com/evpack/evpack/retrieve/wordpiece"
)

// lyingSession is a model whose output has whatever shape it says (onnxruntime
// hands back any shape a graph computes: a Constant node's, say), with data
// to match that shape.
type lyingSession struct{ shape []int64 }

func (l lyingSession) run([2]int64, [3][]int64) ([]float32, []int64, error) {
	n := int64(1)
	for _, d := range l.shape {
		n *= d
	}
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%7) + 1
	}
	return vals, l.shape, nil
}
func (lyingSession) destroy() error { return nil }

func lyingModel(t *testing.T, shape ...int64) *model {
	tok, err := wordpiece.Load(td("vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return &model{tok: tok, session: lyingSession{shape}, maxLen: 32, batch: 4}
}

func noPanic(t *testing.T, f func() error) error {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panicked: %v", r)
			}
		}()
		err = f()
	}()
	return err
}

// A cross-encoder whose logits are [batch, 0] (no column to read) is
// refused with ErrModel, not indexed into.
func TestCrossEncoderEmptyLogits(t *testing.T) {
	c := &CrossEncoder{m: lyingModel(t, 2, 0), name: "liar"}
	err := noPanic(t, func() error {
		_, err := c.Scores(context.Background(), "what", []string{"a b", "c d"})
		return err
	})
	if !errors.Is(err, ErrModel) {
		t.Fatalf("err = %v, want ErrModel", err)
	}
}

// An embedder whose last_hidden_state has another batch size, sequence
// length or hidden size than the batch it was given (and the dims it
// reported at load) is refused with ErrModel, not pooled out of range or
// into vectors of another width.
func TestEmbedderOutputShapeMismatch(t *testing.T) {
	for _, shape := range [][]int64{{3, 4, 8}, {2, 64, 8}, {2, 4, 5}, {2, 4}} {
		e := &Embedder{m: lyingModel(t, shape...), pooling: "mean", dims: 8}
		err := noPanic(t, func() error {
			_, err := e.EmbedFloat(context.Background(), [][]int32{{5, 6}, {7, 8}}, false)
			return err
		})
		if !errors.Is(err, ErrModel) {
			t.Fatalf("shape %v: err = %v, want ErrModel", shape, err)
		}
	}
}
