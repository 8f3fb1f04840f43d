package retrieve

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/scorer"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/evpack/evpack/internal/par"
)

// Pruned top-k BM25 (MaxScore) over bleve's postings.
//
// bleve answers a match query exhaustively: every posting of every question
// term is decoded and scored. prunedSearch reads the same postings through
// the same index reader and scores a document with the float operations
// bleve v2.6.3 performs, in the same order, so that a raw score is the bits
// bleve would compute:
//
//   - the match query makes one term searcher per analyzed token (a
//     duplicate token is a second searcher), all of boost 1, under a
//     disjunction of minimum 1;
//   - a term searcher's idf is log(1 + (N - df + 0.5)/(df + 0.5)) with N the
//     BM25 document count and df its reader's Count (the scope's document
//     frequency when BM25Stats.DocFreq is set, see scopedMatch); avgdl is
//     ceil(field tokens / N);
//   - the disjunction (up to searcher.DisjunctionHeapTakeover searchers) sorts
//     its searchers by Count with sort.Sort, derives the query norm
//     1/sqrt(sum of idf^2) in that order, and scores a document as the sum,
//     in that order, of its matching searchers' scores times the coordination
//     factor matching/total; a searcher's score is
//     idf*(tf*k1)/(tf + k1*(1 - b + b*len/avgdl)) times idf*norm;
//   - the eligibility clauses around it have boost 0: a conjunction or boolean
//     searcher adds their zero scores to the disjunction's, which leaves it
//     unchanged, and their weights (zero) leave the norm unchanged.
//
// A longer question goes to bleve's heap disjunction, which derives the norm
// from its searchers in token order (unsorted) and sums a document's scores
// in the order its heap pops them, an order that follows the heap's whole
// history and that pruning cannot replay. There the pruned search sums in
// token order: the searchers' scores are bleve's bits, their sum may differ
// from bleve's in the last bits, by at most (2m+2) roundings of the score for
// m matching searchers (recursive summation of positive terms). That moves
// the quantized score only if a rounding boundary lies that close; a scored
// document that close to one (about 1 in 10^6) and not below the final cut
// sends the whole question to the exhaustive path, so the hits are bleve's
// in every case.
//
// Where Go may fuse x*y+z into one instruction (arm64, amd64 v3; see
// exactReplay), the pruned search's term scores and bleve's can differ in
// their last bits whatever the order (measured under qemu: three ulps), so
// every question there is checked as a long one is, with a margin for the
// terms' own roundings: the hits are still bleve's on that CPU.
//
// The top n are then ranked as the exhaustive path ranks them: by score
// quantized to ScoreQuantum, descending, then chunk ID. The collector keeps
// the n best quantized scores and every document tying the n-th, and only
// those have their external IDs resolved.

// pruneEps is the relative margin by which a bound must fall below the n-th
// best score before a document is passed over: bounds are summed in another
// order than scores, with a few roundings of relative size 1e-16 each.
const pruneEps = 1e-9

// noMore is the current document of a cursor past its last posting:
// above every document number (scorch numbers fit in far fewer bits).
const noMore = math.MaxUint64

// prunedTerm is one distinct term of the question.
type prunedTerm struct {
	term string
	df   uint64
	idf  float64
	qw   float64 // query weight: boost (1) × idf × query norm
	mult int     // how many of the question's tokens it is
	ub   float64 // bound on mult × one searcher's score, with margin
}

// cursor is a term's postings in one partition.
type cursor struct {
	*prunedTerm
	tfr   index.TermFieldReader
	seq   *termReader         // tfr, when it is one: read without a TermFieldDoc
	tfd   *index.TermFieldDoc // tfr's, where seq is nil (a reader not scorch's)
	idb   [8]byte             // Advance's target, here so that it does not escape per call
	cur   uint64              // the reader's current document; noMore once done
	freq  uint64
	flen  float64 // the field length as bleve's scorer derives it from the norm
	score float64 // the current document's score for one searcher
	hit   bool    // the current candidate contains the term
	// dec, when set, reads the term's decoded postings (postings.go) in
	// place of tfr, which is then nil.
	dec *decodedCursor
}

// prunedSearch is one pruned search: the question's terms, bleve's order of
// summation, and a cursor set per partition read.
type prunedSearch struct {
	terms []*prunedTerm // by bound ascending, then term
	order []int         // bleve's summation order: terms index per searcher
	total int           // searchers (tokens, duplicates included)
	avg   float64
	// ubPrefix[i] bounds the score of a document that matches terms[:i] only.
	ubPrefix []float64
	// ubSum[i] and multSum[i] sum the bounds and searchers of terms[:i].
	ubSum   []float64
	multSum []int
	parts   []*partCursors
	// heap: bleve takes the question by its heap disjunction, whose order of
	// summation this search does not replay; risky holds the quantized
	// scores of the documents scored within reach of a rounding boundary
	// (for every question where fused multiply-adds may make a term's score
	// differ from bleve's in its last bits: exactReplay false).
	heap  bool
	risky []float64
	// cache holds decoded postings (nil: read zapx's every time).
	cache *postingsCache

	// What a search kept for the next one (Lexical.searches): the
	// partitions' cursor sets, held past len(parts) (nextPart), and the
	// collector's arrays. At 100k chunks a request allocated a sixth of
	// its bytes in cursors and collectors made anew (docs/benchmarks.md,
	// issue 30, stop 65). release empties them.
	spare            []*partCursors
	topHeap, topTies []candidate
}

