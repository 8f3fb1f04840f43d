package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/internal/storage"
)

// section is one part of a checkpoint's body: mapped, and checked block by
// block the first time a block is read. A block is also validated then
// (every reference in it inside the file): a checked block is one a commit
// wrote, or one a forger sealed anew, which Check finds; either way nothing
// in it may make a read go out of bounds.
type section struct {
	data     []byte
	off      int64
	length   int
	block    int
	sums     []byte // 32 bytes a block
	done     []atomic.Bool
	validate func(lo, hi int) error // bytes [lo, hi) of data, a checked block
}

// check makes sure the blocks holding bytes [off, off+n) are checked.
func (s *section) check(off, n int) error {
	if off < 0 || n < 0 || off+n > s.length {
		return fmt.Errorf("bytes %d+%d of a section of %d", off, n, s.length)
	}
	for b := off / s.block; b*s.block < off+n; b++ {
		if s.done[b].Load() {
			continue
		}
		lo, hi := b*s.block, min((b+1)*s.block, s.length)
		if sum := blake3.Sum256(s.data[lo:hi]); !bytes.Equal(sum[:], s.sums[32*b:32*b+32]) {
			return fmt.Errorf("block %d: checksum mismatch", b)
		}
		if s.validate != nil {
			if err := s.validate(lo, hi); err != nil {
				return fmt.Errorf("block %d: %w", b, err)
			}
		}
		s.done[b].Store(true)
	}
	return nil
}

// validRows validates the rows in bytes [lo, hi) of the rows section.
func (t *Table) validRows(lo, hi int) error {
	for i := lo / rowSize; i < hi/rowSize; i++ {
		w := t.rowAt(i)
		switch {
		case int(w.idOff)+int(w.idLen) > t.ids.length || w.idLen == 0:
			return fmt.Errorf("row %d: chunk ID outside the arena", i)
		case int(w.Tenant) >= len(t.tenants) || int(w.Gen) < 1 || int(w.Gen) > t.gens:
			return fmt.Errorf("row %d: tenant %d, generation %d", i, w.Tenant, w.Gen)
		case int(w.numsOff)+int(w.NumsLen) > t.numSec.length/4:
			return fmt.Errorf("row %d: reranker terms outside the arena", i)
		case int(w.DocStart) > i || i >= int(w.DocStart)+int(w.DocLen) || int(w.DocStart)+int(w.DocLen) > t.n:
			return fmt.Errorf("row %d: document rows %d+%d", i, w.DocStart, w.DocLen)
		}
	}
	return nil
}

// validOrder validates the entries in bytes [lo, hi) of the ID order.
func (t *Table) validOrder(lo, hi int) error {
	for k := lo; k+orderSize <= hi; k += orderSize {
		if r := binary.LittleEndian.Uint32(t.byID.data[k:]); int(r) >= t.n {
			return fmt.Errorf("ID order entry %d: row %d of %d", k/orderSize, r, t.n)
		}
	}
	return nil
}

// validDocs validates the entries in bytes [lo, hi) of the document table.
func (t *Table) validDocs(lo, hi int) error {
	for k := lo; k+docSize <= hi; k += docSize {
		e := t.docAt(k / docSize)
		if e.First+e.Len > t.n || e.Len == 0 || e.keyOff+e.keyLen > t.keys.length {
			return fmt.Errorf("document %d: rows %d+%d of %d, key %d+%d", k/docSize, e.First, e.Len, t.n, e.keyOff, e.keyLen)
		}
	}
	return nil
}

// validNums validates term numbers in bytes [lo, hi) of the number arena.
func (t *Table) validNums(lo, hi int) error {
	for k := lo; k < hi; k += 4 {
		if v := binary.LittleEndian.Uint32(t.numSec.data[k:]); int(v) >= t.names {
			return fmt.Errorf("term number %d of %d", v, t.names)
		}
	}
	return nil
}

