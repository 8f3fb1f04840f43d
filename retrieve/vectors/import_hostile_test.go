package vectors

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// importWink runs ImportWink on a hostile JSON and turns a panic into a
// test failure.
func importWink(t *testing.T, js string) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("ImportWink panicked: %v", r)
		}
	}()
	_, err = ImportWink(context.Background(), strings.NewReader(js), filepath.Join(t.TempDir(), "v.evv"), 0, nil)
	return err
}

// A negative "dimensions" is refused with ErrFormat, not sliced with.
func TestImportWinkNegativeDimensions(t *testing.T) {
	err := importWink(t, `{"dimensions":-1,"words":["a"],"vectors":{"a":[1,2,3]}}`)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("err = %v, want ErrFormat", err)
	}
}

// "words" given twice: the second list replaces the first; a vector of a
// word of the first list must not index past the second.
func TestImportWinkWordsTwice(t *testing.T) {
	err := importWink(t, `{"dimensions":2,"words":["a","b","c"],"words":["x"],"vectors":{"c":[1,2],"x":[3,4]}}`)
	if err != nil && !errors.Is(err, ErrFormat) {
		t.Fatalf("err = %v, want nil or ErrFormat", err)
	}
}

// A "dimensions" that Parse would refuse (over 4096, or past uint32) is
// refused on import rather than written as a file no Load can read.
func TestImportWinkHugeDimensions(t *testing.T) {
	err := importWink(t, `{"dimensions":5000,"words":["a"],"vectors":{"a":[`+strings.Repeat("1,", 4999)+`1]}}`)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("err = %v, want ErrFormat", err)
	}
}

// Write refuses a vector with a NaN or infinite component: it would be
// quantized to a zero vector (or NaN scale) silently.
func TestWriteRefusesNonFinite(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1)} {
		err := Write(filepath.Join(t.TempDir(), "v.evv"), []string{"a"}, [][]float64{{1, x}})
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("component %v: err = %v, want ErrFormat", x, err)
		}
	}
}

// A file cut short after its last vector, or with anything after its
// object, is refused: both were imported as if whole.
func TestImportWinkRefusesTruncatedOrTrailingJSON(t *testing.T) {
	const whole = `{"dimensions":2,"words":["a"],"vectors":{"a":[1,2]}}`
	if err := importWink(t, whole); err != nil {
		t.Fatalf("the whole file: %v", err)
	}
	for _, js := range []string{
		whole[:len(whole)-1], // the closing brace cut off
		whole + " garbage",
		whole + `{"dimensions":3}`,
		whole + "}",
	} {
		if err := importWink(t, js); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", js, err)
		}
	}
}