// partCursors is the search's state in one partition: its reader, a
// cursor per term (in the order of prunedSearch.terms) and the eligibility
// filter compiled against the partition's bounds.
type partCursors struct {
	r      index.IndexReader
	dir    string // the partition's, named in its errors (inPart)
	cur    []*cursor
	filter *eligibleFilter
	// cs holds the cursors cur points to; decs and segs the decoded
	// cursors and their segments' postings (open, decoded).
	cs   []cursor
	decs []decodedCursor
	segs []*decodedPostings
	// bits holds the filter's bits (eligibleFilter.admit).
	bits bitsets
}

// grown returns s[:n], zeroed, in s's array when it has room.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// nextPart returns the cursor set of the next partition read, with reader
// r: one a former search left, emptied, where there is one.
func (ps *prunedSearch) nextPart(r index.IndexReader, dir string) *partCursors {
	var pc *partCursors
	if k := len(ps.parts); k < len(ps.spare) {
		pc = ps.spare[k]
	} else {
		pc = &partCursors{}
		ps.spare = append(ps.spare, pc)
	}
	pc.r, pc.dir = r, dir
	ps.parts = append(ps.parts, pc)
	return pc
}

// inPart names partition dir in err when err is damage found reading it.
// Reads that fail in a search are damage (ErrDamaged): the engine holds
// the index open while bleve searches, so it is the bytes that are bad.
func inPart(dir string, err error) error {
	if errors.Is(err, ErrDamaged) {
		return fmt.Errorf("partition %s: %w", dir, err)
	}
	return err
}

// release empties ps for the next search, once close has closed what it
// read: nothing of this search (a term, a reader, decoded postings the
// cache may drop) is held by the pool, and arrays stay for reuse. The
// cursor sets this search did not use were emptied by an earlier release.
//
// Invariant: after release, every pointer ps holds is to its own arrays.
func (ps *prunedSearch) release() {
	for _, pc := range ps.parts {
		clear(pc.cs[:cap(pc.cs)])
		clear(pc.cur[:cap(pc.cur)])
		clear(pc.decs[:cap(pc.decs)])
		clear(pc.segs[:cap(pc.segs)])
		clear(pc.bits.except[:cap(pc.bits.except)])
		pc.r, pc.filter, pc.cur = nil, nil, pc.cur[:0]
	}
	clear(ps.terms[:cap(ps.terms)])
	clear(ps.parts[:cap(ps.parts)])
	clear(ps.topHeap[:cap(ps.topHeap)])
	clear(ps.topTies[:cap(ps.topTies)])
	*ps = prunedSearch{spare: ps.spare, topHeap: ps.topHeap[:0], topTies: ps.topTies[:0], parts: ps.parts[:0], terms: ps.terms[:0],
		order: ps.order[:0], ubPrefix: ps.ubPrefix[:0], ubSum: ps.ubSum[:0], multSum: ps.multSum[:0], risky: ps.risky[:0]}
}

// errUnprunable says the question needs the exhaustive path.
type errUnprunable struct{ why string }

func (e errUnprunable) Error() string { return "retrieve: not prunable: " + e.why }

