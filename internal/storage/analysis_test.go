package storage

import (
	"errors"
	"reflect"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

func testAnalysis() Analysis {
	return Analysis{Identity: "lexical=en rerank=terms/1", Batch: "blake3:00",
		Chunks: []Analyzed{
			{ID: "a", Tokens: 6, Lex: []string{"record", "kept", "ten", "year"}, Rerank: []string{"record", "kept", "ten", "year"}},
			{ID: "b/ü", Tokens: 0, Lex: []string{}, Rerank: []string{}},
			{ID: "c", Tokens: 3, Lex: []string{"year", "äöü"}, Rerank: []string{"year", "year", "äöü"}},
		}}
}

// An analysis file reads back exactly as written, each term stored once.
func TestAnalysisRoundTrip(t *testing.T) {
	a := testAnalysis()
	raw := EncodeAnalysis(a)
	got, err := DecodeAnalysis("x.analysis", raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, got) {
		t.Fatalf("round trip:\n%#v\n%#v", a, got)
	}
	// The term table: "record kept ten year äöü" once each.
	if n := len(raw); n > 200 {
		t.Errorf("%d bytes: terms are not stored once", n)
	}
}

// A truncated, bit-flipped or forged-and-resealed file is ErrCorrupt.
func TestAnalysisRefusesDamage(t *testing.T) {
	raw := EncodeAnalysis(testAnalysis())
	body := raw[:len(raw)-32]
	cases := []struct {
		name, why string
		raw       []byte
	}{
		{"truncated", "the checksum no longer matches", raw[:len(raw)-1]},
		{"bit flipped", "the checksum no longer matches", flipBit(raw, len(raw)/2)},
		{"other format", "the magic names another format", fsutil.Seal(append([]byte("evpack-analysis/0\n"), body[len(AnalysisFormat):]...))},
		{"term index out of range", "a resealed entry names no term", fsutil.Seal(append(append([]byte(nil), body...), 1, 'd', 0, 0, 1, 99))},
		{"trailing bytes", "a resealed file with bytes after the last entry", fsutil.Seal(append(append([]byte(nil), body...), 0))},
		{"cut inside an entry", "a resealed file that ends inside an entry", fsutil.Seal(append([]byte(nil), body[:len(body)-2]...))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := DecodeAnalysis("x.analysis", c.raw); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: got %v, want ErrCorrupt", c.why, err)
			}
		})
	}
}

// FuzzDecodeAnalysis: no input panics the decoder, and any input it
// accepts encodes back to the same bytes.
func FuzzDecodeAnalysis(f *testing.F) {
	raw := EncodeAnalysis(testAnalysis())
	for _, b := range [][]byte{raw, raw[:len(raw)/2], flipBit(raw, len(raw)/3)} {
		f.Add(b, false)
	}
	f.Add(raw[:len(raw)-32], true)
	f.Fuzz(func(t *testing.T, raw []byte, seal bool) {
		if seal {
			raw = fsutil.Seal(raw)
		}
		a, err := DecodeAnalysis("x.analysis", raw)
		if err != nil {
			return
		}
		back, err := DecodeAnalysis("x.analysis", EncodeAnalysis(a))
		if err != nil || !reflect.DeepEqual(a, back) {
			t.Fatalf("accepted file does not round-trip: %v", err)
		}
	})
}
