package retrieve

import (
	"fmt"
	"math"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/numeric"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Why the eligibility filter reads a segment's numbers from arrays.
//
// Most eligibility clauses compare one number of a chunk's document with
// the request's day or generation: its anchor day, validity start and end,
// retirement day, generation, first fact's generation. As bleve queries,
// each such clause is a numeric range: per partition and per request, its
// searcher looks up the range's prefix-coded terms in every segment's
// dictionary and ORs their postings, before the first candidate is checked.
// On a random day that building was most of what the filter cost after its
// clauses were advanced one by one (docs/benchmarks.md, issue 30). A
// segment never changes once written, so the numbers of its documents are
// read once into an array per field (column), and a clause on them is a
// comparison per candidate.
//
// Invariant: a column answers (column.at), for each document of its
// segment by its number there, the value bleve indexed for the field at
// full precision (shift 0), or NaN where the document has none; a test on
// a column (colTest) holds exactly where bleve's numeric range query of
// the same bounds holds (TestPrunedEqualsExhaustive compares the two over
// random requests).

// colTest is a clause a document's number decides: the field's value at
// most v (le), or above v. A document without the field fails it, as it
// matches no numeric range.
type colTest struct {
	field string
	le    bool
	v     float64
	col   int // the field's place in the filter's columns (eligibleFilter.cols)
}

// holds reports whether x, a column's value, passes t (NaN fails both).
func (t colTest) holds(x float64) bool {
	if t.le {
		return x <= t.v
	}
	return x > t.v
}

// colClause is a clause decided by numbers alone: it holds a document when
// every test in all holds and no test in none does.
type colClause struct {
	all, none []colTest
}

// holds reports whether c holds document local of a segment whose columns
// are cols (each test's at its col).
func (c *colClause) holds(cols []column, local uint64) bool {
	for _, t := range c.all {
		if !t.holds(cols[t.col].at(local)) {
			return false
		}
	}
	for _, t := range c.none {
		if t.holds(cols[t.col].at(local)) {
			return false
		}
	}
	return true
}

// column is one field's values in one segment (see the invariant above):
// empty when no document of the segment holds the field (a corpus without
// facts has no retirement days), so that it costs nothing. Its values are
// held in four bytes each (f32) where every one of them is a float32
// exactly, as the days and generations evpack indexes are (integers far
// below 2^24), and in eight (f64) otherwise: a column's test compares the
// value widened back, which is the value bleve indexed, so the verdicts
// are the same bits either way. At a million chunks the Go heap holds 17
// MiB less, and the resident set after 1,000 questions is 680 MiB against
// 712 (docs/benchmarks.md, issue 30, stop 76).
//
// Invariant: at most one of f32 and f64 is non-empty.
type column struct {
	f32 []float32
	f64 []float64
}

// len returns the number of documents c has a place for: those past it
// hold no value.
func (c column) len() int { return len(c.f32) + len(c.f64) }

// at returns document local's value, NaN where it has none.
func (c column) at(local uint64) float64 {
	switch {
	case local < uint64(len(c.f32)):
		return float64(c.f32[local])
	case local < uint64(len(c.f64)):
		return c.f64[local]
	}
	return math.NaN()
}

// columnBuilder makes a column of n documents, in four bytes a value
// until a value needs eight (see column).
type columnBuilder struct {
	n   int
	col column
}

// set gives document local, below n, value v.
func (b *columnBuilder) set(local uint64, v float64) {
	if b.col.len() == 0 {
		b.col.f32 = make([]float32, b.n)
		for i := range b.col.f32 {
			b.col.f32[i] = float32(math.NaN())
		}
	}
	if b.col.f32 != nil {
		if f := float32(v); float64(f) == v {
			b.col.f32[local] = f
			return
		}
		b.col.f64 = make([]float64, len(b.col.f32))
		for i, f := range b.col.f32 {
			b.col.f64[i] = float64(f) // NaN stays NaN
		}
		b.col.f32 = nil
	}
	b.col.f64[local] = v
}

// columns caches the columns of a partition's segments, by segment and
// field. When a snapshot brings a segment it has not seen, it drops those
// that snapshot no longer holds (a merge replaced them); a search still on
// an older snapshot reads its own again. A read holds the lock, so
// requests that reach a cold partition at once read each column once.
//
// Once it has read a segment's columns, it hands back the pages of the
// segment's file it holds mapped (releaseSegment). Reading a column
// touches the numeric fields' dictionaries and postings, which no request
// reads again while the column is cached, and a mapped page stays in the
// resident set until the segment is closed: at a million chunks, 41 MiB
// of the resident set after 1,000 questions, and 200 MiB after Preload
// read every partition's (docs/benchmarks.md, issue 30, stop 75). A page
// the request reads next (its terms' postings) is mapped again from the
// page cache.
type columns struct {
	mu   sync.Mutex
	segs map[segment.Segment]map[string]column
}

// forSnapshot returns, for each segment of snap in order, the columns of
// fields in their order, reading those not cached yet. snap must be open
// (the caller's): a segment whose columns it read has its pages released
// while snap holds it.
func (c *columns) forSnapshot(snap *scorch.IndexSnapshot, fields []string) ([][]column, error) {
	segs := snap.Segments()
	out := make([][]column, len(segs))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil {
		c.segs = map[segment.Segment]map[string]column{}
	}
	fresh := false
	for i, ss := range segs {
		s := ss.Segment()
		cols := c.segs[s]
		if cols == nil {
			cols, fresh = map[string]column{}, true
			c.segs[s] = cols
		}
		out[i] = make([]column, len(fields))
		read := false
		for k, f := range fields {
			col, ok := cols[f]
			if !ok {
				var err error
				if col, err = readColumn(s, f); err != nil {
					return nil, err
				}
				cols[f], read = col, true
			}
			out[i][k] = col
		}
		if read {
			releaseSegment(s)
		}
	}
	if fresh { // a segment appeared: those no longer in the snapshot went with a merge
		keep := make(map[segment.Segment]bool, len(segs))
		for _, ss := range segs {
			keep[ss.Segment()] = true
		}
		for s := range c.segs {
			if !keep[s] {
				delete(c.segs, s)
			}
		}
	}
	return out, nil
}

// omitCounter is a dictionary (zapx's) that iterates its terms without
// reading each one's postings to count them.
type omitCounter interface {
	AutomatonIteratorOmitCount(a segment.Automaton, startKeyInclusive, endKeyExclusive []byte) segment.DictionaryIterator
}

// readColumn reads field's full-precision terms in s and the documents
// holding each. A partition's first request reads its columns, hundreds
// of terms a field (a day each), and the iterator of a zapx dictionary
// reads each term's postings to count them, which readColumn then reads
// again: where the dictionary can, its terms are iterated without the
// count.
func readColumn(s segment.Segment, field string) (column, error) {
	b := columnBuilder{n: int(s.Count())}
	d, err := s.Dictionary(field)
	if err != nil {
		return column{}, fmt.Errorf("%w: column %s: %v", ErrLexical, field, err)
	}
	// Terms of shift 0 start with ShiftStartInt64 and nothing else does.
	lo, hi := []byte{numeric.ShiftStartInt64}, []byte{numeric.ShiftStartInt64 + 1}
	var it segment.DictionaryIterator
	if oc, ok := d.(omitCounter); ok {
		it = oc.AutomatonIteratorOmitCount(nil, lo, hi)
	} else {
		it = d.AutomatonIterator(nil, lo, hi)
	}
	var pl segment.PostingsList
	var pi segment.PostingsIterator
	var term []byte
	for {
		e, err := it.Next()
		if err != nil {
			return column{}, fmt.Errorf("%w: column %s: %v", ErrLexical, field, err)
		}
		if e == nil {
			return b.col, nil
		}
		i64, err := numeric.PrefixCoded(e.Term).Int64()
		if err != nil {
			return column{}, fmt.Errorf("%w: column %s: term %x: %v", ErrLexical, field, e.Term, err)
		}
		v := numeric.Int64ToFloat64(i64)
		term = append(term[:0], e.Term...)
		if pl, err = d.PostingsList(term, nil, pl); err != nil {
			return column{}, fmt.Errorf("%w: column %s: %v", ErrLexical, field, err)
		}
		pi = pl.Iterator(false, false, false, pi)
		for {
			p, err := pi.Next()
			if err != nil {
				return column{}, fmt.Errorf("%w: column %s: %v", ErrLexical, field, err)
			}
			if p == nil {
				break
			}
			if n := p.Number(); n < uint64(b.n) {
				b.set(n, v)
			}
		}
	}
}

// Why a filter of columns alone becomes bits.
//
// On a random day many of a partition's versions are not in force, and
// the pruned search used to step each essential term to every such
// version and ask the filter of it, only to step on: at a million chunks,
// those turns were a quarter of the search (docs/benchmarks.md, issue 30,
// stop 72). A filter whose clauses are all on columns is instead
// evaluated once per request and partition, for every document, 64 at a
// time, into a bit per document (bitsets.admittedBits); a cursor over
// decoded postings steps over a posting whose bit is clear without
// leaving its loop, and the filter answers other cursors' candidates by
// one bit.
//
// Invariant: bit local of a segment's set is set exactly where
// eligibleFilter.admits, by its clauses on columns, admits the document
// and the segment's snapshot has not deleted it (TestAdmittedBits).

// bitsets is a filter's admitted documents, a set of bits per segment of
// its snapshot, and the arrays they are made in: a search's partition
// keeps them for the next search's (partCursors.bits), so that a request
// allocates none once its partitions have been read.
type bitsets struct {
	counts []uint64          // each segment's documents
	except []*roaring.Bitmap // each segment's deleted documents, or nil
	words  []uint64          // the sets' array
	sets   [][]uint64        // each segment's bits: document local is bit local%64 of word local/64
}

// admittedBits sets b.sets, for each segment of b.counts (whose columns
// are cols[s]), to a bit per document: set where every clause of must
// holds and none of mustNot does (colClause.holds), and the document is
// not deleted (b.except).
func (b *bitsets) admittedBits(cols [][]column, must, mustNot []*colClause) {
	words := 0
	for _, n := range b.counts {
		words += int((n + 63) / 64)
	}
	b.words = grown(b.words, words)
	b.sets = grown(b.sets, len(b.counts))
	all := b.words
	for s, n := range b.counts {
		w := int((n + 63) / 64)
		bits := all[:w:w]
		all = all[w:]
		for k := range bits {
			lo, hi := uint64(k)*64, min(uint64(k+1)*64, n)
			acc := ^uint64(0) >> (64 - (hi - lo))
			for _, c := range must {
				acc &= c.word(cols[s], lo, hi)
			}
			for _, c := range mustNot {
				if acc == 0 { // nothing left to turn away
					break
				}
				acc &^= c.word(cols[s], lo, hi)
			}
			bits[k] = acc
		}
		if s < len(b.except) && b.except[s] != nil {
			it := b.except[s].Iterator()
			for it.HasNext() {
				if d := uint64(it.Next()); d < n {
					bits[d/64] &^= 1 << (d % 64)
				}
			}
		}
		b.sets[s] = bits
	}
}

// admitted reports whether document local's bit is set in set, a
// segment's set of bitsets (false past its end).
func admitted(set []uint64, local uint64) bool {
	return local/64 < uint64(len(set)) && set[local/64]&(1<<(local%64)) != 0
}

// word returns c's verdict on documents [lo, hi) of a segment whose
// columns are cols, hi-lo at most 64: bit k for document lo+k.
func (c *colClause) word(cols []column, lo, hi uint64) uint64 {
	acc := ^uint64(0) >> (64 - (hi - lo))
	for _, t := range c.all {
		acc &= t.word(cols[t.col], lo, hi)
	}
	for _, t := range c.none {
		acc &^= t.word(cols[t.col], lo, hi)
	}
	return acc
}

// word returns t's verdict on documents [lo, hi) of col, hi-lo at most
// 64: bit k for document lo+k; a document past the column's end has no
// value, and fails (column.at).
func (t colTest) word(col column, lo, hi uint64) uint64 {
	if col.f64 != nil {
		return wordOf(t, col.f64, lo, hi)
	}
	return wordOf(t, col.f32, lo, hi)
}

// wordOf is colTest.word on a column's values held as F.
func wordOf[F float32 | float64](t colTest, col []F, lo, hi uint64) uint64 {
	hi = min(hi, uint64(len(col)))
	var w uint64
	if t.le {
		for i := lo; i < hi; i++ {
			var b uint64
			if float64(col[i]) <= t.v {
				b = 1
			}
			w |= b << (i - lo)
		}
	} else {
		for i := lo; i < hi; i++ {
			var b uint64
			if float64(col[i]) > t.v {
				b = 1
			}
			w |= b << (i - lo)
		}
	}
	return w
}