// searchPruned returns what the exhaustive search returns (see Search), or
// errUnprunable when the question must take that path.
// Beside the hits it returns their raw scores, for tests to compare bit for
// bit with bleve's.
func (l *Lexical) searchPruned(ctx context.Context, text string, elig Eligibility, b Bounds, n int, stats BM25Stats) ([]Hit, []float64, error) {
	tokens := l.textAnalyzer.Analyze([]byte(text))
	if len(tokens) == 0 {
		return nil, nil, nil // bleve: a match-none searcher
	}
	if searcher.DisjunctionMaxClauseCount != 0 && len(tokens) > searcher.DisjunctionMaxClauseCount {
		return nil, nil, errUnprunable{"more tokens than bleve takes (its error is the answer)"}
	}
	parts, err := l.partsFor(elig, b)
	if err != nil || len(parts) == 0 {
		return nil, nil, err
	}
	if len(parts) > 1 || l.days > 0 {
		var err error
		if stats, err = l.wholeStats(ctx, text, stats); err != nil {
			return nil, nil, err
		}
	}
	// The latest spans first: on the day asked, what came into force in the
	// span that holds the day is mostly still in force, where an older span
	// holds more versions replaced since, which the filter turns away; the
	// floor that the first partitions raise prunes the rest. The hits do not
	// depend on the order, the work does (docs/benchmarks.md, issue 30).
	slices.SortFunc(parts, func(a, b searchPart) int {
		return cmp.Or(cmp.Compare(b.p.key.Epoch, a.p.key.Epoch), comparePartKeys(a.p.key, b.p.key))
	})
	ps, _ := l.searches.Get().(*prunedSearch)
	if ps == nil {
		ps = &prunedSearch{}
	}
	ps.cache = l.postings
	ps.parts = ps.parts[:0]
	defer func() {
		ps.close()
		ps.release()
		l.searches.Put(ps)
	}()
	for i, sp := range parts {
		adv, err := sp.p.idx.Advanced()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: pruned search: %v", ErrLexical, err)
		}
		r, err := adv.Reader()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: pruned search: reader: %v", ErrLexical, err)
		}
		pc := ps.nextPart(r, sp.p.dir)
		if i == 0 {
			if err := ps.plan(ctx, r, tokens, stats); err != nil {
				return nil, nil, inPart(pc.dir, err)
			}
		}
	}
	if err := ps.openParts(ctx, parts, elig); err != nil {
		return nil, nil, err
	}
	top := &topQ{n: n, heap: ps.topHeap[:0], ties: ps.topTies[:0]}
	defer func() { ps.topHeap, ps.topTies = top.heap, top.ties }()
	for i, pc := range ps.parts {
		if err := ps.run(ctx, top, i, pc); err != nil {
			return nil, nil, inPart(pc.dir, err)
		}
	}
	cut := math.Inf(-1)
	if top.full() {
		cut = top.min() - 1.5*ScoreQuantum // a quantum below may tie when rounded otherwise
	}
	for _, q := range ps.risky {
		if q >= cut {
			return nil, nil, errUnprunable{"a score a few roundings from a quantum boundary, summed in another order than bleve's heap"}
		}
	}
	type scored struct {
		Hit
		raw float64
	}
	found := append(top.heap, top.ties...)
	hits := make([]scored, len(found))
	var idb [8]byte
	for i, c := range found {
		binary.BigEndian.PutUint64(idb[:], c.num)
		id, err := ps.parts[c.part].r.ExternalID(idb[:])
		if err != nil {
			return nil, nil, inPart(ps.parts[c.part].dir, fmt.Errorf("%w: pruned search: external ID of %d: %v", ErrDamaged, c.num, err))
		}
		hits[i] = scored{Hit{ID: id, Score: c.q}, c.raw}
	}
	slices.SortFunc(hits, func(a, b scored) int { return compareHits(a.Hit, b.Hit) })
	hits = hits[:min(n, len(hits))]
	out, raw := make([]Hit, len(hits)), make([]float64, len(hits))
	for i, h := range hits {
		out[i], raw[i] = h.Hit, h.raw
	}
	return out, raw, nil
}

// openParts opens the cursors of each partition of the search (ps.parts,
// read from parts): its eligibility filter, then its terms' postings. A
// partition's first reads (lists decoded, dictionaries, columns, pages
// faulted in) are most of what a request that reads it first pays, and
// they depend on no other partition's, so the partitions are opened side
// by side (par.Each). The search that follows runs them in order, on the
// caller's goroutine.
//
// Invariant: the cursors, and the error returned (the first partition's
// in ps.parts order), do not depend on how the partitions were shared out.
func (ps *prunedSearch) openParts(ctx context.Context, parts []searchPart, elig Eligibility) error {
	return par.Each(len(parts), func(i int) (err error) {
		pc, sp := ps.parts[i], parts[i]
		// A fault on a mapped segment's page: a panic, recovered here as
		// Search recovers on its own goroutine (recoverRead).
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				err = inPart(pc.dir, fmt.Errorf("%w: search: bleve panicked reading a partition: %v", ErrDamaged, r))
			}
		}()
		// The filter first: a cursor over decoded postings takes its bits
		// (decoded) as it opens.
		if pc.filter, err = newEligibleFilter(ctx, pc.r, sp.p.idx, &sp.p.cols, elig, sp.bounds); err != nil {
			return err
		}
		if pc.filter != nil {
			pc.filter.admit(&pc.bits)
		}
		return inPart(pc.dir, ps.open(ctx, pc))
	})
}

