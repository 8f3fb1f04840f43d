package rerank

import (
	"slices"
	"strings"

	"github.com/evpack/evpack/internal/terms"
)

// Documents is implemented by a Stats that also knows where each chunk sits
// in its document: the engine's does. The learned reranker reads a
// candidate's neighbours, document and heading path through it; with a plain
// Stats those features are zero.
type Documents interface {
	Stats
	// Document returns the chunk IDs of id's document version in document
	// order, their Terms in the same order, and id's position among them;
	// nil, nil and -1 when id is unknown. The slices must not be changed.
	Document(id string) (ids []string, terms [][]string, pos int)
	// ChunkTerms returns Terms of a chunk's text, nil when unknown.
	ChunkTerms(id string) []string
	// TermTotal is the sum of len(ChunkTerms) over every chunk.
	TermTotal() int64
}

// FeatureSet names the features below, their order and their arithmetic.
// A model records the feature set it was trained on and loads only into a
// build that computes the same one.
const FeatureSet = "ctx/1 " + terms.Version

// NumFeatures is the width of a feature row.
const NumFeatures = 24

// FeatureNames are the features of a row, in order. Every value is an
// integer computed with integer arithmetic only; S is evidence.ScoreScale
// (fixed point 1.0), "BM25" is evpack's own integer BM25 over Terms (k1 1.2,
// b 0.75, Q16 log2 IDF as the Arithmetic reranker's, so one unit is 1/65536),
// and "the pool" is the candidates of the query.
var FeatureNames = [NumFeatures]string{
	"rank",           //  0 the fused rank, 1-based
	"bm25",           //  1 BM25 of the chunk (Q16)
	"bm25_rel",       //  2 S × BM25 / the pool's largest BM25
	"arithmetic",     //  3 the Arithmetic reranker's score with DefaultWeights (S)
	"coverage_idf",   //  4 IDF-weighted share of the question's terms in the chunk (S)
	"coverage",       //  5 share of the question's distinct terms in the chunk (S)
	"density",        //  6 question-term occurrences per token, as Arithmetic (S)
	"proximity",      //  7 as Arithmetic (S)
	"bigrams",        //  8 share of the question's adjacent pairs found adjacent (S)
	"exact_run",      //  9 longest run of the question's term sequence found verbatim (terms)
	"prev_bm25_rel",  // 10 S × BM25 of the chunk before it in its document / the pool's largest BM25
	"next_bm25_rel",  // 11 the same for the chunk after it
	"smoothed_rel",   // 12 S × (BM25 + 0.3 × mean BM25 of its neighbours) / the pool's largest BM25
	"doc_share",      // 13 how many pool candidates share its document version
	"doc_bm25_rel",   // 14 S × sum of the BM25 of those candidates / the largest such sum in the pool
	"doc_rank",       // 15 rank of its document by that sum (ties by the document's first chunk ID)
	"rank_in_doc",    // 16 1 + pool candidates of its document with a better fused rank
	"position",       // 17 its 0-based position in its document
	"depth",          // 18 S × position / chunks in its document
	"doc_chunks",     // 19 chunks in its document version
	"length",         // 20 its terms
	"heading_cov",    // 21 IDF-weighted share of the question's terms in its heading path (S)
	"with_heading",   // 22 the same over the chunk and its heading path together (S)
	"question_terms", // 23 distinct terms of the question
}

// Heading path: the nearest preceding chunks of the document that are
// headings (at most headingTerms terms), at most headingDepth of them,
// looking back at most headingLook chunks. It is what the first lines of the
// ancestor sections are in documents chunked at their numbering, found from
// document order alone.
const (
	headingTerms = 6
	headingDepth = 3
	headingLook  = 16
)

// WindowBefore and WindowAfter are how far from a candidate the rerankers
// of this package read its document: the chunks before it where its
// heading path may be, and its next neighbour. A DocumentPlace window
// holds at least these.
const (
	WindowBefore = headingLook
	WindowAfter  = 1
)

