package bert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/rerank"
)

func td(name string) string { return filepath.Join("..", "testdata", "onnx", name) }

// library returns the onnxruntime library path from EVPACK_ORT_LIB, skipping
// without it, or failing when EVPACK_REQUIRE_DATA=1 (as .ci/run sets it).
func library(t *testing.T) string {
	t.Helper()
	if !Available() {
		t.Skip("built without cgo: the ONNX tests need onnxruntime through cgo")
	}
	lib := os.Getenv(EnvLibrary)
	if lib == "" {
		msg := EnvLibrary + " is not set: point it at libonnxruntime.so.1 (npm pack onnxruntime-node@1.30.0; " +
			"package/bin/napi-v6/linux/x64/libonnxruntime.so.1) to run the ONNX tests"
		if os.Getenv("EVPACK_REQUIRE_DATA") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return lib
}

type reference struct {
	Embedder struct {
		InputIDs      [][]int32     `json:"input_ids"`
		TokenTypeIDs  [][]int32     `json:"token_type_ids"`
		AttentionMask [][]int32     `json:"attention_mask"`
		Hidden        [][][]float64 `json:"last_hidden_state"`
		Normalized    [][]float64   `json:"mean_pooled_normalized"`
	} `json:"embedder"`
	CrossEncoder struct {
		InputIDs      [][]int32 `json:"input_ids"`
		TokenTypeIDs  [][]int32 `json:"token_type_ids"`
		AttentionMask [][]int32 `json:"attention_mask"`
		Logits        []float64 `json:"logits"`
	} `json:"cross_encoder"`
}

func loadReference(t *testing.T) reference {
	raw, err := os.ReadFile(td("reference.json"))
	require.NoError(t, err)
	var r reference
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

func embedder(t *testing.T) *Embedder {
	e, err := NewEmbedder(EmbedderOptions{Options: Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt"), Library: library(t)}})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestEmbedderMatchesNumpy: the Go path reproduces the outputs numpy
// computed independently (testdata/onnx/gen.py) within 1e-5.
func TestEmbedderMatchesNumpy(t *testing.T) {
	ref := loadReference(t)
	e := embedder(t)
	require.Equal(t, 8, e.Dims())
	r := ref.Embedder
	vals, shape, err := e.m.run(r.InputIDs, r.TokenTypeIDs, r.AttentionMask)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 9, 8}, shape)
	for i := range r.Hidden {
		for j := range r.Hidden[i] {
			for k, want := range r.Hidden[i][j] {
				require.InDelta(t, want, vals[(i*9+j)*8+k], 1e-5, "hidden[%d][%d][%d]", i, j, k)
			}
		}
	}
	for i, row := range pool(vals, shape, r.AttentionMask, "mean") {
		for k, want := range r.Normalized[i] {
			require.InDelta(t, want, row[k], 1e-5)
		}
	}
	// End to end: the tokenizer gives numpy's input IDs, and the embedding
	// of the text equals the reference row.
	f := e.Analyze("John Johanson's house")
	require.Equal(t, r.InputIDs[0][1:7], f)
	got, err := e.EmbedFloat(context.Background(), [][]int32{f}, false)
	require.NoError(t, err)
	for k, want := range r.Normalized[0] {
		require.InDelta(t, want, got[0][k], 1e-5)
	}
	q, err := e.Embed(context.Background(), [][]int32{f}, nil, true)
	require.NoError(t, err)
	require.Len(t, q[0], 8)
}

func TestCrossEncoderMatchesNumpy(t *testing.T) {
	ref := loadReference(t)
	c, err := NewCrossEncoder("tiny", Options{Model: td("tiny-bert-cross-encoder.onnx"), Tokenizer: td("vocab.txt"), Library: library(t)})
	require.NoError(t, err)
	defer c.Close()
	r := ref.CrossEncoder
	vals, shape, err := c.m.run(r.InputIDs, r.TokenTypeIDs, r.AttentionMask)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 1}, shape)
	for i, want := range r.Logits {
		require.InDelta(t, want, vals[i], 1e-5)
	}
}

func TestBadModelInput(t *testing.T) {
	lib := library(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.WriteFile(garbage, []byte("not a model"), 0o644))
	cases := []struct {
		name string
		opts Options
		want error
	}{
		{"missing model file", Options{Model: filepath.Join(dir, "none.onnx"), Tokenizer: td("vocab.txt"), Library: lib}, ErrModel},
		{"corrupt model file", Options{Model: garbage, Tokenizer: td("vocab.txt"), Library: lib}, ErrModel},
		{"missing tokenizer", Options{Model: td("tiny-bert.onnx"), Tokenizer: filepath.Join(dir, "vocab.txt"), Library: lib}, ErrModel},
		{"another library than the one loaded", Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt"), Library: garbage}, ErrLibrary},
		{"CUDA asked for, CPU-only library", Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt"), Library: lib, CUDA: true}, ErrCUDA},
	}
	embedder(t) // the runtime is loaded from lib first
	for _, c := range cases {
		_, err := NewEmbedder(EmbedderOptions{Options: c.opts})
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
	}
	t.Setenv(EnvLibrary, "")
	_, err := NewEmbedder(EmbedderOptions{Options: Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt")}})
	require.ErrorIs(t, err, ErrLibrary, "no library path given anywhere")
	_, err = NewEmbedder(EmbedderOptions{Options: Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt"), Library: lib}, Pooling: "max"})
	require.ErrorIs(t, err, ErrModel)
}

func corpus(t *testing.T, e *evpack.Engine) {
	for _, c := range []connectors.Connector{
		connectors.NewStatute(filepath.Join("..", "testdata", "corpus", "records-act.json")),
		connectors.NewJSONL(filepath.Join("..", "testdata", "corpus", "guidance.jsonl")),
	} {
		_, err := e.Ingest(context.Background(), c, evpack.IngestOptions{})
		require.NoError(t, err)
	}
}

// TestCrossEncoderPackReplaysWithoutTheModel: a pack ordered by the
// cross-encoder carries its ledger, and replays byte-identically, after the
// model file is removed, in an engine that trusts the retired model's
// identity (rerank.Retired) but has no model; an engine with another
// reranker refuses it.
func TestCrossEncoderPackReplaysWithoutTheModel(t *testing.T) {
	lib := library(t)
	ctx := context.Background()
	model := filepath.Join(t.TempDir(), "cross.onnx")
	raw, err := os.ReadFile(td("tiny-bert-cross-encoder.onnx"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(model, raw, 0o644))
	ce, err := NewCrossEncoder("tiny", Options{Model: model, Tokenizer: td("vocab.txt"), Library: lib})
	require.NoError(t, err)
	_, err = evpack.OpenMemory(evpack.Options{Reranker: ce, Pool: 60})
	require.ErrorIs(t, err, evpack.ErrBadOptions, "the candidate list is capped at 50")

	emb := embedder(t)
	dir := t.TempDir()
	e, err := evpack.Open(dir, evpack.Options{Reranker: ce, Embedder: emb})
	require.NoError(t, err)
	corpus(t, e)
	p, err := e.Query(ctx, evpack.Request{Question: "How long must records be retained?", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.NotEmpty(t, p.Ledger)
	require.Equal(t, "false", p.Fingerprint.Get("reranker_bit_stable"))
	require.Contains(t, p.Fingerprint.Get("dense"), "onnx bert pooling=mean")
	require.NoError(t, e.Close())
	require.NoError(t, ce.Close())
	require.NoError(t, os.Remove(model))

	other, err := evpack.Open(dir, evpack.Options{Embedder: emb}) // the default reranker
	require.NoError(t, err)
	rep, err := other.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.False(t, rep.OK(), "a pack verifies only under the reranker that made it")
	require.NoError(t, other.Close())

	again, err := evpack.Open(dir, evpack.Options{Embedder: emb, Reranker: rerank.Retired(p.Fingerprint.Get("reranker"))})
	require.NoError(t, err)
	defer again.Close()
	rep, err = again.Verify(ctx, p.Bytes())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.Equal(t, rep.Hash, rep.ReplayHash)
	_, err = NewCrossEncoder("tiny", Options{Model: model, Tokenizer: td("vocab.txt"), Library: lib})
	require.ErrorIs(t, err, ErrModel, "the model is gone")
}

// BenchmarkCrossEncoderPairs: pairs scored per second on the CPU at batch
// 1, 8, 32 and 50 (the tiny generated model: the mechanism's cost, not a real
// model's).
func BenchmarkCrossEncoderPairs(b *testing.B) {
	lib := os.Getenv(EnvLibrary)
	if lib == "" {
		b.Skip(EnvLibrary + " is not set")
	}
	passages := make([]string, 50)
	for i := range passages {
		passages[i] = "A licensed firm must retain records of each client transaction for ten years from the date of the transaction."
	}
	for _, batch := range []int{1, 8, 32, 50} {
		// EVPACK_CUDA=1 (with a CUDA build of onnxruntime) measures the GPU.
		c, err := NewCrossEncoder("tiny", Options{Model: td("tiny-bert-cross-encoder.onnx"), Tokenizer: td("vocab.txt"), Library: lib, BatchSize: batch,
			CUDA: os.Getenv("EVPACK_CUDA") != ""})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Scores(context.Background(), "How long must records be retained?", passages); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(50*b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
		c.Close()
	}
}
