package bert

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Hostile model and tokenizer files: ErrModel, never a crash.
func TestHostileModelFiles(t *testing.T) {
	lib := library(t)
	dir := t.TempDir()
	raw, err := os.ReadFile(td("tiny-bert.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte(nil), raw...)
	for i := 0; i < len(flipped); i += 97 {
		flipped[i] ^= 0xA5
	}
	models := map[string]string{
		"empty":     write("empty.onnx", nil),
		"truncated": write("trunc.onnx", raw[:len(raw)/2]),
		"header":    write("head.onnx", raw[:40]),
		"flipped":   write("flip.onnx", flipped),
		"text":      write("text.onnx", []byte("hello world\n")),
		"directory": dir,
	}
	for name, m := range models {
		_, err := NewEmbedder(EmbedderOptions{Options: Options{Model: m, Tokenizer: td("vocab.txt"), Library: lib}})
		if !errors.Is(err, ErrModel) {
			t.Errorf("embedder, %s model: err = %v, want ErrModel", name, err)
		}
		_, err = NewCrossEncoder("x", Options{Model: m, Tokenizer: td("vocab.txt"), Library: lib})
		if !errors.Is(err, ErrModel) {
			t.Errorf("cross-encoder, %s model: err = %v, want ErrModel", name, err)
		}
	}
	toks := map[string]string{
		"empty json":  write("a.json", nil),
		"bad json":    write("b.json", []byte(`{"model":{"type":"WordPiece","vocab":{"a":`)),
		"no specials": write("c.json", []byte(`{"model":{"type":"WordPiece","vocab":{"a":0}}}`)),
		"empty txt":   write("d.txt", nil),
		"binary txt":  write("e.txt", raw[:4096]),
		"tok dir":     dir,
		"huge ids":    write("f.json", []byte(`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":2000000000,"[CLS]":-5,"[SEP]":3,"[PAD]":0,"a":7}}}`)),
		"len 1":       write("g.json", []byte(`{"truncation":{"max_length":1},"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":1,"[CLS]":2,"[SEP]":3,"[PAD]":0}}}`)),
	}
	for name, tk := range toks {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", name, r)
				}
			}()
			e, err := NewEmbedder(EmbedderOptions{Options: Options{Model: td("tiny-bert.onnx"), Tokenizer: tk, Library: lib}})
			if err != nil {
				t.Logf("%s: %v", name, err)
				if !errors.Is(err, ErrModel) {
					t.Errorf("%s: err = %v, want ErrModel", name, err)
				}
				return
			}
			defer e.Close()
			_, err = e.EmbedFloat(t.Context(), [][]int32{e.Analyze("a b c")}, false)
			t.Logf("%s: loaded; embed err = %v", name, err)
			if err != nil && !errors.Is(err, ErrModel) {
				t.Errorf("%s: embed err = %v, want ErrModel", name, err)
			}
		}()
	}
}

// A model without a "logits" output (here the embedder) is refused by
// NewCrossEncoder with ErrModel, as NewEmbedder refuses one without
// last_hidden_state: it loaded, and failed at every query.
func TestNewCrossEncoderRefusesModelWithoutLogits(t *testing.T) {
	lib := library(t)
	// The embedder model as a cross-encoder (no "logits" output), and back.
	if c, err := NewCrossEncoder("x", Options{Model: td("tiny-bert.onnx"), Tokenizer: td("vocab.txt"), Library: lib}); !errors.Is(err, ErrModel) {
		_, err2 := c.Scores(t.Context(), "a", []string{"b"})
		t.Errorf("embedder as cross-encoder: %v; scores: %v", err, err2)
	}
	if _, err := NewEmbedder(EmbedderOptions{Options: Options{Model: td("tiny-bert-cross-encoder.onnx"), Tokenizer: td("vocab.txt"), Library: lib}}); !errors.Is(err, ErrModel) {
		t.Errorf("cross-encoder as embedder: %v", err)
	}
}