// plan derives, for the question's tokens, what bleve's term and
// disjunction searchers would: idf, query norm, order. Statistics stats
// leaves unset are r's (an unpartitioned index has one reader).
func (ps *prunedSearch) plan(ctx context.Context, r index.IndexReader, tokens analysis.TokenStream, stats BM25Stats) error {
	var docs uint64
	var card int
	if stats.Docs > 0 {
		// as bleve reads search.BM25Stats: the count converted from float64
		docs, card = uint64(float64(stats.Docs)), int(stats.Tokens)
	} else {
		var err error
		if docs, err = r.DocCount(); err != nil {
			return fmt.Errorf("%w: pruned search: doc count: %v", ErrDamaged, err)
		}
		br, ok := r.(index.BM25Reader)
		if !ok {
			return errUnprunable{"reader without field cardinality"}
		}
		if card, err = br.FieldCardinality(fieldText); err != nil {
			return fmt.Errorf("%w: pruned search: field cardinality: %v", ErrDamaged, err)
		}
	}
	if docs == 0 {
		return errUnprunable{"no documents (bleve falls back to tf-idf)"}
	}
	avg := math.Ceil(float64(card) / float64(docs))
	if !(avg > 0) || math.IsInf(avg, 0) {
		return errUnprunable{"no average field length"}
	}
	ps.total, ps.avg, ps.heap = len(tokens), avg, len(tokens) > searcher.DisjunctionHeapTakeover
	byTerm := map[string]*prunedTerm{}
	slots := make(slotList, len(tokens))
	for i, tok := range tokens {
		t := byTerm[string(tok.Term)]
		if t == nil {
			t = &prunedTerm{term: string(tok.Term)}
			if stats.DocFreq != nil {
				t.df = stats.DocFreq[t.term]
			} else {
				tfr, err := termFieldReader(ctx, r, tok.Term, fieldText, false)
				if err != nil {
					return fmt.Errorf("%w: pruned search: term %q: %v", ErrDamaged, tok.Term, err)
				}
				t.df = tfr.Count()
				tfr.Close()
			}
			// scorer.TermQueryScorer.computeIDF, BM25 branch
			t.idf = math.Log(1 + (float64(docs)-float64(t.df)+0.5)/(float64(t.df)+0.5))
			byTerm[t.term] = t
			ps.terms = append(ps.terms, t)
		}
		t.mult++
		slots[i] = t
	}
	// The slice disjunction's order: its searchers sorted by Count with
	// sort.Sort (not stable), which this replays on a list in the same
	// initial order. The heap disjunction keeps token order.
	if !ps.heap {
		sort.Sort(slots)
	}
	weights := 0.0
	for _, t := range slots {
		boosted := 1.0 * t.idf // TermQueryScorer.Weight: (boost × idf)²
		weights += boosted * boosted
	}
	qnorm := 1.0 / math.Sqrt(weights)
	for _, t := range ps.terms {
		t.qw = 1.0 * t.idf * qnorm
		// tf·k1/(tf + k1·x) < k1 for x ≥ 1-b > 0: one searcher scores
		// below idf·k1·qw.
		t.ub = float64(t.mult) * t.idf * search.BM25_k1 * t.qw * (1 + pruneEps)
	}
	slices.SortFunc(ps.terms, func(a, b *prunedTerm) int {
		return cmp.Or(cmp.Compare(a.ub, b.ub), cmp.Compare(a.term, b.term))
	})
	pos := make(map[*prunedTerm]int, len(ps.terms))
	for i, t := range ps.terms {
		pos[t] = i
	}
	ps.order = grown(ps.order, len(slots))
	for i, t := range slots {
		ps.order[i] = pos[t]
	}
	// A document matching only terms[:i] scores at most their bounds'
	// sum times the coordination factor of all their searchers.
	ps.ubPrefix = grown(ps.ubPrefix, len(ps.terms)+1)
	ps.ubSum = grown(ps.ubSum, len(ps.terms)+1)
	ps.multSum = grown(ps.multSum, len(ps.terms)+1)
	sum, m := 0.0, 0
	for i, t := range ps.terms {
		sum += t.ub
		m += t.mult
		ps.ubPrefix[i+1] = sum * float64(m) / float64(ps.total) * (1 + pruneEps)
		ps.ubSum[i+1], ps.multSum[i+1] = sum, m
	}
	return nil
}

// open positions a cursor per term on its first posting in pc's partition.
// Where the question's term and its document frequency come from the
// scope's statistics, the reader's own count is not used.
func (ps *prunedSearch) open(ctx context.Context, pc *partCursors) error {
	var dicts *fieldDicts // the partition's, shared by its terms
	if snap, ok := pc.r.(*scorch.IndexSnapshot); ok {
		var err error
		if dicts, err = newFieldDicts(snap, fieldText); err != nil {
			return fmt.Errorf("%w: pruned search: dictionaries: %v", ErrDamaged, err)
		}
	}
	cs := grown(pc.cs, len(ps.terms)) // the partition's cursors, in one array
	pc.cs = cs
	if dicts != nil && ps.cache != nil {
		pc.decs = grown(pc.decs, len(ps.terms))
		pc.segs = grown(pc.segs, len(ps.terms)*len(dicts.dicts))
	}
	for i, t := range ps.terms {
		c := &cs[i]
		c.prunedTerm = t
		dec, err := ps.decoded(dicts, t.term, pc, i)
		if err != nil {
			return fmt.Errorf("%w: pruned search: term %q: %v", ErrDamaged, t.term, err)
		}
		if dec != nil {
			c.dec = dec
			pc.cur = append(pc.cur, c)
			c.seek(0)
			continue
		}
		if dicts != nil {
			c.seq, err = dicts.reader([]byte(t.term), true)
			c.tfr = c.seq
		} else {
			c.tfr, err = termFieldReader(ctx, pc.r, []byte(t.term), fieldText, true)
			c.tfd = new(index.TermFieldDoc)
		}
		if err != nil {
			return fmt.Errorf("%w: pruned search: term %q: %v", ErrDamaged, t.term, err)
		}
		pc.cur = append(pc.cur, c)
		if err := c.next(); err != nil {
			return err
		}
	}
	return nil
}