// Table is the chunks' half of a checkpoint: its rows, mapped, read and
// checked as they are asked for. It is read-only once made (but for its
// checks, which are safe for concurrent use), so any number of queries
// read it at once.
//
// Its body stays mapped until Close, and past it while a request holds a
// pin (Pin): a chunk ID the table hands out is a copy, a row's term
// numbers (ReadRows) a slice of the mapping, valid while the request that
// read them holds its pin. Copying them was more than half of reading a
// document's rows in a fresh process at a million chunks, and a fifth of
// its page faults (the heap it grew into: docs/benchmarks.md, issue 30,
// stop 73).
// Reads and Close exclude each other (mu), and a read after Close answers
// nothing and fails the caller's request (Err).
type Table struct {
	mu     sync.RWMutex // held to read the mapping (shared) and to close it
	closed bool
	body   []byte // the mapping

	// pins counts the requests that may read term numbers ReadRows handed
	// out; a Close while some do leaves the unmapping (of unmap) to the
	// last Unpin.
	pinMu sync.Mutex
	pins  int
	unmap []byte

	rows, byID, ids, numSec section  // rows in document order; ID order (see orderSize); ID arena; number arena
	docs, keys              section  // the document table (see docSize), in row order; its key arena
	nums                    []uint32 // numSec, as numbers
	n, nDocs, names         int      // rows; documents; term names
	gens                    int      // the generations a row may name: 1 to gens
	tenants                 []string
	name                    string
	bad                     atomic.Pointer[error] // the first block that failed its check
	// catalog is the lexical partitions' (retrieve.Lexical.Catalog) as the
	// checkpoint holds it: empty for an unpartitioned index.
	catalog []byte
	// fences are the key of the first entry of each run of fenceEvery
	// entries of the ID order.
	fences []uint64
}

// Len returns the number of rows: the chunks the checkpoint holds.
func (t *Table) Len() int { return t.n }

// Catalog returns the lexical partitions' catalog the checkpoint holds
// (empty for an unpartitioned index). The caller must not change it.
func (t *Table) Catalog() []byte { return t.catalog }

// Tenant returns the tenant of row w.
func (t *Table) Tenant(w Row) string { return t.tenants[w.Tenant] }

// failed records err, a block of the body that failed its check: every
// read of t then answers nothing, and the query fails (Err).
func (t *Table) failed(err error) {
	e := fmt.Errorf("%w: %s: %w", storage.ErrCorrupt, t.name, err)
	t.bad.CompareAndSwap(nil, &e)
}

// Err returns the first failed check's error, nil when none failed.
func (t *Table) Err() error {
	if p := t.bad.Load(); p != nil {
		return *p
	}
	return nil
}

// read takes the read lock, false (and the table failed) once closed.
func (t *Table) read() bool {
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		t.failed(fmt.Errorf("closed: the state that read it is gone"))
		return false
	}
	return true
}

// Close closes the table: reads after it fail. It unmaps the body, or,
// while a request holds a pin, leaves that to the last Unpin: what the
// requests in flight hold stays readable until they end.
func (t *Table) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	body := t.body
	t.body, t.nums = nil, nil
	t.rows.data, t.byID.data, t.ids.data, t.numSec.data, t.docs.data, t.keys.data = nil, nil, nil, nil, nil, nil
	t.mu.Unlock()
	t.pinMu.Lock()
	defer t.pinMu.Unlock()
	if t.pins > 0 {
		t.unmap = body
		return nil
	}
	return unmapBody(body)
}

// Pin keeps the body mapped until the matching Unpin, even past Close: a
// request pins the tables it reads for as long as it may read the term
// numbers they hand out. Safe for concurrent use.
func (t *Table) Pin() {
	t.pinMu.Lock()
	t.pins++
	t.pinMu.Unlock()
}

// Unpin releases a Pin; the last one after Close unmaps the body, and so
// the request that ends last on a replaced state pays for the unmapping
// (which Engine.rebase keeps out of the commit otherwise). An error
// unmapping it has no caller left to take it: the mapping is then left to
// the process's end.
func (t *Table) Unpin() {
	t.pinMu.Lock()
	defer t.pinMu.Unlock()
	if t.pins--; t.pins == 0 && t.unmap != nil {
		_ = unmapBody(t.unmap)
		t.unmap = nil
	}
}

// Row is one decoded row.
type Row struct {
	idOff, idLen, Gen, Tenant uint32 // Gen: the committing generation; Tenant: see Table.Tenant
	Line                      storage.Span
	Hash                      [32]byte // the chunk's content hash
	numsOff, NumsLen          uint32
	DocStart, DocLen, Flags   uint32 // the chunk's document's first row and length; NoTerms
	AnchorDay, From, To       int32  // see Chunk
}

// rowAt decodes row i, unchecked.
func (t *Table) rowAt(i int) Row {
	b := t.rows.data[i*rowSize : (i+1)*rowSize]
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	w := Row{idOff: u(0), idLen: u(4), Gen: u(8), Tenant: u(12),
		Line:    storage.Span{Off: int64(binary.LittleEndian.Uint64(b[16:])), Len: int(u(24))},
		numsOff: u(60), NumsLen: u(64), DocStart: u(68), DocLen: u(72), Flags: u(76),
		AnchorDay: int32(u(80)), From: int32(u(84)), To: int32(u(88))}
	copy(w.Hash[:], b[28:60])
	return w
}