// Neighbour smoothing weight: BM25 + smoothNum/smoothDen × the mean BM25 of
// the chunk's neighbours in its document.
const smoothNum, smoothDen = 3, 10

// Row is one candidate's feature values, in FeatureNames order.
type Row [NumFeatures]int64

// TermNumbers is implemented by a Documents that also numbers its terms:
// one number per distinct term, shared by every chunk's copy of it. The
// learned reranker then matches a chunk's terms to the question's by number
// (four bytes a term, read in order) instead of by string. The engine's
// Stats implements it, with the numbers computed once per chunk when the
// chunk is committed. Only equality of numbers is used: the features are
// those computed from the terms themselves.
type TermNumbers interface {
	Documents
	// TermNumber returns term's number; false when no chunk has the term.
	TermNumber(term string) (uint32, bool)
	// DocumentNumbers is Document with each chunk's terms as numbers too
	// (nums[i] numbers terms[i], term by term); terms may be nil, the
	// numbers alone then standing for them. The slices must not be
	// changed, nor read once the Rerank call that was handed the Stats
	// returns: the engine's numbers are read from its mapped checkpoint,
	// which it unmaps once no request reads it.
	DocumentNumbers(id string) (ids []string, terms [][]string, nums [][]uint32, pos int)
}

// chunkInfo is what one pass over a chunk's terms gives.
type chunkInfo struct {
	n      int     // terms
	tf     []int32 // per question term
	bm25   int64
	hitPos []int32 // positions of question-term occurrences
	hitIdx []int32 // the question term at each
}

// extractor computes the features of one query's pool.
type extractor struct {
	qterms []string // distinct question terms, in order of first occurrence
	qidf   []int64
	seq    []int32 // the question's terms as indices into qterms
	bigram [][2]int32
	filter [filterWords]uint64 // bit termHash(t) set for each question term
	avg    int64               // average chunk terms, at least 1
	docs   Documents           // nil: no document context
	// By number (docs implements TermNumbers): the numbers of the question
	// terms some chunk has, the question term of each, and a table by the
	// number's low bits: 1 + the index into qnums of the one question
	// number with those bits, numShared when several have them, 0 none.
	nums     TermNumbers
	qnums    []uint32
	qnumIdx  []int32
	numTable [numSlots]uint8
	slab     []int32 // tf vectors are cut from it
	tf       []int32 // a neighbour's tf vector
	hits     []int32 // hit positions and question terms are cut from these
	hitIdx   []int32
	occ      [][]int32 // per question term, its positions in seq, ascending
	run      []int64   // the exact run's lengths by position in seq
	stamp    []int32   // 1 + the hit that set run[j]; 0 none
}

// newExtractor returns the extractor of question's pool, in x (made afresh
// when nil; its tables are 5 KiB), whose hits are appended to hits and
// hitIdx (empty; nil: new ones).
func newExtractor(x *extractor, question string, stats Stats, hits, hitIdx []int32) *extractor {
	if hits == nil {
		hits, hitIdx = make([]int32, 0, 1024), make([]int32, 0, 1024)
	}
	if x == nil {
		x = new(extractor)
	}
	*x = extractor{avg: 1, hits: hits, hitIdx: hitIdx} // every field: nothing of x's last pool is left
	for i, t := range terms.Split(question) {
		k := slices.Index(x.qterms, t)
		if k < 0 {
			k = len(x.qterms)
			x.qterms = append(x.qterms, t)
			x.qidf = append(x.qidf, idf(stats, t))
			h := termHash(t)
			x.filter[h/64] |= 1 << (h % 64)
		}
		x.seq = append(x.seq, int32(k))
		if i > 0 && x.seq[i-1] != int32(k) {
			bg := [2]int32{x.seq[i-1], int32(k)}
			if !slices.Contains(x.bigram, bg) {
				x.bigram = append(x.bigram, bg)
			}
		}
	}
	if d, ok := stats.(Documents); ok {
		x.docs = d
		if n := int64(d.DocCount()); n > 0 && d.TermTotal() > 0 {
			x.avg = max(1, d.TermTotal()/n)
		}
	}
	if tn, ok := stats.(TermNumbers); ok {
		x.nums = tn
		for k, t := range x.qterms {
			if n, ok := tn.TermNumber(t); ok {
				x.qnums = append(x.qnums, n)
				x.qnumIdx = append(x.qnumIdx, int32(k))
			}
		}
		for i, n := range x.qnums {
			switch slot := &x.numTable[n%numSlots]; {
			case *slot == 0 && i+1 < numShared:
				*slot = uint8(i + 1)
			default:
				*slot = numShared
			}
		}
	}
	x.tf = make([]int32, len(x.qterms))
	x.occ = make([][]int32, len(x.qterms))
	for j, k := range x.seq {
		x.occ[k] = append(x.occ[k], int32(j))
	}
	x.run, x.stamp = make([]int64, len(x.seq)), make([]int32, len(x.seq))
	return x
}

