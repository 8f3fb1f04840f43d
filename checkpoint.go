package evpack

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/storage"
)

// A checkpoint is a generation's state in a form Open can use without
// reading a batch file (docs/design.md, "What Open costs"). Each commit
// writes one beside its batch; it is derived data, a function of the log
// and of the analyzers named in it, and Check rebuilds it from the batch
// files and compares the bytes.
//
// It holds two halves. The state's figures (per-tenant series, term names,
// entity names, facts, purges, bounds, commit times), which grow with the
// vocabulary and the tenants, are decoded at Open. The chunks are rows of
// fixed width in document order (a document version's chunks adjacent),
// with their IDs and reranker term numbers in arenas and the row numbers in
// chunk-ID order for lookups: Open decodes none of it, and a query reads the
// rows it needs (rowTable). A chunk's own fields stay in its batch file,
// read when a query needs them and checked against the content hash its
// row holds (state.chunkOf).
//
// Invariant: decodeCheckpoint(encodeCheckpoint(st)) answers every query as
// st does (TestCheckpointAnswersAsTheLog), and encodeCheckpoint is a
// function of the state alone: no map order, no clock.

// checkpointFormat is the magic and version of a checkpoint file.
const checkpointFormat = "evpack-state/1\n"

// rowSize is the width of a chunk's row: ID (offset and length in the ID
// arena), committing generation, tenant (index into the row tenants), line
// in its batch file (offset, length), content hash, reranker term numbers
// (offset and count in the number arena), document (first row and count)
// and flags.
const rowSize = 4 + 4 + 4 + 4 + 8 + 4 + 32 + 4 + 4 + 4 + 4 + 4

// rowNoTerms flags a purged chunk: its terms went with its text.
const rowNoTerms = 1

// encodeCheckpoint returns the sealed checkpoint of st, a state built from
// batches (every chunk in memory, with its line), for analyzers identity.
func encodeCheckpoint(st *state, identity string) ([]byte, error) {
	w := &ckptWriter{b: append(make([]byte, 0, 1<<16), checkpointFormat...)}
	w.str(identity)
	w.int(st.gen)
	w.uint(uint64(len(st.commits)))
	for _, t := range st.commits {
		w.int(t.Unix())
	}
	w.int(st.stats.Docs)
	w.int(st.stats.Tokens)
	b := st.bounds
	w.int(b.MaxAnchorDay)
	w.bool(b.Undated)
	w.int(b.MaxFrom)
	w.int(b.MinTo)
	w.int(b.MinRetired)
	tenants := evidence.SortedKeys(b.Tenants)
	w.uint(uint64(len(tenants)))
	for _, t := range tenants {
		w.str(t)
		w.int(int64(b.Tenants[t]))
	}
	// Terms are numbered anew, in order of first use in the rows: the
	// state's numbers come from its history (a term of a purged text keeps
	// its number, though no chunk has it any longer), a checkpoint's only
	// from what it holds, so that the state the log gives at Open writes
	// the same bytes (Check compares them) and no purged term is written.
	canon, names := canonicalTerms(st)
	w.uint(uint64(len(names)))
	for _, n := range names {
		w.str(n)
	}
	keys := evidence.SortedKeys(st.entities)
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		w.str(k)
		w.uint(uint64(len(st.entities[k])))
		for _, en := range st.entities[k] {
			w.str(en.name)
			w.int(en.gen)
		}
	}
	w.uint(uint64(len(st.factLog)))
	for _, fa := range st.factLog {
		f := fa.f
		w.int(fa.gen)
		w.str(string(f.Kind))
		w.str(f.ChunkID)
		w.date(f.End)
		w.int(f.Anchor.Unix())
		w.str(f.By)
	}
	w.uint(uint64(len(st.purgeLog)))
	for _, id := range st.purgeLog {
		p := st.purged[id]
		w.str(id)
		w.int(p.gen)
		w.str(p.reason)
		w.str(p.hash)
		w.int(p.r.Generation)
		w.int(int64(p.r.Tokens))
		w.int(int64(p.r.Terms))
	}
	tenantNames := st.tenantNames()
	w.uint(uint64(len(tenantNames)))
	for _, name := range tenantNames {
		ts := st.tenants[name]
		w.str(name)
		for _, s := range []series{ts.docs, ts.tokens, ts.facts, ts.purges, ts.rrTerms} {
			w.series(s)
		}
		w.uint(uint64(len(ts.digest)))
		for _, lp := range ts.digest {
			w.int(lp.gen)
			for _, l := range lp.l {
				w.u64(l)
			}
		}
		for _, df := range []map[string]series{ts.lexDF, ts.rrDF} {
			terms := evidence.SortedKeys(df)
			w.uint(uint64(len(terms)))
			for _, t := range terms {
				w.str(t)
				w.series(df[t])
			}
		}
	}
	if err := w.rows(st, tenantNames, canon); err != nil {
		return nil, err
	}
	return fsutil.Seal(w.b), nil
}