// decoded returns a cursor over term's decoded postings in the segments of
// dicts, or nil where the search has no cache, the reader is not a scorch
// snapshot, or the cache does not take the postings of some segment.
// It is term i's in pc, in pc's arrays (open sized them).
func (ps *prunedSearch) decoded(dicts *fieldDicts, term string, pc *partCursors, i int) (*decodedCursor, error) {
	if ps.cache == nil || dicts == nil {
		return nil, nil
	}
	n := len(dicts.dicts)
	c := &pc.decs[i]
	*c = decodedCursor{segs: pc.segs[i*n : (i+1)*n : (i+1)*n], except: dicts.except, starts: dicts.starts, i: -1}
	if pc.filter != nil {
		c.admitted = pc.filter.bits
	}
	for i, dict := range dicts.dicts {
		p, ok, err := ps.cache.postings(dicts.segs[i], dict, term)
		if err != nil || !ok {
			return nil, err
		}
		c.segs[i] = p
	}
	return c, nil
}

// slotList is the question's term searchers in token order, sorted as
// bleve's OrderedSearcherList sorts them.
type slotList []*prunedTerm

func (s slotList) Len() int           { return len(s) }
func (s slotList) Less(i, j int) bool { return s[i].df < s[j].df }
func (s slotList) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

// next moves t to its next posting.
func (t *cursor) next() error {
	if t.dec != nil {
		t.seek(t.dec.i + 1)
		return nil
	}
	if t.seq != nil {
		p, err := t.seq.nextPosting()
		return t.takePosting(p, err)
	}
	d, err := t.tfr.Next(t.tfd)
	return t.take(d, err)
}

// advance moves t to its first posting at or after document num.
func (t *cursor) advance(num uint64) error {
	if t.cur >= num { // done too: noMore
		return nil
	}
	if t.dec != nil {
		t.seekAtOrAfter(num)
		return nil
	}
	if t.seq != nil {
		p, err := t.seq.advancePosting(num)
		return t.takePosting(p, err)
	}
	binary.BigEndian.PutUint64(t.idb[:], num)
	d, err := t.tfr.Advance(t.idb[:], t.tfd)
	return t.take(d, err)
}

// takePosting is take for a posting of t.seq, numbered t.seq.cur.
func (t *cursor) takePosting(p segment.Posting, err error) error {
	if err != nil {
		return fmt.Errorf("%w: pruned search: postings of %q: %v", ErrDamaged, t.term, err)
	}
	if p == nil {
		t.cur = noMore
		return nil
	}
	t.cur, t.freq, t.flen = t.seq.cur, p.Frequency(), postingLength(p)
	return nil
}

func (t *cursor) take(d *index.TermFieldDoc, err error) error {
	if err != nil {
		return fmt.Errorf("%w: pruned search: postings of %q: %v", ErrDamaged, t.term, err)
	}
	if d == nil {
		t.cur = noMore
		return nil
	}
	if len(d.ID) != 8 {
		return fmt.Errorf("%w: pruned search: postings of %q: internal ID of %d bytes", ErrDamaged, t.term, len(d.ID))
	}
	t.cur, t.freq, t.flen = binary.BigEndian.Uint64(d.ID), d.Freq, lengthOfNorm(d.Norm)
	return nil
}

// lengthOfNorm is the field length scorer.TermQueryScorer.Score derives
// from a posting's norm, in its expression.
func lengthOfNorm(norm float64) float64 { return 1 / (norm * norm) }

// zapLengths holds lengthOfNorm of the norm zap hands out for each field
// length below its size: the same float64, without the square root and two
// divisions per posting (a tenth of the pruned search's time).
var zapLengths = func() (a [2048]float64) {
	for l := range a {
		a[l] = lengthOfNorm(zapNorm(uint64(l)))
	}
	return a
}()

// zapNorm is the norm zap's Posting.Norm returns for field length l.
func zapNorm(l uint64) float64 { return float64(float32(1.0 / math.Sqrt(float64(uint32(l))))) }

// postingLength is lengthOfNorm(p.Norm()), from the table where p gives
// its field length (zap's postings do).
func postingLength(p segment.Posting) float64 {
	if z, ok := p.(interface{ NormUint64() uint64 }); ok {
		if l := z.NormUint64(); l < uint64(len(zapLengths)) {
			return zapLengths[l]
		}
	}
	return lengthOfNorm(p.Norm())
}

