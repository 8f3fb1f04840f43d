package wordpiece

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A vocab.txt with a line past bufio.Scanner's 64 KiB token limit must not
// load as the vocabulary up to that line: the scanner stops there, every
// later token (and its ID) is lost, and the tokenizer would silently map
// those words to [UNK]. Load refuses it with ErrVocab.
func TestLoadVocabLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vocab.txt")
	body := "[PAD]\n[UNK]\n[CLS]\n[SEP]\n" + strings.Repeat("x", 70_000) + "\nhello\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if errors.Is(err, ErrVocab) {
		return
	}
	if err == nil && len(tok.Tokens("hello")) == 1 && tok.Tokens("hello")[0] == 5 {
		return // read whole: also correct
	}
	t.Fatalf("err = %v; tokens of hello = %v, want ErrVocab or [5]", err, func() []int32 {
		if tok == nil {
			return nil
		}
		return tok.Tokens("hello")
	}())
}

// A tokenizer.json whose vocabulary maps a token to a negative ID is
// refused with ErrVocab: onnxruntime's Gather reads a negative index from
// the end of the embedding table, so the model would run on the wrong
// token without a word of complaint.
func TestLoadJSONNegativeID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	body := `{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":-5,"[SEP]":3,"a":4}}}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrVocab) {
		t.Fatalf("err = %v, want ErrVocab", err)
	}
}