// canonicalTerms returns the checkpoint's number of each of st's term
// numbers (noNumber for a term no chunk holds) and the terms by checkpoint
// number: in order of first use, chunk by chunk in row order.
func canonicalTerms(st *state) ([]uint32, []string) {
	canon := make([]uint32, len(st.names))
	for i := range canon {
		canon[i] = noNumber
	}
	var names []string
	for _, k := range evidence.SortedKeys(st.docOrder) {
		for _, ns := range st.docOrder[k].nums {
			for _, n := range ns {
				if canon[n] == noNumber {
					canon[n] = uint32(len(names))
					names = append(names, st.names[n])
				}
			}
		}
	}
	return canon, names
}

// rows appends the chunks' rows (see rowSize), the row numbers in chunk-ID
// order, the ID arena and the number arena (aligned to four bytes from the
// file's start, so that Open can use it in place), the terms numbered by
// canon.
func (w *ckptWriter) rows(st *state, tenants []string, canon []uint32) error {
	docs := evidence.SortedKeys(st.docOrder)
	var ids []string
	for _, k := range docs {
		ids = append(ids, st.docOrder[k].ids...)
	}
	if len(ids) != len(st.docPlace) {
		return fmt.Errorf("evpack: checkpoint: %d chunks in documents, %d placed", len(ids), len(st.docPlace))
	}
	w.uint(uint64(len(ids)))
	rows := make([]byte, 0, len(ids)*rowSize)
	var arena []byte
	var nums []uint32
	row := 0
	for _, k := range docs {
		d := st.docOrder[k]
		for i, id := range d.ids {
			p, c := st.docPlace[id], st.chunks[id]
			hash, ok := strings.CutPrefix(c.ContentHash, evidence.HashPrefix)
			sum, err := hex.DecodeString(hash)
			if !ok || err != nil || len(sum) != 32 {
				return fmt.Errorf("evpack: checkpoint: chunk %q: content hash %q", id, c.ContentHash)
			}
			t, _ := slices.BinarySearch(tenants, c.Tenant)
			var flags uint32
			if _, purged := st.purged[id]; purged { // nil in memory, or none read back: the same
				flags |= rowNoTerms
			}
			rows = binary.LittleEndian.AppendUint32(rows, uint32(len(arena)))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(len(id)))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(p.gen))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(t))
			rows = binary.LittleEndian.AppendUint64(rows, uint64(p.line.Off))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(p.line.Len))
			rows = append(rows, sum...)
			rows = binary.LittleEndian.AppendUint32(rows, uint32(len(nums)))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(len(d.nums[i])))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(row))
			rows = binary.LittleEndian.AppendUint32(rows, uint32(len(d.ids)))
			rows = binary.LittleEndian.AppendUint32(rows, flags)
			arena = append(arena, id...)
			for _, n := range d.nums[i] {
				nums = append(nums, canon[n])
			}
		}
		row += len(d.ids)
	}
	if len(arena) > 1<<32-1 || len(nums) > 1<<32-1 || st.gen > 1<<32-1 {
		return fmt.Errorf("evpack: checkpoint: %d bytes of chunk IDs, %d reranker terms, generation %d: more than a checkpoint holds", len(arena), len(nums), st.gen)
	}
	byID := make([]uint32, len(ids))
	for i := range byID {
		byID[i] = uint32(i)
	}
	slices.SortFunc(byID, func(a, b uint32) int { return strings.Compare(ids[a], ids[b]) })
	w.b = append(w.b, rows...)
	for _, r := range byID {
		w.b = binary.LittleEndian.AppendUint32(w.b, r)
	}
	w.uint(uint64(len(arena)))
	w.b = append(w.b, arena...)
	w.uint(uint64(len(nums)))
	for len(w.b)%4 != 0 {
		w.b = append(w.b, 0)
	}
	for _, n := range nums {
		w.b = binary.LittleEndian.AppendUint32(w.b, n)
	}
	return nil
}

