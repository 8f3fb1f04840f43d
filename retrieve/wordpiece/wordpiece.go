// Package wordpiece is the BERT (uncased) tokenizer: the normalization and
// pre-tokenization of Hugging Face's BertNormalizer and BertPreTokenizer,
// then greedy longest-match WordPiece over a vocabulary read from a
// tokenizer.json or a vocab.txt. The ONNX embedder and cross-encoder share it.
//
// Entry points: [Load], [Tokenizer.Tokens], [Tokenizer.Encode],
// [Tokenizer.EncodePair].
package wordpiece

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/evpack/evpack/internal/fsutil"
)

// ErrVocab reports a vocabulary file that cannot be used.
var ErrVocab = errors.New("wordpiece: bad vocabulary")

// Tokenizer is an immutable WordPiece tokenizer, safe for concurrent use.
type Tokenizer struct {
	vocab       map[string]int32
	unk         int32
	cls, sep    int32
	pad         int32
	prefix      string
	maxWordLen  int
	MaxLen      int // the model's maximum sequence length, specials included
	stripAccent bool
}

// Load reads a tokenizer.json (Hugging Face) or a vocab.txt (one token per
// line, line number = ID).
func Load(path string) (*Tokenizer, error) {
	raw, err := fsutil.ReadRegular(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: %w", err)
	}
	return Parse(raw, path)
}

