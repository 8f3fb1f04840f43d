package retrieve

import (
	"container/list"
	"math"
	"sort"
	"sync"
	"weak"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// Decoded postings for the pruned search.
//
// The pruned search looks at few documents beyond those it must (about
// 2,800 candidates a question at 13k chunks, of which about 290 are scored
// in full; docs/benchmarks.md, issue 30, stop 61). What its time goes to is
// reading them: zapx decodes each posting from its roaring bitmap and its
// chunked varints of frequencies and norms, about 200 ns a candidate. A
// segment is immutable, so a term's postings in it decode to the same
// numbers every time. The pruned search keeps those numbers, for the terms
// the questions ask, in a cache of bounded size that the index's searches
// share, and steps through arrays instead. A search reads through it the
// same documents, frequencies and lengths, so scores and hits are the same
// bits (TestPrunedEqualsExhaustive, which takes turns without
// the cache, with it, and with one too small for most lists).
//
// Invariant: an entry holds every posting of its term in its segment,
// deleted documents included; a search skips those its snapshot deleted,
// as zapx does given the same bitmap. A segment's deletions only grow, and
// each snapshot brings its own, so one entry serves every snapshot that
// holds the segment.

// DefaultPostingsCache is the size in bytes of the decoded postings the
// pruned search keeps when LexicalOptions.PostingsCache is zero. The
// questions of ObliQA's dev split asked of its 13k chunks keep 2.4 MB;
// 1,000 of them asked of a million chunks in eight tenants (BenchmarkScale,
// spread shape, random days), 43 MB.
const DefaultPostingsCache = 64 << 20

// postingBytes is what one decoded posting costs the cache: its document
// number, and its frequency and norm in two bytes each.
const postingBytes = 8

// entryOverhead approximates what an entry costs beyond its postings: its
// key, list element and map slot.
const entryOverhead = 160

// decodedPostings is one term's postings in one segment, in document order.
// It is never changed once made.
//
// zapx v17's norm bits (Posting.NormUint64) are the field's length in
// tokens, which bounds the frequency; a passage that long (65,536 tokens)
// would be some 400 KB of text. Two bytes each make a posting 8 bytes
// instead of 12: half as many postings again in the same bound
// (docs/benchmarks.md, issue 30, stop 62).
type decodedPostings struct {
	docs []uint32 // the segment's document numbers
	// fn is each posting's frequency<<16 | norm bits, both below 1<<16.
	fn []uint32
}

// freq returns posting i's frequency.
func (p *decodedPostings) freq(i int) uint32 { return p.fn[i] >> 16 }

// norm returns posting i's norm bits.
func (p *decodedPostings) norm(i int) uint32 { return p.fn[i] & 0xffff }

// postingsKey names a segment's postings of a term in the text field.
type postingsKey struct {
	seg  any // segmentKey's
	term string
}

// segmentKey names seg in a postingsKey by a weak pointer: an entry does
// not keep a segment that bleve merged away and closed (with its maps of
// fields and readers) alive until it is dropped, and a segment made later
// at the same address has another key. ok is false for a segment of a
// type other than zapx v17's, which bleve v2.6.3 writes (the pruned search
// then reads its postings as they are).
func segmentKey(seg segment.Segment) (key any, ok bool) {
	switch s := seg.(type) {
	case *zap.Segment:
		return weak.Make(s), true
	case *zap.SegmentBase:
		return weak.Make(s), true
	}
	return nil, false
}

type postingsEntry struct {
	key  postingsKey
	p    *decodedPostings
	size int64
}

// postingsCache holds decoded postings up to max bytes, dropping those
// least recently asked for first. Safe for concurrent use.
type postingsCache struct {
	max int64

	mu   sync.Mutex
	used int64
	byID map[postingsKey]*list.Element
	lru  list.List // of *postingsEntry, the most recent first
	// asks counts the asks of each key, kept or not, halved until it
	// names at most half of asksMax keys whenever it reaches asksMax (so
	// that what was asked long ago weighs less). Until the cache first
	// fills, a list is decoded at its first ask; from then on at its second,
	// and, where keeping it would push out the least recent entry, only
	// when asked more often than that entry.
	// A decode reads every posting, where a search that advances through
	// a list reads a part of it. Over a corpus whose questions' lists
	// outgrow the cache, asked in turn, a cache that kept every list asked
	// twice dropped each before it was asked again, and paid the decodes
	// for nothing (the 99th percentile of a request 1.4 times zapx's
	// alone; docs/benchmarks.md, issue 30, stop 61). Decoding only at the
	// second ask, though, left a million chunks' requests reading zapx's
	// postings for most lists: 1,000 questions asked twice asked 42,192
	// lists (one per term, partition and segment), more keys than asks
	// counts, which forgot most of them between their two asks (stop 62).
	asks map[postingsKey]uint32
	// filled is set once a list found no room, and stays set: from then
	// on the cache is about full, and a first ask is not decoded.
	filled bool
	// iters holds zapx iterators for decodes to reuse (decodePostings).
	// One keeps the last list it read, and so its segment, until it is
	// reused or the pool is emptied at a collection: at most a segment
	// merged away kept a little longer, never one read again.
	iters sync.Pool
}

// asksMax bounds postingsCache.asks: about 1.5 MiB of keys.
const asksMax = 1 << 14

// newPostingsCache returns a cache of max bytes, or nil (no cache) when
// max is not positive.
func newPostingsCache(max int64) *postingsCache {
	if max <= 0 {
		return nil
	}
	return &postingsCache{max: max, byID: map[postingsKey]*list.Element{}, asks: map[postingsKey]uint32{}}
}

// postings returns term's decoded postings in seg, whose text dictionary is
// dict, decoding and keeping them on a miss that the cache admits (see
// asks, and admits); ok is false where the cache does not give them, and
// the caller reads zapx's postings.
func (c *postingsCache) postings(seg segment.Segment, dict segment.TermDictionary, term string) (p *decodedPostings, ok bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	sk, ok := segmentKey(seg)
	if !ok {
		return nil, false, nil
	}
	key := postingsKey{seg: sk, term: term}
	c.mu.Lock()
	n := c.ask(key)
	if e, hit := c.byID[key]; hit {
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*postingsEntry).p, true, nil
	}
	filled := c.filled
	c.mu.Unlock()
	if n < 2 && filled {
		return nil, false, nil
	}
	pl, err := dict.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return nil, false, err
	}
	if !c.admits(key, pl.Count(), n) {
		return nil, false, nil
	}
	p, ok, err = c.decodePostings(pl)
	if err != nil || !ok {
		return nil, false, err
	}
	c.add(key, p)
	return p, true, nil
}