// ckptWriter appends a checkpoint's fields.
type ckptWriter struct{ b []byte }

func (w *ckptWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *ckptWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *ckptWriter) u64(v uint64)  { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *ckptWriter) str(s string)  { w.uint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *ckptWriter) bool(v bool) {
	if v {
		w.uint(1)
	} else {
		w.uint(0)
	}
}

// date writes d as its day number plus one, 0 for no date.
func (w *ckptWriter) date(d asof.Date) {
	if d.IsZero() {
		w.uint(0)
		return
	}
	w.uint(1)
	w.int(d.Days())
}

func (w *ckptWriter) series(s series) {
	w.uint(uint64(len(s)))
	for _, p := range s {
		w.int(p.gen)
		w.int(p.n)
	}
}

// ckptReader reads a checkpoint's fields; the first malformed one sets err,
// and every later read returns zero values.
type ckptReader struct {
	b   []byte
	off int
	err error
}

func (r *ckptReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, len(checkpointFormat)+r.off)
	}
	r.off = len(r.b)
}

func (r *ckptReader) uint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad number")
		return 0
	}
	r.off += n
	return v
}

func (r *ckptReader) int() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad number")
		return 0
	}
	r.off += n
	return v
}

// count reads a length of items each at least min bytes long: bounded by
// what is left, so that a corrupt length cannot make a huge allocation.
func (r *ckptReader) count(min int) int {
	v := r.uint()
	if v > uint64((len(r.b)-r.off)/max(min, 1)) {
		r.fail("bad count")
		return 0
	}
	return int(v)
}

func (r *ckptReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail("truncated")
		return nil
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *ckptReader) str() string { return string(r.bytes(r.count(1))) }

func (r *ckptReader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *ckptReader) bool() bool { return r.uint() != 0 }

func (r *ckptReader) date() asof.Date {
	if r.uint() == 0 {
		return asof.Date{}
	}
	return asof.DateFromDays(r.int())
}

func (r *ckptReader) series() series {
	s := make(series, r.count(2))
	for i := range s {
		s[i] = point{gen: r.int(), n: r.int()}
	}
	return s
}

