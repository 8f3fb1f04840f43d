package storage

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// seedVariants adds raw, and truncated and bit-flipped copies of it, to
// the corpus of f, each both as stored bytes (seal false) and as a body for
// the target to seal (seal true), so that mutations reach past the
// checksum into the parser.
func seedVariants(f *testing.F, raw []byte) {
	body, err := fsutil.UnsealText(raw)
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range [][]byte{raw, raw[:len(raw)/2], raw[:len(raw)-1], flipBit(raw, len(raw)/3)} {
		f.Add(b, false)
	}
	for _, b := range [][]byte{body, body[:len(body)/2], flipBit(body, len(body)/3)} {
		f.Add(b, true)
	}
}

// sealed returns raw as a target reads it: sealed first when seal is set
// (the body must end with a newline, as every sealed body does).
func sealed(raw []byte, seal bool) []byte {
	if !seal {
		return raw
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		raw = append(bytes.Clone(raw), '\n')
	}
	return fsutil.SealText(raw)
}

// FuzzDecodeManifest: no input panics the decoder, and any input it
// accepts is a manifest that encodes and decodes to itself.
func FuzzDecodeManifest(f *testing.F) {
	for _, m := range []*Manifest{{Format: Format, Batches: []Batch{}}, validManifest()} {
		raw, err := EncodeManifest(m)
		if err != nil {
			f.Fatal(err)
		}
		seedVariants(f, raw)
	}
	f.Add([]byte(`{"format":"evpack-index/1","generation":1}`), false)
	f.Fuzz(func(t *testing.T, raw []byte, seal bool) {
		m, err := DecodeManifest("MANIFEST.json", sealed(raw, seal), nil)
		if err != nil {
			return
		}
		enc, err := EncodeManifest(m)
		if err != nil {
			t.Fatalf("accepted manifest does not encode: %v", err)
		}
		back, err := DecodeManifest("MANIFEST.json", enc, nil)
		if err != nil {
			t.Fatalf("accepted manifest, encoded, is refused: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the manifest:\n%#v\n%#v", m, back)
		}
	})
}

// FuzzDecodeBatch: no input panics the decoder, and any input it accepts
// is a batch that encodes and decodes to itself, in the same bytes from
// then on.
func FuzzDecodeBatch(f *testing.F) {
	chunks := []*evidence.Chunk{testChunk(f, "a", "Records are kept for ten years."), testChunk(f, "b", "Zeile\tmit äöü und \"quotes\"")}
	for _, cs := range [][]*evidence.Chunk{chunks[:1], chunks} {
		raw, err := EncodeBatch(testHeader(), Contents{Chunks: cs})
		if err != nil {
			f.Fatal(err)
		}
		seedVariants(f, raw)
	}
	// Bodies that spell a stored value otherwise than EncodeBatch would:
	// each must be refused, or read as a value that EncodeBatch then writes.
	raw, err := EncodeBatch(testHeader(), Contents{Chunks: chunks[:1]})
	if err != nil {
		f.Fatal(err)
	}
	body, _ := fsutil.UnsealText(raw)
	for _, edit := range [][2]string{
		{`"retrieved_at":"2024-06-02T00:00:00Z"`, `"retrieved_at":"2024-06-02T00:00:00.5Z"`},                       // sub-second
		{`"retrieved_at":"2024-06-02T00:00:00Z"`, `"retrieved_at":"2024-06-02T02:00:00+02:00"`},                    // an offset
		{`"retrieved_at":"2024-06-02T00:00:00Z"`, `"retrieved_at":"2024-06-02"`},                                   // a date
		{`"meta":{"kind":"guidance","lang":"en"}`, `"meta":{}`},                                                    // empty, not absent
		{`"id":"a"`, `"id":"x","id":"a"`},                                                                          // a key twice
		{`"text":"Records`, `"text":"\ud800Records`},                                                               // a lone surrogate
		{`"valid_from":"2024-06-01","valid_to":"2025-01-01"`, `"valid_from":"2025-01-01","valid_to":"2024-06-01"`}, // reversed
	} {
		edited := bytes.Replace(body, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(edited, body) {
			f.Fatalf("seed edit %q does not apply", edit[0])
		}
		f.Add(edited, true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, seal bool) {
		h, c, err := DecodeBatch("b.jsonl", sealed(raw, seal))
		if err != nil {
			return
		}
		enc, err := EncodeBatch(h, c)
		if err != nil {
			t.Fatalf("accepted batch does not encode: %v", err)
		}
		h2, back, err := DecodeBatch("b.jsonl", enc)
		if err != nil {
			t.Fatalf("accepted batch, encoded, is refused: %v\n%s", err, enc)
		}
		if h != h2 || len(c.Chunks) != len(back.Chunks) || len(c.Facts) != len(back.Facts) || !slices.Equal(c.Purges, back.Purges) ||
			!maps.Equal(c.Redacted, back.Redacted) {
			t.Fatalf("round trip changed the header or the contents: %+v %+v, %+v %+v", h, c, h2, back)
		}
		for i := range c.Chunks {
			if f := Differs(c.Chunks[i], back.Chunks[i]); f != "" {
				t.Fatalf("round trip changed chunk %d's %s", i, f)
			}
		}
		for i := range c.Facts {
			if *c.Facts[i] != *back.Facts[i] {
				t.Fatalf("round trip changed fact %d", i)
			}
		}
		again, err := EncodeBatch(h2, back)
		if err != nil || !bytes.Equal(enc, again) {
			t.Fatalf("encoding is not stable: %v", err)
		}
	})
}
