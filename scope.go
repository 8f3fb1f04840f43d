package evpack

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// A request reads a scope: its tenant and the shared tenant "" (a request of
// "" reads "" alone), as of one generation of the index. Every corpus figure
// a ranking uses (BM25's document count, token total and term document
// frequencies, the reranker's document frequencies, the corpus digest in the
// fingerprint) is the scope's at that generation, so neither another
// tenant's chunks nor a later commit can move a pack. The figures are kept
// per tenant as series over generations and summed over the scope's tenants
// when a request asks.
//
// Invariant: a series only grows at its end, and only while a commit builds
// the next state; a state's series are never changed once it is published
// (see state.extend).

// point is a cumulative count as of the generation that last changed it
// (the checkpoint's type: a series is written and read back without a copy).
type point = checkpoint.Point

// series is a count's history: points in ascending generation order.
type series []point

// at returns the count as of generation g.
func (s series) at(g int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].Gen > g })
	if i == 0 {
		return 0
	}
	return s[i-1].N
}

// add returns s with d added from generation g on; g is at least the last
// generation in s. The backing array may be shared with the state s came
// from, which never reads past its own length.
func (s series) add(g, d int64) series {
	if n := len(s); n > 0 && s[n-1].Gen == g {
		s[n-1].N += d
		return s
	}
	return append(s, point{Gen: g, N: s.at(g) + d})
}

// lanes is an order-free digest of a set of chunks: the lane-wise sum
// (mod 2^64) of each chunk's BLAKE3(ID, content hash), so it can be kept
// incrementally and is the same whatever order or batching built the set.
type lanes [4]uint64

func chunkLanes(c *evidence.Chunk) lanes { return keyLanes(c.ID + "\x00" + c.ContentHash) }

// keyLanes spreads BLAKE3(key) over the four lanes.
func keyLanes(key string) lanes {
	sum := blake3.Sum256([]byte(key))
	var l lanes
	for i := range l {
		l[i] = binary.LittleEndian.Uint64(sum[8*i:])
	}
	return l
}

func (l lanes) plus(m lanes) lanes {
	for i := range l {
		l[i] += m[i]
	}
	return l
}

// lanePoint is a tenant's digest as of a generation.
type lanePoint struct {
	gen int64
	l   lanes
}

// tenantStats are one tenant's corpus figures over generations.
type tenantStats struct {
	docs, tokens series
	facts        series   // facts on the tenant's chunks
	purges       series   // purges of the tenant's chunks
	chunkIDs     []string // in commit order; may share its array with earlier states (see series.add)
	rrTerms      series   // reranker terms over all chunks (rerank.Documents' TermTotal)
	digest       []lanePoint
	lexDF        map[string]series // analyzed (bleve) term -> chunks holding it
	rrDF         map[string]series // reranker term -> chunks holding it
}

// add counts chunk c, committed at generation gen, with its distinct
// lexical and reranker terms and its token count. ts must be a copy owned by
// the state being built (see state.touch).
func (ts *tenantStats) add(gen int64, c *evidence.Chunk, lexTerms, rrTerms []string, tokens, rrCount int) {
	ts.docs = ts.docs.add(gen, 1)
	ts.chunkIDs = append(ts.chunkIDs, c.ID)
	ts.rrTerms = ts.rrTerms.add(gen, int64(rrCount))
	ts.tokens = ts.tokens.add(gen, int64(tokens))
	ts.addLanes(gen, chunkLanes(c))
	for _, t := range lexTerms {
		ts.lexDF[t] = ts.lexDF[t].add(gen, 1)
	}
	for _, t := range rrTerms {
		ts.rrDF[t] = ts.rrDF[t].add(gen, 1)
	}
}

// addFact counts fact f, committed at generation gen, on one of the
// tenant's chunks: it moves the tenant's generation and digest like a chunk.
func (ts *tenantStats) addFact(gen int64, f *evidence.Fact) {
	ts.facts = ts.facts.add(gen, 1)
	ts.addLanes(gen, keyLanes("fact\x00"+f.Key()))
}

// addLanes adds l to the tenant's digest from generation gen on.
func (ts *tenantStats) addLanes(gen int64, l lanes) {
	if n := len(ts.digest); n > 0 && ts.digest[n-1].gen == gen {
		ts.digest[n-1].l = ts.digest[n-1].l.plus(l)
		return
	}
	var prev lanes
	if n := len(ts.digest); n > 0 {
		prev = ts.digest[n-1].l
	}
	ts.digest = append(ts.digest, lanePoint{gen: gen, l: prev.plus(l)})
}

// digestAt returns the tenant's digest as of generation g.
func (ts *tenantStats) digestAt(g int64) lanes {
	i := sort.Search(len(ts.digest), func(i int) bool { return ts.digest[i].gen > g })
	if i == 0 {
		return lanes{}
	}
	return ts.digest[i-1].l
}

// clone returns a copy of ts whose maps can be written without touching ts.
func (ts *tenantStats) clone() *tenantStats {
	cp := *ts
	cp.lexDF, cp.rrDF = maps.Clone(ts.lexDF), maps.Clone(ts.rrDF)
	return &cp
}