// ask counts an ask of key and returns its count. The caller holds mu.
func (c *postingsCache) ask(key postingsKey) uint32 {
	// Halved until half empty, not once: keys all asked often would
	// survive one halving, and the next ask would halve them again.
	if len(c.asks) >= asksMax {
		for len(c.asks) > asksMax/2 {
			for k, n := range c.asks { // an order-free update: any order gives the same map
				if n /= 2; n == 0 {
					delete(c.asks, k)
				} else {
					c.asks[k] = n
				}
			}
		}
	}
	n := c.asks[key] + 1
	c.asks[key] = n
	return n
}

// admits reports whether key's list of n postings, asked asks times, may
// be kept: at most an eighth of the cache, so that one term common to
// every document cannot push out the rest (such a term is seldom essential
// to the pruned search, which advances its postings rather than reading
// each); at its first ask, only where it fits beside the entries kept; and
// where it would push out the least recent entry, only when asked more
// often than that entry.
func (c *postingsCache) admits(key postingsKey, n uint64, asks uint32) bool {
	if n > uint64(c.max/8/postingBytes) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used+entrySize(key, int(n)) <= c.max {
		return true
	}
	c.filled = true
	return asks > 1 && (c.lru.Len() == 0 || c.asks[c.lru.Back().Value.(*postingsEntry).key] < asks)
}

// entrySize is what an entry of key with n postings costs the cache.
func entrySize(key postingsKey, n int) int64 {
	return int64(n)*postingBytes + int64(len(key.term)) + entryOverhead
}

// add keeps p under key, dropping the least recent entries beyond max. Two
// searches that missed the same key both decode it; the second keeps its
// own.
func (c *postingsCache) add(key postingsKey, p *decodedPostings) {
	size := entrySize(key, len(p.docs))
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.byID[key]; hit {
		c.used -= e.Value.(*postingsEntry).size
		c.lru.Remove(e)
	}
	c.byID[key] = c.lru.PushFront(&postingsEntry{key: key, p: p, size: size})
	c.used += size
	for c.used > c.max {
		c.filled = true
		e := c.lru.Back()
		old := e.Value.(*postingsEntry)
		c.lru.Remove(e)
		delete(c.byID, old.key)
		c.used -= old.size
	}
}

// stats returns the bytes held and the entries, for tests.
func (c *postingsCache) stats() (used int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.byID)
}

