package retrieve

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Why the eligibility filter reads dictionaries in its own goroutine.
//
// For each numeric range of the eligibility clauses, bleve asks the index
// reader whether each candidate term is in the field's dictionary
// (FieldDictContains), and scorch answers by starting one goroutine per
// segment and waiting on a channel for them. A query does that for every
// range, in every partition it reads. On a busy machine the wait is the
// cost: the new goroutine can be queued behind whatever else is runnable (a
// commit being applied, bleve's merger), and a replica applying a log's
// commits while it answers waited there most (docs/benchmarks.md, issue
// 29). sequentialReader answers the same lookups in the caller's
// goroutine, segment by segment, with the same result: a term is in the
// field's dictionary when some segment's dictionary holds it. The same goes
// for the document readers a match-all (an eligibility of must-not clauses
// only) and a list of IDs (a pending commit's, a pinned request's
// readmitted chunks) start from, whose Advance also skips instead of
// stepping through every document as scorch's does.

// sequentialReader is a scorch snapshot whose FieldDictContains,
// DocIDReaderAll and DocIDReaderOnly read the segments one after another in
// the calling goroutine; every other method is the snapshot's.
type sequentialReader struct {
	index.IndexReader
	snap *scorch.IndexSnapshot
}

// sequential returns r with FieldDictContains, DocIDReaderAll and
// DocIDReaderOnly answered in the caller's goroutine, or r itself when it
// is not a scorch snapshot.
func sequential(r index.IndexReader) index.IndexReader {
	if snap, ok := r.(*scorch.IndexSnapshot); ok {
		return sequentialReader{IndexReader: r, snap: snap}
	}
	return r
}

// containser is the lookup a segment's term dictionary offers.
type containser interface {
	Contains(key []byte) (bool, error)
}

// FieldDictContains implements index.IndexReaderContains.
func (r sequentialReader) FieldDictContains(field string) (index.FieldDictContains, error) {
	segs := r.snap.Segments()
	dicts := make(segmentDicts, 0, len(segs))
	for _, s := range segs {
		d, err := s.Segment().Dictionary(field)
		if err != nil {
			return nil, err
		}
		dicts = append(dicts, d)
	}
	return dicts, nil
}

// segmentDicts is a field's dictionary in each segment of a snapshot.
type segmentDicts []containser

// Contains reports whether some segment's dictionary holds key. Like
// scorch's, it passes over a segment whose lookup fails (bleve counts an
// error as "not indexed" in any case).
func (d segmentDicts) Contains(key []byte) (bool, error) {
	for _, s := range d {
		if found, err := s.Contains(key); err == nil && found {
			return true, nil
		}
	}
	return false, nil
}

// BytesRead implements index.FieldDictContains: evpack keeps no I/O
// statistics of bleve's.
func (d segmentDicts) BytesRead() uint64 { return 0 }

// DocIDReaderAll implements index.IndexReader: every live document.
func (r sequentialReader) DocIDReaderAll() (index.DocIDReader, error) {
	return r.docReader(func(s *scorch.SegmentSnapshot) (*roaring.Bitmap, error) { return s.DocNumbersLive(), nil })
}

// DocIDReaderOnly implements index.IndexReader: the live documents of ids.
func (r sequentialReader) DocIDReaderOnly(ids []string) (index.DocIDReader, error) {
	return r.docReader(func(s *scorch.SegmentSnapshot) (*roaring.Bitmap, error) { return s.DocNumbers(ids) })
}

// docReader returns the reader of the documents docs gives in each segment.
// Documents are numbered as scorch numbers them: a segment's first number
// is the count of documents, deleted ones included, in the segments before
// it (TestSequentialDocReadersAsScorch holds it to scorch's numbering).
func (r sequentialReader) docReader(docs func(*scorch.SegmentSnapshot) (*roaring.Bitmap, error)) (index.DocIDReader, error) {
	segs := r.snap.Segments()
	d := &docReader{its: make([]roaring.IntPeekable, len(segs)), offsets: segmentStarts(segs)}
	for i, s := range segs {
		b, err := docs(s)
		if err != nil {
			return nil, err
		}
		d.its[i] = b.Iterator()
	}
	return d, nil
}