func newTenantStats() *tenantStats {
	return &tenantStats{lexDF: map[string]series{}, rrDF: map[string]series{}}
}

// scope is what one request reads: the tenants it sees, as of the scope's
// generation. It implements rerank.Stats.
type scope struct {
	st      *state
	tenants []*tenantStats // in scopeTenants order; nil for a tenant with no chunks
	names   []string
	gen     int64  // the scope's generation: its last change at or before the index generation asked
	latest  bool   // no chunk of the scope was committed after gen
	corpus  string // digest of the scope's chunks at gen (the fingerprint's "corpus")
}

// scopeTenants lists the tenants a request of tenant sees, in a fixed order.
func scopeTenants(tenant string) []string {
	if tenant == "" {
		return []string{""}
	}
	return []string{tenant, ""}
}

// scope returns the scope of a request of tenant reading index generation
// upTo (which must not exceed st.gen).
func (st *state) scope(tenant string, upTo int64) scope {
	sc := scope{st: st, names: scopeTenants(tenant), latest: true}
	for _, name := range sc.names {
		ts := st.tenants[name]
		sc.tenants = append(sc.tenants, ts)
		if ts == nil {
			continue
		}
		for _, s := range []series{ts.docs, ts.facts, ts.purges} {
			i := sort.Search(len(s), func(i int) bool { return s[i].Gen > upTo })
			if i > 0 {
				sc.gen = max(sc.gen, s[i-1].Gen)
			}
			if i < len(s) {
				sc.latest = false
			}
		}
	}
	sc.corpus = sc.digest()
	return sc
}

// sum adds f over the scope's tenants.
func (s scope) sum(f func(ts *tenantStats) int64) int64 {
	var n int64
	for _, ts := range s.tenants {
		if ts != nil {
			n += f(ts)
		}
	}
	return n
}

// bm25 returns the lexical statistics of the scope for a question whose
// analyzed terms are terms.
func (s scope) bm25(terms []string) retrieve.BM25Stats {
	df := make(map[string]uint64, len(terms))
	for _, t := range terms {
		df[t] = uint64(s.sum(func(ts *tenantStats) int64 { return ts.lexDF[t].at(s.gen) }))
	}
	return retrieve.BM25Stats{
		Docs:    s.sum(func(ts *tenantStats) int64 { return ts.docs.at(s.gen) }),
		Tokens:  s.sum(func(ts *tenantStats) int64 { return ts.tokens.at(s.gen) }),
		DocFreq: df,
	}
}

// DocCount implements rerank.Stats: chunks in the scope.
func (s scope) DocCount() int {
	return int(s.sum(func(ts *tenantStats) int64 { return ts.docs.at(s.gen) }))
}

// DocFreq implements rerank.Stats: chunks of the scope holding term.
func (s scope) DocFreq(term string) int {
	return int(s.sum(func(ts *tenantStats) int64 { return ts.rrDF[term].at(s.gen) }))
}

// ChunkTerms implements rerank.Documents.
func (s scope) ChunkTerms(id string) []string {
	d, gen, ok := s.st.docOf(id)
	if !ok || gen > s.gen || !d.fill(d.pos, d.pos+1) { // as !s.admits(id)
		return nil
	}
	return s.st.termsOf(d.nums[d.pos])
}

// TermTotal implements rerank.Documents: reranker terms over the scope's
// chunks at its generation.
func (s scope) TermTotal() int64 {
	return s.sum(func(ts *tenantStats) int64 { return ts.rrTerms.at(s.gen) })
}

// Document implements rerank.Documents: id's document version in document
// order as the scope's generation had it. The terms are made from their
// numbers at every call: the engine's own rerankers read the numbers
// (DocumentNumbers).
func (s scope) Document(id string) ([]string, [][]string, int) {
	ids, nums, pos := s.document(id)
	if ids == nil {
		return nil, nil, -1
	}
	terms := make([][]string, len(nums))
	for i, ns := range nums {
		terms[i] = s.st.termsOf(ns)
	}
	return ids, terms, pos
}

// DocumentNumbers implements rerank.TermNumbers: Document with the terms
// as numbers, and nil for the terms as strings.
func (s scope) DocumentNumbers(id string) ([]string, [][]string, [][]uint32, int) {
	ids, nums, pos := s.document(id)
	return ids, nil, nums, pos
}

// TermNumber implements rerank.TermNumbers: the number every chunk's copy
// of term carries, false when no chunk of the index has it.
func (s scope) TermNumber(term string) (uint32, bool) {
	n, ok := s.st.intern[term]
	return n, ok
}

// document returns id's document version at the scope's generation: the
// chunk IDs in document order, their reranker terms as numbers, and id's
// position; nil, nil and -1 when the scope does not hold id.
func (s scope) document(id string) ([]string, [][]uint32, int) {
	d, gen, ok := s.st.docOf(id)
	if !ok || gen > s.gen || !d.fill(0, len(d.ids)) { // as !s.admits(id), without a second lookup
		return nil, nil, -1
	}
	if s.latest {
		return d.ids, d.nums, d.pos
	}
	// A pinned request: leave out what later commits added to the document.
	var ids []string
	var nums [][]uint32
	pos := -1
	for i, other := range d.ids {
		if d.gens(i) <= s.gen {
			if other == id {
				pos = len(ids)
			}
			ids, nums = append(ids, other), append(nums, d.nums[i])
		}
	}
	return ids, nums, pos
}

