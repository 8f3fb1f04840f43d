// Package bert runs BERT-family ONNX models through onnxruntime: a sentence
// embedder for the dense leg (all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2
// and the like) and a cross-encoder reranker (ms-marco-MiniLM-L-6-v2,
// bge-reranker-base and the like). It uses cgo; the rest of evpack does not,
// so a service that needs no model builds without a C toolchain.
//
// The onnxruntime shared library is not bundled: point [Options.Library] (or
// the EVPACK_ORT_LIB environment variable) at libonnxruntime.so.1, for
// example from the npm package onnxruntime-node@1.30.0
// (package/bin/napi-v6/linux/x64/libonnxruntime.so.1).
//
// Entry points: [NewEmbedder], [NewCrossEncoder].
package bert

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/retrieve/wordpiece"
)

// EnvLibrary names the environment variable that locates the onnxruntime
// shared library when Options.Library is empty.
const EnvLibrary = "EVPACK_ORT_LIB"

// Errors.
var (
	// ErrLibrary: the onnxruntime library is missing or cannot be loaded.
	ErrLibrary = errors.New("bert: onnxruntime library")
	// ErrModel: a model or tokenizer file is missing, unreadable or wrong.
	ErrModel = errors.New("bert: model")
	// ErrCUDA: CUDA was asked for and is not available. evpack never falls
	// back to the CPU silently.
	ErrCUDA = errors.New("bert: CUDA requested but unavailable")
)

// Options locate a model and say how to run it.
type Options struct {
	// Dir holds model.onnx and tokenizer.json (or vocab.txt), as a
	// Hugging Face ONNX export does. Model and Tokenizer override the files.
	Dir       string
	Model     string
	Tokenizer string
	// Library is the onnxruntime shared library (default: $EVPACK_ORT_LIB).
	Library string
	// MaxLen truncates sequences, special tokens included (default: the
	// tokenizer's truncation length, else 512).
	MaxLen int
	// BatchSize bounds sequences per model call (default 32).
	BatchSize int
	// CUDA runs on the CUDA execution provider; an error if unavailable.
	CUDA bool
}

func (o Options) files() (model, tok string) {
	model, tok = o.Model, o.Tokenizer
	if model == "" {
		model = filepath.Join(o.Dir, "model.onnx")
	}
	if tok == "" {
		tok = filepath.Join(o.Dir, "tokenizer.json")
		if _, err := os.Stat(tok); err != nil {
			tok = filepath.Join(o.Dir, "vocab.txt")
		}
	}
	return model, tok
}

// model is a loaded session and tokenizer.
type model struct {
	tok      *wordpiece.Tokenizer
	session  session
	output   string
	identity string // file hashes
	maxLen   int
	batch    int
	mu       sync.Mutex // onnxruntime sessions may run concurrently, but
	// evpack keeps calls serialized so a model's cost is predictable.
}

// Available reports whether this build can run ONNX models: it needs cgo,
// since onnxruntime is a C library. Without cgo, loading a model fails with
// ErrLibrary and everything else in evpack still works.
func Available() bool { return cgoBuild }

// session runs a model: onnxruntime through cgo (ort.go), or nothing in a
// build without cgo (nocgo.go).
type session interface {
	// run takes int64 inputs of shape [batch, width] in the order
	// input_ids, attention_mask, token_type_ids.
	run(shape [2]int64, inputs [3][]int64) ([]float32, []int64, error)
	destroy() error
}

func load(opts Options, output string) (*model, error) {
	modelPath, tokPath := opts.files()
	raw, err := fsutil.ReadRegular(modelPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	// Read once: the identity hashes the bytes the tokenizer was made of.
	tokRaw, err := fsutil.ReadRegular(tokPath)
	if err != nil {
		return nil, fmt.Errorf("%w: wordpiece: %v", ErrModel, err)
	}
	tok, err := wordpiece.Parse(tokRaw, tokPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	s, err := newSession(opts, raw, modelPath, output)
	if err != nil {
		return nil, err
	}
	m := &model{tok: tok, session: s, output: output, maxLen: opts.MaxLen, batch: opts.BatchSize,
		identity: fmt.Sprintf("model=blake3:%x tokenizer=blake3:%x", blake3.Sum256(raw), blake3.Sum256(tokRaw))}
	if m.maxLen <= 0 {
		m.maxLen = tok.MaxLen
	}
	if m.batch <= 0 {
		m.batch = 32
	}
	if opts.CUDA {
		m.identity += " device=cuda"
	}
	return m, nil
}

// run feeds one batch, padded to its longest row, and returns the output
// values and shape.
func (m *model) run(ids, types, mask [][]int32) ([]float32, []int64, error) {
	width := 0
	for _, r := range ids {
		width = max(width, len(r))
	}
	flat := func(rows [][]int32, pad int32) []int64 {
		out := make([]int64, 0, len(rows)*width)
		for _, r := range rows {
			for i := 0; i < width; i++ {
				v := pad
				if i < len(r) {
					v = r[i]
				}
				out = append(out, int64(v))
			}
		}
		return out
	}
	m.mu.Lock()
	vals, shape, err := m.session.run([2]int64{int64(len(ids)), int64(width)}, [3][]int64{flat(ids, m.tok.Pad()), flat(mask, 0), flat(types, 0)})
	m.mu.Unlock()
	// A row per input, and a token axis (rank 3) as wide as the inputs: the
	// callers index the output by both. Each checks the rest of its shape.
	if err == nil && (len(shape) < 2 || shape[0] != int64(len(ids)) || len(shape) == 3 && shape[1] != int64(width)) {
		err = fmt.Errorf("%w: output of shape %v for a batch of %d inputs %d tokens wide", ErrModel, shape, len(ids), width)
	}
	return vals, shape, err
}

// Close releases the session.
func (m *model) Close() error { return m.session.destroy() }