// segmentStarts returns each segment's first document number as scorch
// numbers a snapshot's documents: the count of documents, deleted ones
// included, in the segments before it.
func segmentStarts(segs []*scorch.SegmentSnapshot) []uint64 {
	starts := make([]uint64, len(segs))
	var next uint64
	for i, s := range segs {
		starts[i] = next
		next += s.Segment().Count()
	}
	return starts
}

// docReader reads a set of documents segment by segment, in number order.
type docReader struct {
	its     []roaring.IntPeekable
	offsets []uint64 // each segment's first document number
	seg     int      // the segment Next reads
}

// Next implements index.DocIDReader.
func (d *docReader) Next() (index.IndexInternalID, error) {
	for ; d.seg < len(d.its); d.seg++ {
		if it := d.its[d.seg]; it.HasNext() {
			return index.NewIndexInternalID(nil, d.offsets[d.seg]+uint64(it.Next())), nil
		}
	}
	return nil, nil
}

// Advance implements index.DocIDReader: the first document at or after id
// that is not before the reader's place (it never goes back, as scorch's
// does not).
func (d *docReader) Advance(id index.IndexInternalID) (index.IndexInternalID, error) {
	if len(id) != 8 {
		return nil, fmt.Errorf("%w: document reader: internal ID of %d bytes", ErrLexical, len(id))
	}
	to := binary.BigEndian.Uint64(id)
	for d.seg+1 < len(d.its) && d.offsets[d.seg+1] <= to {
		d.seg++
	}
	if d.seg < len(d.its) && to >= d.offsets[d.seg] {
		// A segment numbers its documents in 32 bits: a target past them
		// all leaves none of this segment's.
		d.its[d.seg].AdvanceIfNeeded(uint32(min(to-d.offsets[d.seg], math.MaxUint32)))
	}
	return d.Next()
}

// Size implements index.DocIDReader.
func (d *docReader) Size() int { return 64 + 24*len(d.its) }

// Close implements index.DocIDReader.
func (d *docReader) Close() error { return nil }

// Why the pruned search reads a term's postings itself.
//
// scorch hands zap each segment's deleted documents with every postings
// list it asks for, and zap, given a bitmap, copies the term's postings
// less those documents (roaring.AndNot) and walks the copy by a slower
// path. A merge leaves an empty bitmap, not none, on the segment it makes,
// until the partition's next batch: so a live engine whose partitions were
// merged since (a writer, a replica that follows one) paid that copy for
// every term of every question, where an engine opened on the same files,
// whose segments load without a bitmap, did not (docs/benchmarks.md, issue
// 29). termReader is scorch's term reader but for that: an empty bitmap is
// passed as none.

// termFieldReader returns the postings of term in field of r, with their
// frequencies and norms when freqNorm: read by termReader when r is a
// scorch snapshot, else r's own.
func termFieldReader(ctx context.Context, r index.IndexReader, term []byte, field string, freqNorm bool) (index.TermFieldReader, error) {
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return r.TermFieldReader(ctx, term, field, freqNorm, freqNorm, false)
	}
	f, err := newFieldDicts(snap, field)
	if err != nil {
		return nil, err
	}
	return f.reader(term, freqNorm)
}

// fieldDicts is what the term readers of one field of a scorch snapshot
// share: each segment's dictionary, deleted documents (nil for none) and
// first document number. A question's terms are read through one, not
// each through its own.
type fieldDicts struct {
	dicts  []segment.TermDictionary
	except []*roaring.Bitmap
	starts []uint64
	segs   []segment.Segment // whose dictionaries dicts are
}

func newFieldDicts(snap *scorch.IndexSnapshot, field string) (*fieldDicts, error) {
	segs := snap.Segments()
	f := &fieldDicts{dicts: make([]segment.TermDictionary, len(segs)), except: make([]*roaring.Bitmap, len(segs)),
		starts: segmentStarts(segs), segs: make([]segment.Segment, len(segs))}
	for i, ss := range segs {
		f.segs[i] = ss.Segment()
		var err error
		if f.dicts[i], err = ss.Segment().Dictionary(field); err != nil {
			return nil, err
		}
		if d := ss.Deleted(); d != nil && !d.IsEmpty() {
			f.except[i] = d
		}
	}
	return f, nil
}