// place returns id's document at the scope's generation as the engine
// hands it to its reranker with the candidate: for a request of the latest
// generation, the window around id the rerankers read
// (rerank.WindowBefore, rerank.WindowAfter) and the document's first
// chunk, so that a checkpoint's rows for the rest are never read; for a
// pinned one, which leaves out what later commits added, the whole
// document (document). False when the scope does not hold id.
func (s scope) place(id string) (rerank.DocumentPlace, bool) {
	if !s.latest {
		ids, nums, pos := s.document(id)
		return rerank.DocumentPlace{IDs: ids, Nums: nums, Pos: pos}, ids != nil
	}
	d, gen, ok := s.st.docOf(id)
	if !ok || gen > s.gen {
		return rerank.DocumentPlace{}, false
	}
	lo, hi := max(0, d.pos-rerank.WindowBefore), min(len(d.ids), d.pos+rerank.WindowAfter+1)
	if !d.fill(0, 1) || !d.fill(lo, hi) {
		return rerank.DocumentPlace{}, false // and the query fails: rowTable.err
	}
	return rerank.DocumentPlace{IDs: d.ids[lo:hi], Nums: d.nums[lo:hi], Pos: d.pos, Start: lo, Len: len(d.ids), First: d.ids[0]}, true
}

// digest names the scope's chunks: BLAKE3 over the scope's tenants and
// their set digests at the scope's generation.
func (s scope) digest() string {
	h := blake3.New()
	for i, name := range s.names {
		var l lanes
		if ts := s.tenants[i]; ts != nil {
			l = ts.digestAt(s.gen)
		}
		fmt.Fprintf(h, "%q %x %x %x %x\n", name, l[0], l[1], l[2], l[3])
	}
	return evidence.HashPrefix + fmt.Sprintf("%x", h.Sum(nil))
}

// admits reports whether chunk id was committed by the scope's generation.
func (s scope) admits(id string) bool {
	g, ok := s.st.committedGen(id)
	return ok && g <= s.gen
}

// eligibility returns the lexical leg's restriction for h in this scope:
// a generation clause only when some chunk of the scope is newer than the
// scope's generation.
func (s scope) eligibility(h evidence.Header) retrieve.Eligibility {
	e := retrieve.Eligibility{AsOf: h.AsOf, Tenant: h.Tenant, Filters: h.Filters, Pinned: !s.latest, UpTo: s.gen}
	if e.Pinned {
		e.Readmit = s.readmit(h.AsOf)
		// Chunks of the whole index, not of the scope: the clause runs over
		// every document the lexical index holds.
		before, after := s.st.countUpTo(s.gen), s.st.stats.Docs
		e.FewerAfter = after-before < before
	}
	return e
}

// countUpTo counts the chunks of every tenant committed by generation g.
func (st *state) countUpTo(g int64) int64 {
	var n int64
	for _, ts := range st.tenants {
		n += ts.docs.at(g)
	}
	return n
}

// tenantNames lists the tenants with chunks, sorted: Check walks them.
func (st *state) tenantNames() []string {
	names := slices.Collect(maps.Keys(st.tenants))
	slices.Sort(names)
	return names
}

// Commit describes one committed generation of the index.
type Commit struct {
	Generation  int64
	CommittedAt time.Time // UTC, whole seconds
	// Tenants says what the commit did to each tenant's evidence, sorted
	// by tenant ("" first); empty for a commit of no chunk, fact or purge.
	Tenants []TenantCommit
}

// History returns every committed generation, oldest first, with what it
// did per tenant (history.go): what Request.Generation and Request.KnownAt
// choose from. KnownAt reads this commit clock, not the sources' dates: a
// mirror backfilled today has every generation committed today. Like Diff,
// on an index opened from its checkpoint the first call reads every chunk.
func (e *Engine) History() ([]Commit, error) {
	st, err := e.writable() // the full state: each chunk's tenant and generation
	if err != nil {
		return nil, err
	}
	by := st.commitsByTenant(0, st.gen)
	out := make([]Commit, len(st.commits))
	for i, at := range st.commits {
		out[i] = Commit{Generation: int64(i + 1), CommittedAt: at, Tenants: by[i]}
	}
	return out, nil
}

// Scope says what a request of tenant reads at index generation gen (0:
// the latest): the scope's own generation, which a pack records, and the
// digest of its chunks, which a pack's fingerprint records as "corpus".
func (e *Engine) Scope(tenant string, gen int64) (scopeGen int64, digest string, err error) {
	st, err := e.snapshot()
	if err != nil {
		return 0, "", err
	}
	h := evidence.Header{Tenant: tenant}
	sc, err := st.scopeOf(&h, reads{gen: gen})
	if err != nil {
		return 0, "", err
	}
	return sc.gen, sc.corpus, nil
}