// Parse is Load of a file's bytes, raw, read from path (which names it in
// errors and says its kind: a path ending in .json is a tokenizer.json).
func Parse(raw []byte, path string) (*Tokenizer, error) {
	t := &Tokenizer{prefix: "##", maxWordLen: 100, MaxLen: 512, stripAccent: true}
	if strings.HasSuffix(path, ".json") {
		var f struct {
			Truncation *struct {
				MaxLength int `json:"max_length"`
			} `json:"truncation"`
			Normalizer struct {
				Lowercase    *bool `json:"lowercase"`
				StripAccents *bool `json:"strip_accents"`
			} `json:"normalizer"`
			Model struct {
				Type                    string           `json:"type"`
				Vocab                   map[string]int32 `json:"vocab"`
				UnkToken                string           `json:"unk_token"`
				ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
				MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
			} `json:"model"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrVocab, path, err)
		}
		if f.Model.Type != "WordPiece" || len(f.Model.Vocab) == 0 {
			return nil, fmt.Errorf("%w: %s: model type %q with %d tokens, want WordPiece", ErrVocab, path, f.Model.Type, len(f.Model.Vocab))
		}
		if f.Normalizer.Lowercase != nil && !*f.Normalizer.Lowercase {
			return nil, fmt.Errorf("%w: %s: only uncased (lowercasing) vocabularies are supported", ErrVocab, path)
		}
		if f.Normalizer.StripAccents != nil {
			t.stripAccent = *f.Normalizer.StripAccents
		}
		bad, found := "", false
		for tok, id := range f.Model.Vocab {
			if id < 0 && (!found || tok < bad) { // an ID indexes the model's embedding table
				bad, found = tok, true
			}
		}
		if found {
			return nil, fmt.Errorf("%w: %s: token %q has ID %d", ErrVocab, path, bad, f.Model.Vocab[bad])
		}
		t.vocab = f.Model.Vocab
		if f.Model.ContinuingSubwordPrefix != "" {
			t.prefix = f.Model.ContinuingSubwordPrefix
		}
		if f.Model.MaxInputCharsPerWord > 0 {
			t.maxWordLen = f.Model.MaxInputCharsPerWord
		}
		if f.Truncation != nil && f.Truncation.MaxLength > 0 {
			t.MaxLen = f.Truncation.MaxLength
		}
		return t.special(path, f.Model.UnkToken)
	}
	t.vocab = map[string]int32{}
	// Every line, however long (a bufio.Scanner stops at 64 KiB and would
	// leave the rest of the vocabulary out).
	lines := strings.Split(string(raw), "\n")
	if len(lines) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %s: %d lines", ErrVocab, path, len(lines))
	}
	for id, line := range lines {
		id := int32(id)
		if tok := strings.TrimRight(line, "\r"); tok != "" {
			if _, dup := t.vocab[tok]; !dup {
				t.vocab[tok] = id
			}
		}
	}
	return t.special(path, "[UNK]")
}

func (t *Tokenizer) special(path, unk string) (*Tokenizer, error) {
	for _, s := range []struct {
		tok string
		id  *int32
	}{{unk, &t.unk}, {"[CLS]", &t.cls}, {"[SEP]", &t.sep}, {"[PAD]", &t.pad}} {
		id, ok := t.vocab[s.tok]
		if !ok {
			return nil, fmt.Errorf("%w: %s: no %s token", ErrVocab, path, s.tok)
		}
		*s.id = id
	}
	return t, nil
}

// Pad returns the padding token's ID.
func (t *Tokenizer) Pad() int32 { return t.pad }

// Tokens returns the WordPiece IDs of text, without special tokens.
func (t *Tokenizer) Tokens(text string) []int32 {
	var out []int32
	for _, w := range t.words(text) {
		out = append(out, t.wordPieces(w)...)
	}
	return out
}

// words applies BERT's normalization and pre-tokenization: drop control
// characters, lower-case, strip accents, split at white space and around
// punctuation and CJK ideographs.
func (t *Tokenizer) words(text string) []string {
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == 0 || r == 0xFFFD || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'):
			continue
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case isCJK(r) || isPunct(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.ToLower(b.String())
	if t.stripAccent {
		var sb strings.Builder
		for _, r := range norm.NFD.String(s) {
			if !unicode.Is(unicode.Mn, r) {
				sb.WriteRune(r)
			}
		}
		s = sb.String()
	}
	return strings.Fields(s)
}

func isPunct(r rune) bool {
	if r >= 33 && r <= 47 || r >= 58 && r <= 64 || r >= 91 && r <= 96 || r >= 123 && r <= 126 {
		return true
	}
	return unicode.IsPunct(r)
}

func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B820 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// wordPieces splits one word greedily, longest match first; a word with no
// split, or longer than the limit, is [UNK].
func (t *Tokenizer) wordPieces(w string) []int32 {
	runes := []rune(w)
	if len(runes) > t.maxWordLen {
		return []int32{t.unk}
	}
	var out []int32
	for start := 0; start < len(runes); {
		end := len(runes)
		found := int32(-1)
		for ; end > start; end-- {
			sub := string(runes[start:end])
			if start > 0 {
				sub = t.prefix + sub
			}
			if id, ok := t.vocab[sub]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return []int32{t.unk}
		}
		out = append(out, found)
		start = end
	}
	return out
}

// Encode returns [CLS] tokens [SEP], truncated to maxLen (<= 0: t.MaxLen),
// and the attention mask.
func (t *Tokenizer) Encode(tokens []int32, maxLen int) (ids, mask []int32) {
	if maxLen <= 0 {
		maxLen = t.MaxLen
	}
	tokens = tokens[:min(len(tokens), max(0, maxLen-2))]
	ids = append(append([]int32{t.cls}, tokens...), t.sep)
	mask = make([]int32, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	return ids, mask
}

// EncodePair returns [CLS] a [SEP] b [SEP] with token types 0 then 1,
// truncating the longer side first (Hugging Face's LongestFirst) to fit
// maxLen (<= 0: t.MaxLen).
func (t *Tokenizer) EncodePair(a, b []int32, maxLen int) (ids, types, mask []int32) {
	if maxLen <= 0 {
		maxLen = t.MaxLen
	}
	la, lb := len(a), len(b)
	for la+lb > maxLen-3 && la+lb > 0 {
		if la > lb {
			la--
		} else {
			lb--
		}
	}
	ids = append(append(append(append([]int32{t.cls}, a[:la]...), t.sep), b[:lb]...), t.sep)
	types = make([]int32, len(ids))
	for i := la + 2; i < len(ids); i++ {
		types[i] = 1
	}
	mask = make([]int32, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	return ids, types, mask
}
