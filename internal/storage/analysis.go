package storage

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/evpack/evpack/internal/fsutil"
)

// An analysis file keeps what the analyzers made of one batch's chunks, so
// that Open reads it instead of analyzing every stored text again (most of
// what Open cost). It is derived data, not part of the log: a function of
// the batch file and of the analyzers named in its identity, checked against
// both before use, and rebuilt from the batch when either differs. A batch
// a purge rewrote has none (the terms of purged text must go with the text).

// AnalysisFormat is the magic and version of an analysis file.
const AnalysisFormat = "evpack-analysis/1\n"

// AnalysisName is the file name of generation gen's analysis file.
func AnalysisName(gen int64) string { return fmt.Sprintf("%08d.analysis", gen) }

// Analyzed is what the analyzers made of one chunk's text.
type Analyzed struct {
	ID     string
	Tokens int      // analyzed lexical tokens (BM25's field length)
	Lex    []string // distinct lexical terms, in the analyzer's order
	Rerank []string // reranker terms in text order
}

// Analysis is the content of an analysis file: the analyzers' identity, the
// checksum of the batch file it was made from, and one entry per chunk in
// the batch's order.
type Analysis struct {
	Identity string
	Batch    string
	Chunks   []Analyzed
}

// EncodeAnalysis returns the sealed bytes of a. Terms are stored once, in a
// table in first-seen order; entries refer to them by index.
func EncodeAnalysis(a Analysis) []byte {
	idx := map[string]uint64{}
	var table []string
	ref := func(t string) uint64 {
		i, ok := idx[t]
		if !ok {
			i = uint64(len(table))
			idx[t] = i
			table = append(table, t)
		}
		return i
	}
	// Sized up front (most term numbers take a byte or two), not grown by
	// doubling: an analysis file is a few bytes per token of a batch.
	size := 0
	for _, c := range a.Chunks {
		size += len(c.ID) + 16 + 2*(len(c.Lex)+len(c.Rerank))
	}
	body := make([]byte, 0, size)
	for _, c := range a.Chunks {
		body = appendString(body, c.ID)
		body = binary.AppendUvarint(body, uint64(c.Tokens))
		for _, list := range [][]string{c.Lex, c.Rerank} {
			body = binary.AppendUvarint(body, uint64(len(list)))
			for _, t := range list {
				body = binary.AppendUvarint(body, ref(t))
			}
		}
	}
	size = len(AnalysisFormat) + len(a.Identity) + len(a.Batch) + 40 + len(body) + 32 // the checksum
	for _, t := range table {
		size += len(t) + 2
	}
	out := append(make([]byte, 0, size), AnalysisFormat...)
	out = appendString(out, a.Identity)
	out = appendString(out, a.Batch)
	out = binary.AppendUvarint(out, uint64(len(table)))
	for _, t := range table {
		out = appendString(out, t)
	}
	out = binary.AppendUvarint(out, uint64(len(a.Chunks)))
	out = append(out, body...)
	return fsutil.Seal(out)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AnalysisTable is an analysis file as it is stored: its terms once, in a
// table, and each chunk's terms as indices into it. Open reads this form:
// it makes no string per term of every chunk, only to drop it again.
type AnalysisTable struct {
	Identity string
	Batch    string
	Terms    []string
	Chunks   []TableEntry
}

// TableEntry is one chunk of an AnalysisTable: Analyzed with its terms as
// indices into the table (each checked to be in range).
type TableEntry struct {
	ID          string
	Tokens      int
	Lex, Rerank []uint32
}

// DecodeAnalysis checks and parses an analysis file; name is used in errors.
func DecodeAnalysis(name string, raw []byte) (Analysis, error) {
	t, err := DecodeAnalysisTable(name, raw)
	if err != nil {
		return Analysis{}, err
	}
	return t.analysis(), nil
}

// DecodeAnalysisTable checks and parses an analysis file into its stored
// form; name is used in errors. Every chunk's indices share one array.
func DecodeAnalysisTable(name string, raw []byte) (AnalysisTable, error) {
	body, err := fsutil.Unseal(raw, AnalysisFormat, 0)
	if err != nil {
		return AnalysisTable{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	r := reader{b: body}
	var t AnalysisTable
	t.Identity, t.Batch = r.str(), r.str()
	t.Terms = make([]string, r.count(len(body)))
	for i := range t.Terms {
		t.Terms[i] = r.str()
	}
	t.Chunks = make([]TableEntry, r.count(len(body)))
	// Each index takes a byte at least: what is left of the body bounds
	// their number, and the array is not grown (which would move the
	// stretches already handed out).
	arena := make([]uint32, 0, len(body)-r.off)
	list := func() []uint32 {
		n := r.count(cap(arena) - len(arena))
		start := len(arena)
		for range n {
			i := r.uvarint()
			if i >= uint64(len(t.Terms)) {
				r.fail()
				break
			}
			arena = append(arena, uint32(i))
		}
		return arena[start:len(arena):len(arena)]
	}
	for i := range t.Chunks {
		c := &t.Chunks[i]
		c.ID = r.str()
		c.Tokens = r.count(1 << 40)
		c.Lex = list()
		c.Rerank = list()
	}
	if r.bad || r.off != len(body) {
		return AnalysisTable{}, fmt.Errorf("%w: %s: malformed at byte %d of %d", ErrCorrupt, name, len(AnalysisFormat)+r.off, len(raw))
	}
	return t, nil
}

// reader reads the varint-framed fields of a sealed body; the first
// malformed field sets bad, and every later read returns zero values.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) fail() { r.bad, r.off = true, len(r.b) }

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return v
}

// count reads a length no larger than limit (a bound from the file's size,
// so that a corrupt length cannot make a huge allocation).
func (r *reader) count(limit int) int {
	v := r.uvarint()
	if v > uint64(limit) {
		r.fail()
		return 0
	}
	return int(v)
}

func (r *reader) str() string {
	v := r.uvarint() // the remaining length is known only after the varint
	if r.bad || v > uint64(len(r.b)-r.off) {
		r.fail()
		return ""
	}
	n := int(v)
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

// ReadAnalysis reads the analysis file of batch b, when the manifest names
// one, and checks it against its checksum there and against the batch it
// was made from. It returns false when b has none.
func (d *Dir) ReadAnalysis(b Batch) (Analysis, bool, error) {
	t, ok, err := d.ReadAnalysisTable(b)
	if !ok || err != nil {
		return Analysis{}, ok, err
	}
	return t.analysis(), true, nil
}

// ReadAnalysisTable is ReadAnalysis, in the stored form.
func (d *Dir) ReadAnalysisTable(b Batch) (AnalysisTable, bool, error) {
	if b.Analysis == "" {
		return AnalysisTable{}, false, nil
	}
	name := filepath.Join(d.path, ChunksDir, b.Analysis)
	raw, err := d.readSummed(name, b.AnalysisSum)
	if err != nil {
		return AnalysisTable{}, false, err
	}
	t, err := DecodeAnalysisTable(name, raw)
	if err != nil {
		return AnalysisTable{}, false, err
	}
	if t.Batch != b.Sum || len(t.Chunks) != b.Chunks {
		return AnalysisTable{}, false, fmt.Errorf("%w: %s was made from a batch of %d chunks hashing to %s, the manifest's %s has %d and hashes to %s",
			ErrCorrupt, name, len(t.Chunks), t.Batch, b.File, b.Chunks, b.Sum)
	}
	return t, true, nil
}

// analysis returns t with each chunk's terms as strings.
func (t *AnalysisTable) analysis() Analysis {
	a := Analysis{Identity: t.Identity, Batch: t.Batch, Chunks: make([]Analyzed, len(t.Chunks))}
	for i, e := range t.Chunks {
		a.Chunks[i] = Analyzed{ID: e.ID, Tokens: e.Tokens, Lex: t.strings(e.Lex), Rerank: t.strings(e.Rerank)}
	}
	return a
}

// strings returns the terms at indices idx.
func (t *AnalysisTable) strings(idx []uint32) []string {
	out := make([]string, len(idx))
	for i, k := range idx {
		out[i] = t.Terms[k]
	}
	return out
}