// filterWords sizes the question-term filter: 4,096 bits.
const filterWords = 64

// termHash is a cheap hash of a term's length, first and last bytes, for
// the filter that rejects most chunk terms before any string comparison.
func termHash(t string) uint32 {
	if t == "" {
		return 0
	}
	return (uint32(t[0])*131 + uint32(t[len(t)-1])*31 + uint32(len(t))) % (filterWords * 64)
}

// lookup returns the index of term t among the question's terms, or -1.
func (x *extractor) lookup(t string) int32 {
	if h := termHash(t); x.filter[h/64]&(1<<(h%64)) == 0 {
		return -1
	}
	for i, q := range x.qterms {
		if q == t {
			return int32(i)
		}
	}
	return -1
}

// The question-number table: numSlots slots by a number's low bits.
const (
	numSlots  = 4096
	numShared = 255
)

// lookupNum returns the index of the question term numbered n, or -1.
func (x *extractor) lookupNum(n uint32) int32 {
	return x.lookupSlot(n, x.numTable[n%numSlots])
}

// lookupSlot is lookupNum for a number whose table slot holds i.
func (x *extractor) lookupSlot(n uint32, i uint8) int32 {
	switch i {
	case 0:
		return -1
	case numShared:
		for j, q := range x.qnums {
			if q == n {
				return x.qnumIdx[j]
			}
		}
		return -1
	default:
		if x.qnums[i-1] == n {
			return x.qnumIdx[i-1]
		}
		return -1
	}
}

// newInfo returns an empty chunkInfo for a chunk of n terms, its tf vector
// cut from the slab.
func (x *extractor) newInfo(n int) chunkInfo {
	nq := len(x.qterms)
	if len(x.slab) < nq {
		x.slab = make([]int32, 64*max(nq, 1))
	}
	ci := chunkInfo{n: n, tf: x.slab[:nq:nq]}
	x.slab = x.slab[nq:]
	return ci
}

// info analyses a candidate's terms.
func (x *extractor) info(toks []string) chunkInfo {
	ci := x.newInfo(len(toks))
	start := len(x.hits)
	for pos, t := range toks {
		if k := x.lookup(t); k >= 0 {
			ci.tf[k]++
			x.hits = append(x.hits, int32(pos))
			x.hitIdx = append(x.hitIdx, k)
		}
	}
	x.endInfo(&ci, start)
	return ci
}

// infoNums is info over the terms' numbers.
func (x *extractor) infoNums(nums []uint32) chunkInfo {
	ci := x.newInfo(len(nums))
	start := len(x.hits)
	tbl, tf, hits, hitIdx := &x.numTable, ci.tf, x.hits, x.hitIdx
	for pos, t := range nums {
		i := tbl[t%numSlots]
		if i == 0 { // most terms: no question term has its low bits
			continue
		}
		if k := x.lookupSlot(t, i); k >= 0 {
			tf[k]++
			hits = append(hits, int32(pos))
			hitIdx = append(hitIdx, k)
		}
	}
	x.hits, x.hitIdx = hits, hitIdx
	x.endInfo(&ci, start)
	return ci
}