// searcherScore is one term searcher's score for the current posting,
// computed as scorer.TermQueryScorer.Score computes it (BM25 branch), with
// the same expressions so that a compiler fuses (or not) as it does there.
func (t *cursor) searcherScore(avg float64) float64 {
	var tf float64
	if t.freq < scorer.MaxSqrtCache {
		tf = scorer.SqrtCache[int(t.freq)]
	} else {
		tf = math.Sqrt(float64(t.freq))
	}
	fieldLength := t.flen
	score := t.idf * (tf * search.BM25_k1) /
		(tf + search.BM25_k1*(1-search.BM25_b+(search.BM25_b*fieldLength/avg)))
	if t.qw != 1.0 {
		score = score * t.qw
	}
	return score
}

func (ps *prunedSearch) close() {
	for _, pc := range ps.parts {
		for _, c := range pc.cur {
			if c.tfr != nil {
				c.tfr.Close()
			}
		}
		if pc.filter != nil {
			pc.filter.close()
		}
		pc.r.Close()
	}
}

// candidate is a scored document, by internal number.
type candidate struct {
	part int // index in prunedSearch.parts
	num  uint64
	raw  float64
	q    float64 // raw quantized
}

// topQ keeps the n best quantized scores and every document that ties the
// n-th of them: a superset of the top n by (quantized score, ID) whatever the
// IDs. Invariant: every document it dropped scores, quantized, strictly
// below min() once full.
type topQ struct {
	n    int
	heap []candidate // min-heap by q
	ties []candidate // q == heap[0].q, not in heap
}

func (h *topQ) full() bool { return len(h.heap) >= h.n }

func (h *topQ) min() float64 { return h.heap[0].q }

func (h *topQ) offer(c candidate) {
	if !h.full() {
		h.heap = append(h.heap, c)
		h.up(len(h.heap) - 1)
		return
	}
	switch m := h.heap[0].q; {
	case c.q < m:
	case c.q == m:
		h.ties = append(h.ties, c)
	default:
		out := h.heap[0]
		h.heap[0] = c
		h.down(0)
		if h.heap[0].q == out.q {
			h.ties = append(h.ties, out)
		} else {
			h.ties = h.ties[:0] // they tied a score now below the cut
		}
	}
}

func (h *topQ) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.heap[p].q <= h.heap[i].q {
			return
		}
		h.heap[p], h.heap[i] = h.heap[i], h.heap[p]
		i = p
	}
}

func (h *topQ) down(i int) {
	for {
		l, s := 2*i+1, i
		if l < len(h.heap) && h.heap[l].q < h.heap[s].q {
			s = l
		}
		if r := l + 1; r < len(h.heap) && h.heap[r].q < h.heap[s].q {
			s = r
		}
		if s == i {
			return
		}
		h.heap[s], h.heap[i] = h.heap[i], h.heap[s]
		i = s
	}
}

// floor is the raw score a bound must reach for its document to be scored:
// below it, the document's quantized score is below the n-th best (with two
// quanta and pruneEps to spare). -Inf until the collector is full.
func (h *topQ) floor() float64 {
	if !h.full() {
		return math.Inf(-1)
	}
	return h.min() - 2*ScoreQuantum
}