// Row returns row i, checked; false after a failed check.
func (t *Table) Row(i int) (Row, bool) {
	if !t.read() {
		return Row{}, false
	}
	defer t.mu.RUnlock()
	return t.row(i)
}

func (t *Table) row(i int) (Row, bool) {
	if err := t.rows.check(i*rowSize, rowSize); err != nil {
		t.failed(fmt.Errorf("rows: %w", err))
		return Row{}, false
	}
	return t.rowAt(i), true
}

// ID returns row w's chunk ID.
func (t *Table) ID(w Row) (string, bool) {
	if !t.read() {
		return "", false
	}
	defer t.mu.RUnlock()
	b, ok := t.id(w)
	return string(b), ok // a copy: see Table
}

// id returns row w's chunk ID, over the mapping.
func (t *Table) id(w Row) ([]byte, bool) {
	if err := t.ids.check(int(w.idOff), int(w.idLen)); err != nil {
		t.failed(fmt.Errorf("chunk IDs: %w", err))
		return nil, false
	}
	return t.ids.data[w.idOff : w.idOff+w.idLen], true
}

// idKey is the key the ID order sorts a chunk ID by: the first 8 bytes
// of its BLAKE3-256. IDs often share long prefixes (a filer's accession
// numbers), and a key no one can aim at keeps a lookup's run of equal keys
// to the one chunk it looks for.
func idKey(id string) uint64 {
	sum := blake3.Sum256(unsafe.Slice(unsafe.StringData(id), len(id)))
	return binary.LittleEndian.Uint64(sum[:8])
}

// orderAt returns the row and the key of the k-th entry of the ID order.
func (t *Table) orderAt(k int) (int, uint64, bool) {
	if err := t.byID.check(orderSize*k, orderSize); err != nil {
		t.failed(fmt.Errorf("ID order: %w", err))
		return 0, 0, false
	}
	e := t.byID.data[orderSize*k:]
	return int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint64(e[4:]), true
}

// Find returns the row number of chunk id, and the row itself (read to
// confirm the ID); false when the table holds no such chunk, or after a
// failed check (Err). The fences say which two runs of fenceEvery entries
// of the ID order hold the first entry of id's key, if any: the last run
// whose first key is below it, and the next one. A binary search of the
// first finds that entry, and the entries of that key, in order, are
// compared with id by their rows' IDs.
func (t *Table) Find(id string) (int, Row, bool) { return t.findKey(id, idKey(id)) }

// findKey is Find with id's key given (tests give keys that collide).
func (t *Table) findKey(id string, key uint64) (int, Row, bool) {
	if !t.read() {
		return 0, Row{}, false
	}
	defer t.mu.RUnlock()
	b := sort.Search(len(t.fences), func(j int) bool { return t.fences[j] >= key })
	lo := max(b-1, 0) * fenceEvery
	failed := false
	k := lo + sort.Search(min(b*fenceEvery, t.n)-lo, func(j int) bool {
		_, got, ok := t.orderAt(lo + j)
		failed = failed || !ok
		return !ok || got >= key
	})
	for ; k < t.n && !failed; k++ {
		i, got, ok := t.orderAt(k)
		if !ok || got != key {
			return 0, Row{}, false
		}
		w, ok := t.row(i)
		if !ok {
			return 0, Row{}, false
		}
		if have, ok := t.id(w); !ok || string(have) == id {
			return i, w, ok
		}
	}
	return 0, Row{}, false
}

// AppendNums appends row w's reranker term numbers to dst (none for a
// purged chunk's); false after a failed check.
func (t *Table) AppendNums(dst []uint32, w Row) ([]uint32, bool) {
	if w.Flags&NoTerms != 0 || w.NumsLen == 0 {
		return dst, true
	}
	if !t.read() {
		return dst, false
	}
	defer t.mu.RUnlock()
	nums, ok := t.numsOf(w)
	return append(dst, nums...), ok
}

// Nums returns row w's reranker term numbers, a copy (nil for a purged
// chunk's); false after a failed check.
func (t *Table) Nums(w Row) ([]uint32, bool) {
	if w.Flags&NoTerms != 0 {
		return nil, true
	}
	if !t.read() {
		return nil, false
	}
	defer t.mu.RUnlock()
	nums, ok := t.numsOf(w)
	if nums == nil {
		return nil, ok
	}
	return slices.Clone(nums), true
}