// decodeCheckpoint checks and parses checkpoint raw (name is used in
// errors) into a state whose chunks are read through a row table over
// batch files files (by generation) of d. ok is false, with no error, when
// the checkpoint was made by other analyzers than identity.
func decodeCheckpoint(name string, raw []byte, identity string, d *storage.Dir, files []string) (st *state, ok bool, err error) {
	body, err := fsutil.Unseal(raw, checkpointFormat, 0)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	r := &ckptReader{b: body}
	if r.str() != identity {
		return nil, false, r.err
	}
	st = newState()
	st.gen = r.int()
	st.commits = make([]time.Time, r.count(1))
	for i := range st.commits {
		st.commits[i] = time.Unix(r.int(), 0).UTC()
	}
	st.stats.Docs, st.stats.Tokens = r.int(), r.int()
	b := &st.bounds
	b.MaxAnchorDay, b.Undated, b.MaxFrom, b.MinTo, b.MinRetired = r.int(), r.bool(), r.int(), r.int(), r.int()
	for range r.count(2) {
		t := r.str()
		b.Tenants[t] = int(r.int())
	}
	st.names = make([]string, r.count(1))
	for i := range st.names {
		st.names[i] = r.str()
		st.intern[st.names[i]] = uint32(i)
	}
	for range r.count(2) {
		k := r.str()
		list := make([]entityName, r.count(2))
		for i := range list {
			list[i] = entityName{name: r.str(), gen: r.int()}
		}
		st.entities[k] = list
	}
	st.factLog = make([]factAt, r.count(6))
	for i := range st.factLog {
		gen := r.int()
		f := &evidence.Fact{Kind: evidence.FactKind(r.str()), ChunkID: r.str(), End: r.date(), Anchor: time.Unix(r.int(), 0).UTC(), By: r.str()}
		if r.err == nil {
			if err := f.Prepare(); err != nil {
				r.fail(err.Error())
			}
		}
		st.factLog[i] = factAt{gen: gen, f: f}
		st.facts[f.ChunkID] = append(st.facts[f.ChunkID], st.factLog[i])
	}
	st.purgeLog = make([]string, r.count(6))
	for i := range st.purgeLog {
		id := r.str()
		st.purgeLog[i] = id
		st.purged[id] = purgeAt{gen: r.int(), reason: r.str(), hash: r.str(), r: storage.Redaction{Generation: r.int(), Tokens: int(r.int()), Terms: int(r.int())}}
	}
	tenants := make([]string, r.count(1))
	for i := range tenants {
		tenants[i] = r.str()
		ts := newTenantStats()
		ts.docs, ts.tokens, ts.facts, ts.purges, ts.rrTerms = r.series(), r.series(), r.series(), r.series(), r.series()
		ts.digest = make([]lanePoint, r.count(33))
		for j := range ts.digest {
			ts.digest[j].gen = r.int()
			for k := range ts.digest[j].l {
				ts.digest[j].l[k] = r.u64()
			}
		}
		for _, df := range []map[string]series{ts.lexDF, ts.rrDF} {
			for range r.count(3) {
				t := r.str()
				df[t] = r.series()
			}
		}
		st.tenants[tenants[i]] = ts
	}
	st.rows = r.rowTable(d, files, tenants, len(st.names), raw)
	if r.err == nil && r.off != len(r.b) {
		r.fail("data after the end")
	}
	if r.err != nil {
		return nil, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, r.err)
	}
	return st, true, nil
}