// run is MaxScore over the terms in partition pc (number part), offering
// its candidates to top, which the partitions share (a floor one partition
// raised holds in the next): terms[:ess] are non-essential (a document
// matching only them cannot reach the floor) and are only advanced to the
// candidates that the essential terms produce.
//
// Invariant: a document is passed over only when the eligibility filter
// turns it away, or when a bound on its score, times 1+pruneEps, is below
// floor(), so its quantized score is below the n-th best.
func (ps *prunedSearch) run(ctx context.Context, top *topQ, part int, pc *partCursors) error {
	ess := 0
	// A filter of columns alone is a bit per document (eligibleFilter.admit):
	// asked first, it turns a version not in force away before its terms
	// are scored (on a random day, half the candidates; a cursor over
	// decoded postings has already stepped over them, the others have
	// not). One with searchers is asked only of what the bound lets
	// through.
	cheap := pc.filter != nil && pc.filter.onColumns()
	for steps := 0; ; steps++ {
		if steps%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		floor := top.floor()
		for ess < len(ps.terms) && ps.ubPrefix[ess+1] < floor {
			ess++
		}
		// the next candidate: the least current document of an essential term
		d := uint64(noMore)
		for _, t := range pc.cur[ess:] {
			d = min(d, t.cur)
		}
		if d == noMore {
			break
		}
		if cheap {
			ok, err := pc.filter.admits(d)
			if err != nil {
				return err
			}
			if !ok {
				for _, t := range pc.cur[ess:] {
					if t.cur == d {
						if err := t.next(); err != nil {
							return err
						}
					}
				}
				continue
			}
		}
		// essential terms at d: exact scores; the rest: bounds
		sum, m := 0.0, 0
		for _, t := range pc.cur[ess:] {
			t.hit = t.cur == d
			if t.hit {
				t.score = t.searcherScore(ps.avg)
				sum += float64(t.mult) * t.score
				m += t.mult
			}
		}
		ok := ps.bound(sum, m, ess) >= floor
		if ok && pc.filter != nil && !cheap {
			var err error
			if ok, err = pc.filter.admits(d); err != nil {
				return err
			}
		}
		// non-essential terms, largest bound first, while the document can
		// still reach the floor
		rest := ess
		for i := ess - 1; ok && i >= 0; i-- {
			t := pc.cur[i]
			if err := t.advance(d); err != nil {
				return err
			}
			rest = i
			t.hit = t.cur == d
			if t.hit {
				t.score = t.searcherScore(ps.avg)
				sum += float64(t.mult) * t.score
				m += t.mult
			}
			ok = ps.bound(sum, m, rest) >= floor
		}
		if ok {
			// every term is known at d: bleve's sum, in bleve's order
			raw := 0.0
			for _, i := range ps.order {
				if t := pc.cur[i]; t.hit {
					raw += t.score
				}
			}
			raw = raw * (float64(m) / float64(ps.total))
			c := candidate{part: part, num: d, raw: raw, q: quantize(raw)}
			if ps.heap && nearBoundary(raw, m) || !exactReplay && nearBoundary(raw, 2*m+4) {
				ps.risky = append(ps.risky, c.q)
			}
			top.offer(c)
		}
		for _, t := range pc.cur[:ess] {
			t.hit = false
		}
		for _, t := range pc.cur[ess:] {
			if t.hit {
				if err := t.next(); err != nil {
					return err
				}
			}
			t.hit = false
		}
	}
	return nil
}

// nearBoundary reports whether raw, a sum of m positive searcher scores times
// the coordination factor, lies close enough to a rounding boundary of
// quantize that the same terms summed in another order might round to the
// neighbouring quantum. Two recursive sums of m positive terms differ by at
// most 2(m-1) roundings of the sum; the coordination product and the division
// by ScoreQuantum add four more. The margin allows (2m+8) roundings, and ten
// per cent.
func nearBoundary(raw float64, m int) bool {
	y := raw / ScoreQuantum
	const u = 0x1p-53 // unit roundoff of float64
	margin := float64(2*m+8) * u * math.Abs(y) * 1.1
	return math.Abs(y-(math.Floor(y)+0.5)) <= margin
}

// bound bounds the score of a document whose known terms score sum over m
// searchers and which may also match terms[:rest]. (The bounds' sum is
// added in another order than one by one: a few roundings, which pruneEps
// covers.)
func (ps *prunedSearch) bound(sum float64, m, rest int) float64 {
	sum += ps.ubSum[rest]
	m += ps.multSum[rest]
	return sum * float64(m) / float64(ps.total) * (1 + pruneEps)
}

// eligibleFilter answers, for increasing internal document numbers, whether
// the eligibility admits them: whether each of its clauses (Eligibility.filter)
// holds the document. A clause numbers alone decide is compared on the
// partition's columns (columns.go); any other is a searcher of its own,
// advanced to each candidate. It admits what Eligible reads (the clauses
// over match-all) of the documents the index holds; a candidate comes from
// the index's own term readers, which pass over deleted documents as
// match-all does.
//
// (One boolean searcher of all the clauses, as Eligible reads, stepped from
// an excluded candidate to the next admitted document one document at a
// time; on a random day most of a partition's history is excluded, and that
// stepping was most of the filter's cost.)
type eligibleFilter struct {
	must, mustNot       []*clauseCursor
	mustCol, mustNotCol []*colClause
	sctx                *search.SearchContext
	// The snapshot's segments (segs): where each starts in the snapshot's
	// numbering (starts, ascending, as scorch numbers them) and its columns;
	// seg is the segment of the last candidate.
	segs   []*scorch.SegmentSnapshot
	starts []uint64
	cols   [][]column
	seg    int
	// bits, once admit has made them (every clause on columns: onColumns),
	// holds each segment's admitted documents, and admits reads them.
	bits [][]uint64
}

// clauseCursor is one clause's searcher and the document it stands on.
type clauseCursor struct {
	s    search.Searcher
	cur  uint64
	init bool // cur is set
	done bool // the searcher has no document at or after the last asked
}