// numsOf returns row w's reranker term numbers over the mapping: nil for a
// purged chunk's, and when no chunk has a term (as the arena slices to).
func (t *Table) numsOf(w Row) ([]uint32, bool) {
	if w.Flags&NoTerms != 0 {
		return nil, true
	}
	if err := t.numSec.check(4*int(w.numsOff), 4*int(w.NumsLen)); err != nil {
		t.failed(fmt.Errorf("reranker terms: %w", err))
		return nil, false
	}
	if t.nums == nil {
		return nil, true
	}
	return t.nums[w.numsOff : w.numsOff+w.NumsLen], true
}

// ReadRows reads rows start+k, for each k of ks, into ids[k], nums[k]
// and gens[k]: each row's chunk ID, reranker term numbers (nil for a
// purged chunk's, as Nums) and committing generation. The IDs are copied,
// into one allocation; the term numbers are slices of the mapping, capped
// (an append copies), which the caller may read only while it holds a pin
// (Pin) and must not change. It takes the read lock once, where reading
// row by row takes it three times a row. False after a failed check, or
// once the table is closed; what it wrote then is to be discarded.
func (t *Table) ReadRows(start int, ks []int, ids []string, nums [][]uint32, gens []int64) bool {
	if !t.read() {
		return false
	}
	defer t.mu.RUnlock()
	type found struct {
		id   []byte
		nums []uint32
	}
	var buf [32]found
	fs, nID := buf[:0], 0
	for _, k := range ks {
		w, ok := t.row(start + k)
		var f found
		if ok {
			f.id, ok = t.id(w)
		}
		if ok {
			f.nums, ok = t.numsOf(w)
		}
		if !ok {
			return false
		}
		gens[k] = int64(w.Gen)
		fs, nID = append(fs, f), nID+len(f.id)
	}
	idArena := make([]byte, nID)
	for i, k := range ks {
		f := fs[i]
		n := copy(idArena, f.id) // never empty (validRows)
		ids[k], idArena = unsafe.String(&idArena[0], n), idArena[n:]
		nums[k] = f.nums[:len(f.nums):len(f.nums)]
	}
	return true
}

// DocEntry is one document of a checkpoint's document table: its key and
// its rows, [First, First+Len).
type DocEntry struct {
	Key            string
	First, Len     int
	keyOff, keyLen int
}

// Docs returns the number of documents the table holds.
func (t *Table) Docs() int { return t.nDocs }

// docAt decodes entry k of the document table, unchecked and without its key.
func (t *Table) docAt(k int) DocEntry {
	e := t.docs.data[k*docSize:]
	u := func(off int) int { return int(binary.LittleEndian.Uint32(e[off:])) }
	return DocEntry{First: u(0), Len: u(4), keyOff: u(8), keyLen: u(12)}
}

// Doc returns document k (0 <= k < Docs), in row order, which is key
// order; false after a failed check.
func (t *Table) Doc(k int) (DocEntry, bool) {
	if !t.read() {
		return DocEntry{}, false
	}
	defer t.mu.RUnlock()
	return t.doc(k)
}

func (t *Table) doc(k int) (DocEntry, bool) {
	if err := t.docs.check(k*docSize, docSize); err != nil {
		t.failed(fmt.Errorf("document table: %w", err))
		return DocEntry{}, false
	}
	e := t.docAt(k)
	if err := t.keys.check(e.keyOff, e.keyLen); err != nil {
		t.failed(fmt.Errorf("document keys: %w", err))
		return DocEntry{}, false
	}
	e.Key = string(t.keys.data[e.keyOff : e.keyOff+e.keyLen]) // a copy: see Table
	return e, true
}

// FindDoc returns the document of key key; false when the table holds
// none, or after a failed check (Err).
func (t *Table) FindDoc(key string) (DocEntry, bool) {
	if !t.read() {
		return DocEntry{}, false
	}
	defer t.mu.RUnlock()
	failed := false
	k := sort.Search(t.nDocs, func(k int) bool {
		e, ok := t.doc(k)
		failed = failed || !ok
		return !ok || e.Key >= key
	})
	if failed || k == t.nDocs {
		return DocEntry{}, false
	}
	e, ok := t.doc(k)
	return e, ok && e.Key == key
}

// Name returns the checkpoint's file name, as errors give it.
func (t *Table) Name() string { return t.name }