// endInfo cuts the chunk's hits, from start, out of the shared buffers (an
// append that outgrows them moves on to a new array; earlier stretches
// stay) and computes its BM25.
func (x *extractor) endInfo(ci *chunkInfo, start int) {
	end := len(x.hits)
	ci.hitPos, ci.hitIdx = x.hits[start:end:end], x.hitIdx[start:end:end]
	ci.bm25 = x.bm25(ci.tf, ci.n)
}

// neighbour returns the BM25 of the chunk at position pos of p's
// document: that of candidate cand's info when it is one (cand >= 0), else
// computed; false when there is none.
func (x *extractor) neighbour(p *place, pos int, cand int32, infos []chunkInfo) (int64, bool) {
	if cand >= 0 {
		return infos[cand].bm25, true
	}
	return x.neighbourBM25(p, pos)
}

// neighbourBM25 returns the BM25 of the chunk at position pos of p's
// document (by its terms' numbers when p has them), and false when there is
// none.
func (x *extractor) neighbourBM25(p *place, pos int) (int64, bool) {
	if pos < 0 || pos >= p.size {
		return 0, false
	}
	clear(x.tf)
	k := pos - p.base // in the window: placeOf checked it holds the neighbours
	if nums := p.nums; nums != nil {
		tbl, tf := &x.numTable, x.tf
		for _, t := range nums[k] {
			i := tbl[t%numSlots]
			if i == 0 {
				continue
			}
			if k := x.lookupSlot(t, i); k >= 0 {
				tf[k]++
			}
		}
		return x.bm25(tf, len(nums[k])), true
	}
	for _, t := range p.dterms[k] {
		if k := x.lookup(t); k >= 0 {
			x.tf[k]++
		}
	}
	return x.bm25(x.tf, len(p.dterms[k])), true
}

// bm25 is Σ idf × tf × (k1+1) / (tf + k1 × (1 − b + b × len/avg)) with
// k1 = 12/10 and b = 3/4, numerator and denominator multiplied by 40 × avg,
// for a chunk of n terms with question-term frequencies tfs.
func (x *extractor) bm25(tfs []int32, n int) int64 {
	var s int64
	for k, tf := range tfs {
		if tf == 0 {
			continue
		}
		t := int64(tf)
		s += x.qidf[k] * t * 88 * x.avg / (40*t*x.avg + 12*x.avg + 36*int64(n))
	}
	return s
}

// termsOf returns a chunk's terms, from the candidate or the documents.
func (x *extractor) termsOf(c *Candidate) []string {
	if c.Terms != nil {
		return c.Terms
	}
	if x.docs != nil {
		if t := x.docs.ChunkTerms(c.ID); t != nil {
			return t
		}
	}
	return terms.Split(c.Text)
}

// place is a candidate's document: its chunks' IDs and terms (and their
// numbers, nil when not known), and its position; doc nil when unknown.
// The slices may be a window of the document (DocumentPlace.Len): they hold
// positions base to base+len(doc)-1 of a document of size chunks whose
// first chunk is key.
type place struct {
	doc    []string
	dterms [][]string
	nums   [][]uint32
	pos    int
	base   int
	size   int
	key    string
}

// placeOf returns c's document: the one it carries, else its Stats'. A
// document whose slices do not match its IDs, or whose position is outside
// them, is none (its features are zero): a Stats or a caller may be wrong,
// and a reranker must not panic on it.
func (x *extractor) placeOf(c *Candidate) place {
	var p place
	switch {
	case c.Doc != nil && x.docs != nil && (c.Doc.Terms != nil || x.nums != nil):
		p = place{doc: c.Doc.IDs, dterms: c.Doc.Terms, pos: c.Doc.Pos, base: c.Doc.Start, size: c.Doc.Len, key: c.Doc.First}
		if x.nums != nil {
			p.nums = c.Doc.Nums
		}
	case x.nums != nil:
		p.doc, p.dterms, p.nums, p.pos = x.nums.DocumentNumbers(c.ID)
	case x.docs != nil:
		p.doc, p.dterms, p.pos = x.docs.Document(c.ID)
	}
	if p.nums != nil && len(p.nums) != len(p.doc) {
		p.nums = nil
	}
	if p.doc == nil {
		return p
	}
	if p.size == 0 { // the whole document
		p.base, p.size = 0, len(p.doc)
		if len(p.doc) > 0 {
			p.key = p.doc[0]
		}
	}
	// The window must hold what the features read around the candidate.
	lo, hi := max(0, p.pos-WindowBefore), min(p.size, p.pos+WindowAfter+1)
	if p.pos < 0 || p.pos >= p.size || p.base < 0 || p.base > lo || p.base+len(p.doc) < hi || p.base+len(p.doc) > p.size ||
		p.nums == nil && len(p.dterms) != len(p.doc) {
		return place{pos: -1}
	}
	return p
}