// newEligibleFilter returns nil when the eligibility has no clause: every
// document the index holds is admitted. cols caches the partition's
// columns; the clauses run as searchers where r is not a scorch snapshot.
func newEligibleFilter(ctx context.Context, r index.IndexReader, idx bleve.Index, cols *columns, elig Eligibility, b Bounds) (*eligibleFilter, error) {
	f := elig.filter(b)
	if f.none() {
		return nil, nil
	}
	ef := &eligibleFilter{}
	snap, _ := r.(*scorch.IndexSnapshot)
	var fields []string
	// split puts each clause on the columns when it can, else among qs.
	split := func(qs []query.Query, forms []*colClause) (searched []query.Query, onCols []*colClause) {
		for i, q := range qs {
			if forms[i] == nil || snap == nil {
				searched = append(searched, q)
				continue
			}
			onCols = append(onCols, forms[i])
			for _, ts := range [][]colTest{forms[i].all, forms[i].none} {
				for k := range ts {
					ts[k].col = slices.Index(fields, ts[k].field)
					if ts[k].col < 0 {
						ts[k].col, fields = len(fields), append(fields, ts[k].field)
					}
				}
			}
		}
		return searched, onCols
	}
	must, mustCol := split(f.must, f.mustCols)
	mustNot, mustNotCol := split(f.mustNot, f.mustNotCols)
	ef.mustCol, ef.mustNotCol = mustCol, mustNotCol
	if len(fields) > 0 {
		var err error
		if ef.cols, err = cols.forSnapshot(snap, fields); err != nil {
			return nil, err
		}
		ef.segs = snap.Segments()
		ef.starts = segmentStarts(ef.segs)
	}
	pool := 1
	open := func(qs []query.Query) ([]*clauseCursor, error) {
		out := make([]*clauseCursor, 0, len(qs))
		for _, q := range qs {
			s, err := q.Searcher(ctx, sequential(r), idx.Mapping(), search.SearcherOptions{Score: "none"})
			if err != nil {
				return out, fmt.Errorf("%w: pruned search: eligibility: %v", ErrLexical, err)
			}
			out = append(out, &clauseCursor{s: s})
			pool += s.DocumentMatchPoolSize()
		}
		return out, nil
	}
	var err error
	if ef.must, err = open(must); err == nil {
		ef.mustNot, err = open(mustNot)
	}
	if err != nil {
		ef.close()
		return nil, err
	}
	ef.sctx = &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(pool, 0), IndexReader: r}
	return ef, nil
}

// admit makes, where every clause of f is decided on columns, the bits
// of the documents f admits in each segment (bitsets.admittedBits), in
// b's arrays, for admits and the cursors over decoded postings to read.
func (f *eligibleFilter) admit(b *bitsets) {
	if !f.onColumns() || f.segs == nil {
		return
	}
	b.counts, b.except = grown(b.counts, len(f.segs)), grown(b.except, len(f.segs))
	for i, ss := range f.segs {
		b.counts[i], b.except[i] = ss.Segment().Count(), ss.Deleted()
	}
	b.admittedBits(f.cols, f.mustCol, f.mustNotCol)
	f.bits = b.sets
}

// onColumns reports whether every clause of f is decided on columns: no
// searcher is advanced to answer admits.
func (f *eligibleFilter) onColumns() bool { return len(f.must)+len(f.mustNot) == 0 }

// admits reports whether document num is eligible; num must not decrease
// from one call to the next.
func (f *eligibleFilter) admits(num uint64) (bool, error) {
	if len(f.mustCol)+len(f.mustNotCol) > 0 {
		for f.seg+1 < len(f.starts) && f.starts[f.seg+1] <= num {
			f.seg++
		}
		local := num - f.starts[f.seg]
		if f.bits != nil {
			return admitted(f.bits[f.seg], local), nil
		}
		cols := f.cols[f.seg]
		for _, c := range f.mustCol {
			if !c.holds(cols, local) {
				return false, nil
			}
		}
		for _, c := range f.mustNotCol {
			if c.holds(cols, local) {
				return false, nil
			}
		}
	}
	for _, c := range f.must {
		if ok, err := c.holds(f.sctx, num); !ok || err != nil {
			return false, err
		}
	}
	for _, c := range f.mustNot {
		if ok, err := c.holds(f.sctx, num); ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// holds reports whether c's clause holds document num; num must not
// decrease from one call to the next (a call skipped for a document leaves
// the cursor behind, and the next advances it).
func (c *clauseCursor) holds(sctx *search.SearchContext, num uint64) (bool, error) {
	if c.done {
		return false, nil
	}
	if c.init && c.cur >= num {
		return c.cur == num, nil
	}
	var idb [8]byte
	binary.BigEndian.PutUint64(idb[:], num)
	dm, err := c.s.Advance(sctx, idb[:])
	c.init = true
	if err != nil {
		return false, fmt.Errorf("%w: pruned search: eligibility: %v", ErrDamaged, err)
	}
	if dm == nil {
		c.done = true
		return false, nil
	}
	if len(dm.IndexInternalID) != 8 {
		return false, fmt.Errorf("%w: pruned search: eligibility: internal ID of %d bytes", ErrDamaged, len(dm.IndexInternalID))
	}
	c.cur = binary.BigEndian.Uint64(dm.IndexInternalID)
	sctx.DocumentMatchPool.Put(dm)
	return c.cur == num, nil
}

func (f *eligibleFilter) close() {
	for _, c := range slices.Concat(f.must, f.mustNot) {
		c.s.Close()
	}
}
