package vectors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.evv")
	if err := Write(path, []string{"the", "capital"}, [][]float64{{0.5, -1, 0}, {2, 0, -2}}); err != nil {
		t.Fatal(err)
	}
	tb, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Dims != 3 || tb.Lookup("capital") != 1 || tb.Lookup("absent") != -1 {
		t.Fatalf("%+v", tb)
	}
	// "the": max |x| = 1 -> scale 1/127, components round(x*127).
	if got := tb.Row(0); got[0] != 64 || got[1] != -127 || got[2] != 0 || tb.Scales[0] != float32(1.0/127) {
		t.Fatalf("row 0 = %v scale %v", got, tb.Scales[0])
	}
	if got := tb.Row(1); got[0] != 127 || got[2] != -127 {
		t.Fatalf("row 1 = %v", got)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", info.Mode())
	}
}

func TestCorruptFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v.evv")
	if err := Write(path, []string{"a", "b"}, [][]float64{{1, 2}, {3, 4}}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	flipped := append([]byte(nil), raw...)
	flipped[len(magic)+10] ^= 1
	cases := map[string][]byte{
		"truncated":          raw[:len(raw)-5],
		"one bit flipped":    flipped,
		"not a vectors file": []byte("hello, this is not it at all, not even close to forty bytes long"),
		"empty":              nil,
	}
	for name, b := range cases {
		if _, err := Parse(name, b); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.evv")); err == nil {
		t.Fatal("a missing file loads")
	}
	if err := Write(path, []string{"a"}, [][]float64{{1, 2}, {3}}); !errors.Is(err, ErrFormat) {
		t.Fatalf("mismatched lengths: %v", err)
	}
	if err := Write(path, []string{"a", "b"}, [][]float64{{1, 2}, {3}}); !errors.Is(err, ErrFormat) {
		t.Fatalf("wrong dimensions: %v", err)
	}
}

func TestImportWink(t *testing.T) {
	in := `{"precision":8,"l2NormIndex":3,"wordIndex":4,"size":3,"dimensions":3,
	"words":["the","of","capital"],
	"vectors":{"capital":[0.1,0.2,-0.4,0.458,2],"of":[1,0,0,1,1],"the":[0,1,0,1,0]},
	"unkVector":[0,0,0,0,-1]}`
	out := filepath.Join(t.TempDir(), "w.evv")
	n, err := ImportWink(context.Background(), strings.NewReader(in), out, 2, nil)
	if err != nil || n != 2 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	tb, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tb.Words, " ") != "the of" || tb.Lookup("capital") != -1 {
		t.Fatalf("the vocabulary is cut by frequency: %v", tb.Words)
	}
	bad := map[string]string{
		"vectors before words": `{"dimensions":3,"vectors":{}}`,
		"short vector":         `{"dimensions":3,"words":["a"],"vectors":{"a":[1,2]}}`,
		"word without vector":  `{"dimensions":3,"words":["a","b"],"vectors":{"a":[1,2,3]}}`,
		"not JSON":             `{"dimensions":`,
	}
	for name, b := range bad {
		if _, err := ImportWink(context.Background(), strings.NewReader(b), out, 0, nil); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