// reader returns the postings of term, with their frequencies and norms
// when freqNorm.
func (f *fieldDicts) reader(term []byte, freqNorm bool) (*termReader, error) {
	t := &termReader{lists: make([]segment.PostingsList, len(f.dicts)), its: make([]segment.PostingsIterator, len(f.dicts)),
		starts: f.starts, freqNorm: freqNorm}
	for i, dict := range f.dicts {
		var err error
		if t.lists[i], err = dict.PostingsList(term, f.except[i], nil); err != nil {
			return nil, err
		}
		t.count += t.lists[i].Count()
		t.its[i] = t.lists[i].Iterator(freqNorm, freqNorm, false, nil)
	}
	return t, nil
}

// termReader is one term's postings in one field of a scorch snapshot,
// segment after segment, numbered as scorch numbers them (see
// termFieldReader).
type termReader struct {
	lists    []segment.PostingsList
	its      []segment.PostingsIterator
	starts   []uint64 // each segment's first document number
	seg      int      // the segment being read
	cur      uint64   // the number of the last posting handed out
	read     bool     // one was
	count    uint64
	freqNorm bool
}

// Next implements index.TermFieldReader.
func (t *termReader) Next(pre *index.TermFieldDoc) (*index.TermFieldDoc, error) {
	p, err := t.nextPosting()
	return t.hand(p, pre), err
}

// nextPosting moves to the next posting and returns it (nil past the
// last), numbered t.cur: Next without a TermFieldDoc.
func (t *termReader) nextPosting() (segment.Posting, error) {
	for ; t.seg < len(t.its); t.seg++ {
		p, err := t.its[t.seg].Next()
		if err != nil {
			return nil, err
		}
		if p != nil {
			t.cur, t.read = t.starts[t.seg]+p.Number(), true
			return p, nil
		}
	}
	return nil, nil
}

// Advance implements index.TermFieldReader: the first posting at or after
// document id. Like scorch's, a target at or before the last posting handed
// out starts the term's postings again.
func (t *termReader) Advance(id index.IndexInternalID, pre *index.TermFieldDoc) (*index.TermFieldDoc, error) {
	if len(id) != 8 {
		return nil, fmt.Errorf("%w: advance to an internal ID of %d bytes", ErrLexical, len(id))
	}
	p, err := t.advancePosting(binary.BigEndian.Uint64(id))
	return t.hand(p, pre), err
}

// advancePosting moves to the first posting at or after document num and
// returns it (nil past the last), numbered t.cur: Advance without a
// TermFieldDoc.
func (t *termReader) advancePosting(num uint64) (segment.Posting, error) {
	if t.read && t.cur >= num {
		for i, l := range t.lists {
			t.its[i] = l.Iterator(t.freqNorm, t.freqNorm, false, nil)
		}
		t.seg, t.read = 0, false
	}
	seg := sort.Search(len(t.starts), func(i int) bool { return t.starts[i] > num }) - 1
	if seg < t.seg || seg < 0 { // within a segment already passed (or before the first)
		return t.nextPosting()
	}
	t.seg = seg
	p, err := t.its[seg].Advance(num - t.starts[seg])
	if err != nil {
		return nil, err
	}
	if p == nil { // none left in this segment: the next one's first
		t.seg++
		return t.nextPosting()
	}
	t.cur, t.read = t.starts[seg]+p.Number(), true
	return p, nil
}

// hand fills pre (or a new TermFieldDoc) with posting p, numbered t.cur,
// as scorch does; nil for no posting.
func (t *termReader) hand(p segment.Posting, pre *index.TermFieldDoc) *index.TermFieldDoc {
	if p == nil {
		return nil
	}
	if pre == nil {
		pre = &index.TermFieldDoc{}
	}
	if cap(pre.ID) >= 8 {
		pre.ID = pre.ID[:8]
	} else {
		pre.ID = make(index.IndexInternalID, 8)
	}
	binary.BigEndian.PutUint64(pre.ID, t.cur)
	if t.freqNorm {
		pre.Freq, pre.Norm = p.Frequency(), p.Norm()
	}
	return pre
}

// Count implements index.TermFieldReader: the live documents holding the
// term.
func (t *termReader) Count() uint64 { return t.count }

// Close implements index.TermFieldReader.
func (t *termReader) Close() error { return nil }

// Size implements index.TermFieldReader (bleve's memory estimate).
func (t *termReader) Size() int { return 64 + 16*len(t.its) }