// rowTable reads the rows half of a checkpoint (see rows) and checks that
// every reference in it stays inside the file. names counts the term
// names; raw is the whole file, whose number arena starts four-aligned.
func (r *ckptReader) rowTable(d *storage.Dir, files, tenants []string, names int, raw []byte) *rowTable {
	n := r.count(rowSize + 4)
	t := &rowTable{dir: d, files: files, tenants: tenants, n: n}
	t.rows = r.bytes(n * rowSize)
	t.byID = r.bytes(n * 4)
	t.ids = r.bytes(r.count(1))
	m := r.count(4)
	for r.err == nil && (len(checkpointFormat)+r.off)%4 != 0 {
		r.bytes(1)
	}
	arena := r.bytes(4 * m)
	if r.err != nil {
		return nil
	}
	if m > 0 {
		if nativeLittleEndian {
			t.nums = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(arena))), m)
		} else {
			t.nums = make([]uint32, m)
			for i := range t.nums {
				t.nums[i] = binary.LittleEndian.Uint32(arena[4*i:])
			}
		}
	}
	for i := range n {
		w := t.row(i)
		switch {
		case int(w.idOff)+int(w.idLen) > len(t.ids) || w.idLen == 0:
			r.fail(fmt.Sprintf("row %d: chunk ID outside the arena", i))
		case int(w.tenant) >= len(tenants) || int(w.gen) < 1 || int(w.gen) > len(files):
			r.fail(fmt.Sprintf("row %d: tenant %d, generation %d", i, w.tenant, w.gen))
		case int(w.numsOff)+int(w.numsLen) > m:
			r.fail(fmt.Sprintf("row %d: reranker terms outside the arena", i))
		case int(w.docStart) > i || i >= int(w.docStart)+int(w.docLen) || int(w.docStart)+int(w.docLen) > n:
			r.fail(fmt.Sprintf("row %d: document rows %d+%d", i, w.docStart, w.docLen))
		}
		if r.err != nil {
			return nil
		}
	}
	for i := range n {
		if int(binary.LittleEndian.Uint32(t.byID[4*i:])) >= n || i > 0 && t.idAt(i-1) >= t.idAt(i) {
			r.fail(fmt.Sprintf("chunk-ID order broken at %d", i))
			return nil
		}
	}
	for _, v := range t.nums {
		if int(v) >= names {
			r.fail(fmt.Sprintf("term number %d of %d", v, names))
			return nil
		}
	}
	t.raw = raw
	return t
}

// nativeLittleEndian: the number arena (little-endian) can be used in place.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rowTable is the chunks' half of a state read from a checkpoint. It is
// read-only once made (but for its caches, which are safe for concurrent
// use), so any number of queries read it at once.
type rowTable struct {
	mu     sync.Mutex
	open   map[string]*os.File // batch files read so far, kept open until close
	closed bool
	docs   sync.Map // first row of a document -> *docView, made on first use

	raw     []byte // the checkpoint: ids and nums point into it
	rows    []byte // n rows of rowSize bytes, in document order
	byID    []byte // n row numbers (uint32), in chunk-ID order
	ids     []byte
	nums    []uint32
	n       int
	tenants []string
	dir     *storage.Dir
	files   []string // batch file of generation g at files[g-1]
}

// row is one decoded row.
type row struct {
	idOff, idLen, gen, tenant uint32
	line                      storage.Span
	hash                      []byte
	numsOff, numsLen          uint32
	docStart, docLen, flags   uint32
}

func (t *rowTable) row(i int) row {
	b := t.rows[i*rowSize : (i+1)*rowSize]
	u := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	return row{idOff: u(0), idLen: u(4), gen: u(8), tenant: u(12),
		line:    storage.Span{Off: int64(binary.LittleEndian.Uint64(b[16:])), Len: int(u(24))},
		hash:    b[28:60],
		numsOff: u(60), numsLen: u(64), docStart: u(68), docLen: u(72), flags: u(76)}
}

// id returns row i's chunk ID, a string over the checkpoint's bytes (never
// changed once read).
func (t *rowTable) id(i int) string {
	b := t.rows[i*rowSize:]
	off, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	return unsafe.String(&t.ids[off], n)
}

// idAt returns the chunk ID of the k-th row in chunk-ID order.
func (t *rowTable) idAt(k int) string {
	return t.id(int(binary.LittleEndian.Uint32(t.byID[4*k:])))
}

// find returns the row of chunk id.
func (t *rowTable) find(id string) (int, bool) {
	k, ok := sort.Find(t.n, func(k int) int { return strings.Compare(id, t.idAt(k)) })
	if !ok {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(t.byID[4*k:])), true
}

// nums returns row i's reranker term numbers (nil for a purged chunk's).
func (t *rowTable) numsOf(w row) []uint32 {
	if w.flags&rowNoTerms != 0 {
		return nil
	}
	return t.nums[w.numsOff : w.numsOff+w.numsLen : w.numsOff+w.numsLen]
}