// termCount is the number of terms of the chunk at position q of p's
// document.
func (p *place) termCount(q int) int {
	if p.nums != nil {
		return len(p.nums[q-p.base])
	}
	return len(p.dterms[q-p.base])
}

// candidateInfo analyses candidate c: by number when its document has
// numbers and its terms are the document's own (it has none of its own, or
// it was handed with its document: see Candidate.Doc), else by string.
func (x *extractor) candidateInfo(c *Candidate, p place) chunkInfo {
	if p.doc != nil && p.nums != nil && (c.Terms == nil || c.Doc != nil) {
		return x.infoNums(p.nums[p.pos-p.base])
	}
	return x.info(x.termsOf(c))
}

// FeatureRows returns the feature rows of cands for question, in cands order.
// stats should implement Documents; with a plain Stats the document
// features are zero.
func FeatureRows(question string, cands []Candidate, stats Stats) []Row {
	return featureRows(question, cands, stats, nil)
}

// featureScratch is what featureRows works in besides the rows it returns,
// kept between the calls of a Learned reranker (Learned.scratch): about a
// tenth of what a request allocated (docs/benchmarks.md, issue 30, stop
// 63). Nothing in it outlives a call.
type featureScratch struct {
	x              *extractor
	hits, hitIdx   []int32
	infos          []chunkInfo
	places         []place
	docKey         []string
	prevOf, nextOf []int32
	// rows are the last call's feature rows: featureRows returns them, and
	// the scratch goes back to its pool only once the caller is done with
	// them (Learned.Rerank scores them first).
	rows []Row
}

