package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// Readable reports whether Decode would read checkpoint file f rather than
// pass it over: it is of this format and made by analyzers identity. It
// checks nothing else (Decode checks the head against its sum).
func Readable(f io.ReaderAt, identity string) bool {
	want := binary.AppendUvarint([]byte(nil), uint64(len(identity)))
	want = append(want, identity...)
	pre := make([]byte, len(Format)+8+len(want))
	if _, err := f.ReadAt(pre, 0); err != nil {
		return false
	}
	return string(pre[:len(Format)]) == Format && bytes.Equal(pre[len(Format)+8:], want)
}

// Decode checks the head of checkpoint file f (name is used in errors)
// against sum, the manifest's, parses it, and maps the body: the state's
// figures, and a row table over its chunks, whose rows name generations 1
// to gens (the index's batch files). ok is false, with no error, when the
// checkpoint was made by other analyzers than identity or is of an older
// format (Older). An error wraps storage.ErrCorrupt. f may be closed once
// Decode returns; the table's mapping outlives it until Table.Close.
func Decode(name string, f *os.File, sum, identity string, gens int) (h *Head, t *Table, ok bool, err error) {
	fail := func(format string, args ...any) (*Head, *Table, bool, error) {
		return nil, nil, false, fmt.Errorf("%w: %s: %s", storage.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	size := fi.Size()
	pre := make([]byte, len(Format)+8)
	if _, err := f.ReadAt(pre, 0); err != nil || string(pre[:len(Format)]) != Format {
		if err == nil && slices.Contains(Older, string(pre[:len(Format)])) {
			return nil, nil, false, nil
		}
		return fail("not a checkpoint (%s)", Format[:len(Format)-1])
	}
	headLen := binary.LittleEndian.Uint64(pre[len(Format):])
	if headLen > uint64(size) {
		return fail("a head of %d bytes in a file of %d", headLen, size)
	}
	raw := make([]byte, len(pre)+int(headLen)+32)
	if _, err := f.ReadAt(raw, 0); err != nil {
		return fail("%v", err)
	}
	head, seal := raw[len(pre):len(raw)-32], raw[len(raw)-32:]
	if got := blake3.Sum256(raw[:len(raw)-32]); !bytes.Equal(got[:], seal) {
		return fail("head checksum mismatch")
	}
	if got := evidence.HashPrefix + hex.EncodeToString(seal); got != sum {
		return fail("head hashes to %s, the manifest records %s", got, sum)
	}
	r := &reader{b: head}
	if r.str() != identity {
		return nil, nil, false, r.err
	}
	catalog := r.bytes(r.count(1))
	h = &Head{Gen: r.int(), Commits: make([]time.Time, r.count(1))}
	for i := range h.Commits {
		h.Commits[i] = time.Unix(r.int(), 0).UTC()
	}
	h.Docs, h.Tokens = r.int(), r.int()
	h.Bounds = retrieve.NewBounds()
	b := &h.Bounds
	b.MaxAnchorDay, b.Undated, b.MaxFrom, b.MinTo, b.MinRetired = r.int(), r.bool(), r.int(), r.int(), r.int()
	for range r.count(2) {
		t := r.str()
		b.Tenants[t] = int(r.int())
	}
	h.Terms = make([]string, r.count(1))
	for i := range h.Terms {
		h.Terms[i] = r.str()
	}
	h.Entities = make([]Entities, r.count(2))
	for i := range h.Entities {
		e := &h.Entities[i]
		e.Key = r.str()
		e.Names = make([]Entity, r.count(2))
		for j := range e.Names {
			e.Names[j] = Entity{Name: r.str(), Gen: r.int()}
		}
	}
	h.Facts = make([]Fact, r.count(6))
	for i := range h.Facts {
		gen := r.int()
		f := &evidence.Fact{Kind: evidence.FactKind(r.str()), ChunkID: r.str(), End: r.date(), Anchor: time.Unix(r.int(), 0).UTC(), By: r.str()}
		if r.err == nil {
			if err := f.Prepare(); err != nil {
				r.fail(err.Error())
			}
		}
		h.Facts[i] = Fact{Gen: gen, F: f}
	}
	h.Purges = make([]Purge, r.count(6))
	for i := range h.Purges {
		h.Purges[i] = Purge{ID: r.str(), Gen: r.int(), Reason: r.str(), Hash: r.str(),
			Redaction: storage.Redaction{Generation: r.int(), Tokens: int(r.int()), Terms: int(r.int())}}
	}
	h.Tenants = make([]Tenant, r.count(1))
	tenants := make([]string, len(h.Tenants))
	for i := range h.Tenants {
		ts := &h.Tenants[i]
		ts.Name = r.str()
		tenants[i] = ts.Name
		ts.Docs, ts.Tokens, ts.Facts, ts.Purges, ts.RRTerms = r.series(), r.series(), r.series(), r.series(), r.series()
		ts.Digest = make([]Lane, r.count(33))
		for j := range ts.Digest {
			ts.Digest[j].Gen = r.int()
			for k := range ts.Digest[j].L {
				ts.Digest[j].L[k] = r.u64()
			}
		}
		for _, df := range []*[]TermCounts{&ts.LexDF, &ts.RRDF} {
			*df = make([]TermCounts, r.count(3))
			for k := range *df {
				(*df)[k] = TermCounts{Term: r.str(), Counts: r.series()}
			}
		}
	}
	rowCount := r.uint() // the body's, checked against its rows section below
	if rowCount > uint64(size/rowSize) {
		r.fail("bad row count")
	}
	n := int(rowCount)
	fences := make([]uint64, (n+fenceEvery-1)/fenceEvery)
	for i := range fences {
		fences[i] = r.u64()
		if i > 0 && r.err == nil && fences[i] < fences[i-1] {
			r.fail("fences out of order")
		}
	}
	nDocs := r.uint()
	if nDocs > uint64(n) {
		r.fail("bad document count")
	}
	start := (int64(len(raw)) + page - 1) &^ (page - 1)
	var secs [sections]section
	var bodyLen int64
	for i := range secs {
		off, length, blk := r.uint(), r.uint(), r.uint()
		nb := 0
		if blk > 0 {
			nb = int((length + blk - 1) / blk)
		}
		sums := r.bytes(32 * nb)
		if r.err != nil || blk == 0 || off != uint64(bodyLen) || length > uint64(size) {
			r.fail(fmt.Sprintf("section %d", i))
			break
		}
		secs[i] = section{block: int(blk), sums: sums, done: make([]atomic.Bool, nb), length: int(length), off: int64(off)}
		bodyLen += (int64(length) + 7) &^ 7
	}
	if r.err == nil && r.off != len(r.b) {
		r.fail("data after the end")
	}
	if r.err == nil && (start+bodyLen != size || secs[0].length != n*rowSize || secs[1].length != n*orderSize || secs[5].length%4 != 0 ||
		secs[0].block != rowsPerBlock*rowSize || secs[1].block != orderPerBlock*orderSize ||
		secs[3].length != int(nDocs)*docSize || secs[3].block != docsPerBlock*docSize) {
		r.fail(fmt.Sprintf("a body of %d rows does not fill the file's %d bytes", n, size))
	}
	if r.err != nil {
		return nil, nil, false, fmt.Errorf("%w: %s: %w", storage.ErrCorrupt, name, r.err)
	}
	body, err := mapBody(f, start, bodyLen)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w: %s: %v", storage.ErrCorrupt, name, err)
	}
	t = &Table{body: body, gens: gens, tenants: tenants, n: n, nDocs: int(nDocs), names: len(h.Terms), name: name, catalog: catalog, fences: fences}
	for i := range secs {
		secs[i].data = body[secs[i].off : secs[i].off+int64(secs[i].length)]
	}
	t.rows, t.byID, t.ids, t.docs, t.keys, t.numSec = secs[0], secs[1], secs[2], secs[3], secs[4], secs[5]
	t.rows.validate, t.byID.validate, t.numSec.validate, t.docs.validate = t.validRows, t.validOrder, t.validNums, t.validDocs
	if m := t.numSec.length / 4; m > 0 {
		arena := t.numSec.data
		if nativeLittleEndian {
			t.nums = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(arena))), m)
		} else {
			t.nums = make([]uint32, m)
			for i := range t.nums {
				t.nums[i] = binary.LittleEndian.Uint32(arena[4*i:])
			}
		}
	}
	return h, t, true, nil
}

// nativeLittleEndian: the number arena (little-endian) can be used in place.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
