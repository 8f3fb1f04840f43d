package retrieve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/evpack/evpack/internal/fsutil"
)

// hostileDense is a well-sealed dense file: dims, then entries of (id, has,
// the bytes after has).
func hostileDense(dims uint32, has byte, tail []byte) []byte {
	var b bytes.Buffer
	b.WriteString(denseMagic)
	binary.Write(&b, binary.LittleEndian, dims)
	binary.Write(&b, binary.LittleEndian, uint32(1))
	binary.Write(&b, binary.LittleEndian, uint16(1))
	b.WriteString("a")
	b.WriteByte(has)
	b.Write(tail)
	return fsutil.Seal(b.Bytes())
}

// A dense file declaring 2³²−1 dimensions, with a few bytes after, is
// refused with ErrDenseFormat before a row of that size is allocated (it
// made a 4 GiB row first).
func TestDecodeDenseHugeDimsAllocatesNothing(t *testing.T) {
	raw := hostileDense(^uint32(0), 1, []byte{1, 2, 3})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeDense("dense-00000001.bin", raw)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrDenseFormat) {
		t.Fatalf("err = %v, want ErrDenseFormat", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("decoding a %d-byte file allocated %d bytes", len(raw), got)
	}
}

// Only 0 and 1 are has-vector flags: any other byte is not what Encode
// writes (the index would not re-encode to the bytes its Sum names).
func TestDecodeDenseRefusesOtherFlags(t *testing.T) {
	if _, err := DecodeDense("dense-00000001.bin", hostileDense(2, 7, nil)); !errors.Is(err, ErrDenseFormat) {
		t.Fatalf("err = %v, want ErrDenseFormat", err)
	}
}