// grown returns s[:n], zeroed, reusing s's array when it has room.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// featureRows is FeatureRows, working in sc where it is not nil.
func featureRows(question string, cands []Candidate, stats Stats, sc *featureScratch) []Row {
	if len(cands) == 0 {
		return nil // the same from a fresh scratch and a used one
	}
	if sc == nil {
		sc = &featureScratch{}
	}
	x := newExtractor(sc.x, question, stats, sc.hits[:0], sc.hitIdx[:0])
	rows := grown(sc.rows, len(cands))
	sc.rows = rows
	infos := grown(sc.infos, len(cands))
	places := grown(sc.places, len(cands))
	docKey := grown(sc.docKey, len(cands))
	defer func() {
		// Kept for the next call, emptied: no chunk of this request is
		// held by the pool.
		clear(infos)
		clear(places)
		clear(docKey)
		sc.hits, sc.hitIdx, sc.infos, sc.places, sc.docKey = x.hits[:0], x.hitIdx[:0], infos, places, docKey
		*x = extractor{}
		sc.x = x
	}()
	var maxBM25 int64 = 1
	for i := range cands {
		c := &cands[i]
		places[i] = x.placeOf(c)
		infos[i] = x.candidateInfo(c, places[i])
		maxBM25 = max(maxBM25, infos[i].bm25)
		if places[i].doc != nil {
			docKey[i] = places[i].key
		} else {
			docKey[i] = "\x00" + c.ID // a chunk of unknown document is its own
		}
	}
	// A neighbour that is itself a candidate gives the BM25 of its info.
	prevOf, nextOf := grown(sc.prevOf, len(cands)), grown(sc.nextOf, len(cands))
	sc.prevOf, sc.nextOf = prevOf, nextOf
	for i := range cands {
		prevOf[i], nextOf[i] = -1, -1
		if places[i].doc == nil {
			continue
		}
		for j := range cands {
			// Positions first: the document's key is compared only for
			// a candidate one place away.
			switch d := places[j].pos - places[i].pos; {
			case d != -1 && d != 1, places[j].doc == nil || docKey[j] != docKey[i]:
			case d == -1:
				prevOf[i] = int32(j)
			default:
				nextOf[i] = int32(j)
			}
		}
	}
	var total int64
	for _, v := range x.qidf {
		total += v
	}
	for i := range cands {
		c, ci, r, p := &cands[i], &infos[i], &rows[i], &places[i]
		r[0] = int64(c.Rank)
		r[1] = ci.bm25
		r[2] = s * ci.bm25 / maxBM25
		x.matchFeatures(ci, total, r)
		r[3] = combineDefault(Features{Coverage: r[4], Density: r[6], Proximity: r[7], Phrase: r[8], Prior: prior(c.Rank)})
		r[20] = int64(ci.n)
		r[23] = int64(len(x.qterms))
		if p.doc == nil {
			r[12] = r[2]
			continue
		}
		pos := p.pos
		r[17], r[19] = int64(pos), int64(p.size)
		r[18] = s * int64(pos) / int64(p.size)
		var nsum, nn int64
		if b, ok := x.neighbour(p, pos-1, prevOf[i], infos); ok {
			r[10] = s * b / maxBM25
			nsum, nn = nsum+b, nn+1
		}
		if b, ok := x.neighbour(p, pos+1, nextOf[i], infos); ok {
			r[11] = s * b / maxBM25
			nsum, nn = nsum+b, nn+1
		}
		sm := ci.bm25
		if nn > 0 {
			sm += smoothNum * nsum / (smoothDen * nn)
		}
		r[12] = s * sm / maxBM25
		x.headingFeatures(p, ci, total, r)
	}
	docFeatures(cands, docKey, infos, rows)
	for i := range rows {
		for k, v := range rows[i] {
			rows[i][k] = min(max(v, -maxThreshold), maxThreshold)
		}
	}
	return rows
}

// combineDefault is Arithmetic.combine with DefaultWeights.
func combineDefault(f Features) int64 {
	w := DefaultWeights
	sum := w.Coverage + w.Density + w.Proximity + w.Phrase + w.Prior
	return (w.Coverage*f.Coverage + w.Density*f.Density + w.Proximity*f.Proximity +
		w.Phrase*f.Phrase + w.Prior*f.Prior) / sum
}

// matchFeatures fills coverage, density, proximity, bigrams (computed exactly
// as Arithmetic computes them) and the exact run.
func (x *extractor) matchFeatures(ci *chunkInfo, total int64, r *Row) {
	if total == 0 || len(x.qterms) == 0 {
		return
	}
	var covered, distinct int64
	for k, tf := range ci.tf {
		if tf > 0 {
			covered += x.qidf[k]
			distinct++
		}
	}
	r[4] = s * covered / total
	r[5] = s * distinct / int64(len(x.qterms))
	r[6] = min(s, s*int64(len(ci.hitPos))/int64(ci.n+8))
	var prox int64
	for i := 1; i < len(ci.hitPos); i++ {
		a, b := ci.hitIdx[i-1], ci.hitIdx[i]
		gap := int64(ci.hitPos[i] - ci.hitPos[i-1])
		if a == b || gap > 10 {
			continue
		}
		prox += (x.qidf[a] + x.qidf[b]) * s / (2 * gap * total)
	}
	r[7] = min(s, prox)
	if len(x.bigram) > 0 {
		var found uint64 // bit per question bigram (at most 64 counted)
		var n int64
		for i := 1; i < len(ci.hitPos); i++ {
			if ci.hitPos[i]-ci.hitPos[i-1] != 1 {
				continue
			}
			bg := [2]int32{ci.hitIdx[i-1], ci.hitIdx[i]}
			if k := slices.Index(x.bigram, bg); k >= 0 && k < 64 && found&(1<<k) == 0 {
				found |= 1 << k
				n++
			}
		}
		r[8] = s * n / int64(len(x.bigram))
	}
	// Longest run: the run ending at hit i and at question position j is
	// one longer than the run ending at hit i-1 and position j-1 when the
	// two hits are adjacent, else 1; only the positions j holding hit i's
	// term can end a run, so each hit visits those alone (x.occ). run[j]
	// holds the length at the hit stamp[j] names.
	var best int64
	lastPos := int32(-2)
	run, stamp := x.run, x.stamp
	for i, p := range ci.hitPos {
		adjacent := p == lastPos+1
		// Last position first: a term repeated at j-1 and j must read
		// j-1 as hit i-1 left it, before this hit writes it.
		occ := x.occ[ci.hitIdx[i]]
		for o := len(occ) - 1; o >= 0; o-- {
			j := occ[o]
			n := int64(1)
			if adjacent && j > 0 && stamp[j-1] == int32(i) {
				n = run[j-1] + 1
			}
			run[j], stamp[j] = n, int32(i+1)
			best = max(best, n)
		}
		lastPos = p
	}
	clear(stamp)
	r[9] = best
}

