package wordpiece

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sharedModels(t *testing.T) string {
	dir := filepath.Join("..", "..", "..", "shared", "models")
	if _, err := os.Stat(filepath.Join(dir, "bert-uncased-vocab.txt")); err != nil {
		if os.Getenv("EVPACK_REQUIRE_DATA") == "1" {
			t.Fatalf("the real vocabulary is not at %s", dir)
		}
		t.Skipf("the real BERT vocabulary is not at %s (it sits in ../shared/models beside the repository)", dir)
	}
	return dir
}

func pieces(t *Tokenizer, ids []int32) string {
	inv := map[int32]string{}
	for k, v := range t.vocab {
		inv[v] = k
	}
	var s []string
	for _, id := range ids {
		s = append(s, inv[id])
	}
	return strings.Join(s, " ")
}

// TestRealVocabulary checks the tokenizer against the examples Google's BERT
// README gives for the uncased model, on the real vocabulary, read both from
// vocab.txt and from all-MiniLM-L6-v2's tokenizer.json.
func TestRealVocabulary(t *testing.T) {
	dir := sharedModels(t)
	for _, file := range []string{"bert-uncased-vocab.txt", "all-minilm-l6-v2.tokenizer.json"} {
		tok, err := Load(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct{ in, want string }{
			{"John Johanson's house", "john johan ##son ' s house"},
			{"unaffable", "una ##ffa ##ble"},
			{"Héllo, WORLD!", "hello , world !"},
			{"Capital buffers (CET1) must exceed 4.5%.", "capital buffer ##s ( ce ##t ##1 ) must exceed 4 . 5 % ."},
		}
		for _, c := range cases {
			if got := pieces(tok, tok.Tokens(c.in)); got != c.want {
				t.Errorf("%s: %q -> %q, want %q", file, c.in, got, c.want)
			}
		}
		if tok.cls != 101 || tok.sep != 102 || tok.unk != 100 || tok.pad != 0 {
			t.Fatalf("%s: specials %d %d %d %d", file, tok.cls, tok.sep, tok.unk, tok.pad)
		}
		ids, mask := tok.Encode(tok.Tokens("unaffable"), 4)
		if len(ids) != 4 || ids[0] != 101 || ids[3] != 102 || len(mask) != 4 {
			t.Fatalf("truncated encode %v", ids)
		}
		p, types, _ := tok.EncodePair(tok.Tokens("capital buffer"), tok.Tokens("the buffer must exceed four percent"), 8)
		if pieces(tok, p) != "[CLS] capital buffer [SEP] the buffer must [SEP]" || types[3] != 0 || types[4] != 1 {
			t.Fatalf("pair %q types %v", pieces(tok, p), types)
		}
	}
	tj, _ := Load(filepath.Join(dir, "all-minilm-l6-v2.tokenizer.json"))
	if tj.MaxLen != 256 {
		t.Fatalf("truncation from tokenizer.json: %d", tj.MaxLen)
	}
}

func TestBadVocabulary(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"novocab.txt": "hello\nworld\n",
		"bad.json":    `{"model":{"type":"BPE","vocab":{"a":0}}}`,
		"cased.json":  `{"normalizer":{"lowercase":false},"model":{"type":"WordPiece","vocab":{"[UNK]":0}}}`,
		"broken.json": `{`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Load(p); !errors.Is(err, ErrVocab) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.txt")); err == nil {
		t.Fatal("a missing file loads")
	}
}
