package vectors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// sealedWithScale is a well-sealed one-word file whose scale is s.
func sealedWithScale(s float32) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, uint32(2))
	binary.Write(&b, binary.LittleEndian, uint32(1))
	binary.Write(&b, binary.LittleEndian, uint16(1))
	b.WriteString("a")
	binary.Write(&b, binary.LittleEndian, s)
	b.Write([]byte{127, 1})
	return fsutil.Seal(b.Bytes())
}

// A scale no Write can produce (NaN, infinite, negative, or so large that
// SIF's int64(w × scale × 1024) is out of range, which Go leaves to the CPU:
// amd64 and arm64 give different integers, so packs would differ by
// machine) is refused by Parse with ErrFormat.
func TestParseRefusesHostileScale(t *testing.T) {
	for _, s := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1, 1e30} {
		if _, err := Parse("x.evv", sealedWithScale(s)); !errors.Is(err, ErrFormat) {
			t.Errorf("scale %v: err = %v, want ErrFormat", s, err)
		}
	}
	if _, err := Parse("x.evv", sealedWithScale(0.04)); err != nil {
		t.Fatalf("scale 0.04: %v", err)
	}
}