// decodePostings reads every posting of pl; ok is false where a posting
// does not fit the arrays (a document number past 32 bits, a frequency or
// norm past 16) or is not zapx's (whose norm gives its bits; the cache
// asks only of zapx's segments: segmentKey). A new
// zapx iterator costs an allocation of a few hundred bytes, 15 to 20% of
// decoding a list in a fresh process's profile at a million chunks, so the
// cache hands one back for the next decode (iters); and a zapx posting is
// read through its own type, where asking each posting for an interface
// cost a lookup a posting (BenchmarkDecodePostings: the two, 0.76 to 0.79
// of the time).
func (c *postingsCache) decodePostings(pl segment.PostingsList) (*decodedPostings, bool, error) {
	prealloc, _ := c.iters.Get().(segment.PostingsIterator)
	it := pl.Iterator(true, true, false, prealloc)
	defer func() {
		if z, reusable := it.(*zap.PostingsIterator); reusable && z != nil {
			c.iters.Put(it)
		}
	}()
	n := pl.Count()
	p := &decodedPostings{docs: make([]uint32, 0, n), fn: make([]uint32, 0, n)}
	for {
		q, err := it.Next()
		if err != nil {
			return nil, false, err
		}
		if q == nil {
			return p, true, nil
		}
		z, ok := q.(*zap.Posting)
		if !ok || z.Number() > math.MaxUint32 || z.Frequency() > math.MaxUint16 || z.NormUint64() > math.MaxUint16 {
			return nil, false, nil
		}
		p.docs = append(p.docs, uint32(z.Number()))
		p.fn = append(p.fn, uint32(z.Frequency())<<16|uint32(z.NormUint64()))
	}
}

// lengthOfNormBits is postingLength of a zapx posting whose norm's bits are
// bits: the same float64.
func lengthOfNormBits(bits uint32) float64 {
	if int(bits) < len(zapLengths) {
		return zapLengths[bits]
	}
	return lengthOfNorm(zapNorm(uint64(bits)))
}

// decodedCursor is a cursor's place in a term's decoded postings, segment
// after segment of one snapshot, numbered as scorch numbers them.
type decodedCursor struct {
	segs   []*decodedPostings
	except []*roaring.Bitmap // each segment's deleted documents, or nil
	starts []uint64          // each segment's first document number
	// admitted, when not nil, is each segment's documents that the
	// search's filter admits, deleted ones clear (eligibleFilter.admit): a posting
	// outside it is passed over as a deleted one is.
	admitted [][]uint64
	seg      int // the segment being read
	i        int // the current posting's index in segs[seg]; -1 before the first
}

// seek moves t to the first posting the search keeps (decodedCursor.kept)
// at index i of its segment or after, and takes it (noMore past the last).
func (t *cursor) seek(i int) {
	c := t.dec
	for c.seg < len(c.segs) {
		p := c.segs[c.seg]
		if i = c.kept(i); i < len(p.docs) {
			c.i = i
			t.cur = c.starts[c.seg] + uint64(p.docs[i])
			t.freq, t.flen = uint64(p.freq(i)), lengthOfNormBits(p.norm(i))
			return
		}
		c.seg, i = c.seg+1, 0
	}
	t.cur = noMore
}

// kept returns the index of the first posting at index i or after in the
// current segment that the search keeps (admitted, where the filter gave
// bits; else not deleted), or the segment's count of postings where none
// is.
func (c *decodedCursor) kept(i int) int {
	docs := c.segs[c.seg].docs
	if c.admitted != nil {
		set := c.admitted[c.seg]
		for i < len(docs) && !admitted(set, uint64(docs[i])) {
			i++
		}
		return i
	}
	if del := c.except[c.seg]; del != nil {
		for i < len(docs) && del.Contains(docs[i]) {
			i++
		}
	}
	return i
}

// seekAtOrAfter moves t to its first posting at or after document num,
// which lies after its current one: within the current segment by
// galloping from the current posting (most targets are near), then binary
// search.
func (t *cursor) seekAtOrAfter(num uint64) {
	c := t.dec
	if seg := sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > num }) - 1; seg > c.seg {
		c.seg, c.i = seg, -1
	}
	if c.seg >= len(c.segs) {
		t.cur = noMore
		return
	}
	docs, local := c.segs[c.seg].docs, num-c.starts[c.seg]
	lo, hi, step := c.i+1, c.i+1, 1
	for hi < len(docs) && uint64(docs[hi]) < local {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, len(docs))
	t.seek(lo + sort.Search(hi-lo, func(j int) bool { return uint64(docs[lo+j]) >= local }))
}