// headingFeatures fills the heading-path coverage features of the
// candidate at p.
func (x *extractor) headingFeatures(p *place, ci *chunkInfo, total int64, r *Row) {
	if total == 0 {
		return
	}
	var inHeading uint64 // bit per question term (at most 64)
	found := 0
	for q := p.pos - 1; q >= 0 && q >= p.pos-headingLook && found < headingDepth; q-- {
		n := p.termCount(q)
		if n == 0 || n > headingTerms {
			continue
		}
		found++
		if p.nums != nil {
			for _, t := range p.nums[q-p.base] {
				if k := x.lookupNum(t); k >= 0 && k < 64 {
					inHeading |= 1 << k
				}
			}
			continue
		}
		for _, t := range p.dterms[q-p.base] {
			if k := x.lookup(t); k >= 0 && k < 64 {
				inHeading |= 1 << k
			}
		}
	}
	var h, both int64
	for k, v := range x.qidf {
		inH := k < 64 && inHeading&(1<<k) != 0
		if inH {
			h += v
		}
		if inH || ci.tf[k] > 0 {
			both += v
		}
	}
	r[21] = s * h / total
	r[22] = s * both / total
}

// docFeatures fills the features of each candidate's document in the pool.
func docFeatures(cands []Candidate, docKey []string, infos []chunkInfo, rows []Row) {
	type agg struct {
		key   string
		count int64
		sum   int64
	}
	aggs := make([]agg, 0, len(cands)) // in pool order of first appearance
	of := make([]int, len(cands))
	for i := range cands {
		k := slices.IndexFunc(aggs, func(a agg) bool { return a.key == docKey[i] })
		if k < 0 {
			k = len(aggs)
			aggs = append(aggs, agg{key: docKey[i]})
		}
		of[i] = k
		aggs[k].count++
		aggs[k].sum += infos[i].bm25
	}
	order := make([]int, len(aggs))
	var maxSum int64 = 1
	for i := range order {
		order[i] = i
		maxSum = max(maxSum, aggs[i].sum)
	}
	slices.SortFunc(order, func(a, b int) int {
		if aggs[a].sum != aggs[b].sum {
			if aggs[a].sum > aggs[b].sum {
				return -1
			}
			return 1
		}
		return strings.Compare(aggs[a].key, aggs[b].key)
	})
	docRank := make([]int64, len(aggs))
	for r, k := range order {
		docRank[k] = int64(r + 1)
	}
	for i := range cands {
		a := of[i]
		rows[i][13] = aggs[a].count
		rows[i][14] = s * aggs[a].sum / maxSum
		rows[i][15] = docRank[a]
		var better int64
		for j := range cands {
			if of[j] == a && cands[j].Rank < cands[i].Rank {
				better++
			}
		}
		rows[i][16] = 1 + better
	}
}
