package state

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/asof"
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

// Series is a count's history: points in ascending generation order.
type Series []point

// at returns the count as of generation g.
func (s Series) at(g int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].Gen > g })
	if i == 0 {
		return 0
	}
	return s[i-1].N
}

// add returns s with d added from generation g on; g is at least the last
// generation in s. The backing array may be shared with the state s came
// from, which never reads past its own length.
func (s Series) add(g, d int64) Series {
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
	Docs, Tokens Series
	Facts        Series   // facts on the tenant's chunks
	Purges       Series   // purges of the tenant's chunks
	ChunkIDs     []string // in commit order; may share its array with earlier states (see series.add)
	RerankTerms  Series   // reranker terms over all chunks (rerank.Documents' TermTotal)
	Digest       []lanePoint
	LexDF        map[string]Series // analyzed (bleve) term -> chunks holding it
	RerankDF     map[string]Series // reranker term -> chunks holding it
	// sharedDF is set on a copy (clone) whose LexDF and RerankDF are still
	// those of the figures it was copied from: read here, written only
	// once ownDF has copied them. Why: a commit of facts alone changes
	// none of them, and copying them cost each one-fact commit at a
	// million chunks 840 KB of allocation (docs/benchmarks.md, "Sections
	// outside the heap").
	sharedDF bool
}

// ownDF makes ts's term counts its own to write: copied from the figures
// ts was cloned from, unless they are already.
func (ts *tenantStats) ownDF() {
	if ts.sharedDF {
		ts.LexDF, ts.RerankDF = maps.Clone(ts.LexDF), maps.Clone(ts.RerankDF)
		ts.sharedDF = false
	}
}

// add counts chunk c, committed at generation gen, with its distinct
// lexical and reranker terms and its token count. ts must be a copy owned by
// the state being built (see state.touch).
func (ts *tenantStats) add(gen int64, c *evidence.Chunk, lexTerms, rrTerms []string, tokens, rrCount int) {
	ts.ownDF()
	ts.Docs = ts.Docs.add(gen, 1)
	ts.ChunkIDs = append(ts.ChunkIDs, c.ID)
	ts.RerankTerms = ts.RerankTerms.add(gen, int64(rrCount))
	ts.Tokens = ts.Tokens.add(gen, int64(tokens))
	ts.addLanes(gen, chunkLanes(c))
	for _, t := range lexTerms {
		ts.LexDF[t] = ts.LexDF[t].add(gen, 1)
	}
	for _, t := range rrTerms {
		ts.RerankDF[t] = ts.RerankDF[t].add(gen, 1)
	}
}

// AddFact counts fact f, committed at generation gen, on one of the
// tenant's chunks: it moves the tenant's generation and digest like a chunk.
func (ts *tenantStats) addFact(gen int64, f *evidence.Fact) {
	ts.Facts = ts.Facts.add(gen, 1)
	ts.addLanes(gen, keyLanes("fact\x00"+f.Key()))
}

// addLanes adds l to the tenant's digest from generation gen on.
func (ts *tenantStats) addLanes(gen int64, l lanes) {
	if n := len(ts.Digest); n > 0 && ts.Digest[n-1].gen == gen {
		ts.Digest[n-1].l = ts.Digest[n-1].l.plus(l)
		return
	}
	var prev lanes
	if n := len(ts.Digest); n > 0 {
		prev = ts.Digest[n-1].l
	}
	ts.Digest = append(ts.Digest, lanePoint{gen: gen, l: prev.plus(l)})
}

// digestAt returns the tenant's digest as of generation g.
func (ts *tenantStats) digestAt(g int64) lanes {
	i := sort.Search(len(ts.Digest), func(i int) bool { return ts.Digest[i].gen > g })
	if i == 0 {
		return lanes{}
	}
	return ts.Digest[i-1].l
}

// clone returns a copy of ts that can be written without touching ts: its
// series are appended to (Series.add), and its term counts copied when
// first written (ownDF).
func (ts *tenantStats) clone() *tenantStats {
	cp := *ts
	cp.sharedDF = true
	return &cp
}

func newTenantStats() *tenantStats {
	return &tenantStats{LexDF: map[string]Series{}, RerankDF: map[string]Series{}}
}

// Scope is what one request reads: the tenants it sees, as of the scope's
// generation. It implements rerank.Stats.
type Scope struct {
	State   *State
	tenants []*tenantStats // in scopeTenants order; nil for a tenant with no chunks
	Names   []string
	Gen     int64  // the scope's generation: its last change at or before the index generation asked
	Latest  bool   // no chunk of the scope was committed after gen
	Corpus  string // digest of the scope's chunks at gen (the fingerprint's "corpus")
}

// scopeTenants lists the tenants a request of tenant sees, in a fixed order.
func scopeTenants(tenant string) []string {
	if tenant == "" {
		return []string{""}
	}
	return []string{tenant, ""}
}

// Scope returns the scope of a request of tenant reading index generation
// upTo (which must not exceed st.gen).
func (st *State) Scope(tenant string, upTo int64) Scope {
	sc := Scope{State: st, Names: scopeTenants(tenant), Latest: true}
	for _, name := range sc.Names {
		ts := st.Tenants[name]
		sc.tenants = append(sc.tenants, ts)
		if ts == nil {
			continue
		}
		for _, s := range []Series{ts.Docs, ts.Facts, ts.Purges} {
			i := sort.Search(len(s), func(i int) bool { return s[i].Gen > upTo })
			if i > 0 {
				sc.Gen = max(sc.Gen, s[i-1].Gen)
			}
			if i < len(s) {
				sc.Latest = false
			}
		}
	}
	sc.Corpus = sc.digest()
	return sc
}

// sum adds f over the scope's tenants.
func (s Scope) sum(f func(ts *tenantStats) int64) int64 {
	var n int64
	for _, ts := range s.tenants {
		if ts != nil {
			n += f(ts)
		}
	}
	return n
}

// BM25 returns the lexical statistics of the scope for a question whose
// Analyzed terms are terms.
func (s Scope) BM25(terms []string) retrieve.BM25Stats {
	df := make(map[string]uint64, len(terms))
	for _, t := range terms {
		df[t] = uint64(s.sum(func(ts *tenantStats) int64 { return ts.LexDF[t].at(s.Gen) }))
	}
	return retrieve.BM25Stats{
		Docs:    s.sum(func(ts *tenantStats) int64 { return ts.Docs.at(s.Gen) }),
		Tokens:  s.sum(func(ts *tenantStats) int64 { return ts.Tokens.at(s.Gen) }),
		DocFreq: df,
	}
}

// DocCount implements rerank.Stats: chunks in the scope.
func (s Scope) DocCount() int {
	return int(s.sum(func(ts *tenantStats) int64 { return ts.Docs.at(s.Gen) }))
}

// DocFreq implements rerank.Stats: chunks of the scope holding term.
func (s Scope) DocFreq(term string) int {
	return int(s.sum(func(ts *tenantStats) int64 { return ts.RerankDF[term].at(s.Gen) }))
}

// ChunkTerms implements rerank.Documents.
func (s Scope) ChunkTerms(id string) []string {
	d, gen, ok := s.State.docOf(id)
	if !ok || gen > s.Gen || !d.Fill(d.Pos, d.Pos+1) { // as !s.admits(id)
		return nil
	}
	return s.State.TermsOf(d.Nums[d.Pos])
}

// TermTotal implements rerank.Documents: reranker terms over the scope's
// chunks at its generation.
func (s Scope) TermTotal() int64 {
	return s.sum(func(ts *tenantStats) int64 { return ts.RerankTerms.at(s.Gen) })
}

// Document implements rerank.Documents: id's document version in document
// order as the scope's generation had it. The terms are made from their
// numbers at every call: the engine's own rerankers read the numbers
// (DocumentNumbers).
func (s Scope) Document(id string) ([]string, [][]string, int) {
	ids, nums, pos := s.document(id)
	if ids == nil {
		return nil, nil, -1
	}
	terms := make([][]string, len(nums))
	for i, ns := range nums {
		terms[i] = s.State.TermsOf(ns)
	}
	return ids, terms, pos
}

// DocumentNumbers implements rerank.TermNumbers: Document with the terms
// as numbers, and nil for the terms as strings.
func (s Scope) DocumentNumbers(id string) ([]string, [][]string, [][]uint32, int) {
	ids, nums, pos := s.document(id)
	return ids, nil, nums, pos
}

// TermNumber implements rerank.TermNumbers: the number every chunk's copy
// of term carries, false when no chunk of the index has it.
func (s Scope) TermNumber(term string) (uint32, bool) {
	n, ok := s.State.Intern[term]
	return n, ok
}

// document returns id's document version at the scope's generation: the
// chunk IDs in document order, their reranker terms as numbers, and id's
// position; nil, nil and -1 when the scope does not hold id.
func (s Scope) document(id string) ([]string, [][]uint32, int) {
	d, gen, ok := s.State.docOf(id)
	if !ok || gen > s.Gen || !d.Fill(0, len(d.IDs)) { // as !s.admits(id), without a second lookup
		return nil, nil, -1
	}
	if s.Latest {
		return d.IDs, d.Nums, d.Pos
	}
	// A pinned request: leave out what later commits added to the document.
	var ids []string
	var nums [][]uint32
	pos := -1
	for i, other := range d.IDs {
		if d.Gens(i) <= s.Gen {
			if other == id {
				pos = len(ids)
			}
			ids, nums = append(ids, other), append(nums, d.Nums[i])
		}
	}
	return ids, nums, pos
}

// Place returns id's document at the scope's generation as the engine
// hands it to its reranker with the candidate: for a request of the latest
// generation, the window around id the rerankers read
// (rerank.WindowBefore, rerank.WindowAfter) and the document's first
// chunk, so that a checkpoint's rows for the rest are never read; for a
// pinned one, which leaves out what later commits added, the whole
// document (document). False when the scope does not hold id.
func (s Scope) Place(id string) (rerank.DocumentPlace, bool) {
	if !s.Latest {
		ids, nums, pos := s.document(id)
		return rerank.DocumentPlace{IDs: ids, Nums: nums, Pos: pos}, ids != nil
	}
	d, gen, ok := s.State.docOf(id)
	if !ok || gen > s.Gen {
		return rerank.DocumentPlace{}, false
	}
	lo, hi := max(0, d.Pos-rerank.WindowBefore), min(len(d.IDs), d.Pos+rerank.WindowAfter+1)
	if !d.Fill(0, 1) || !d.Fill(lo, hi) {
		return rerank.DocumentPlace{}, false // and the query fails: rowTable.err
	}
	return rerank.DocumentPlace{IDs: d.IDs[lo:hi], Nums: d.Nums[lo:hi], Pos: d.Pos, Start: lo, Len: len(d.IDs), First: d.IDs[0]}, true
}

// digest names the scope's chunks: BLAKE3 over the scope's tenants and
// their set digests at the scope's generation.
func (s Scope) digest() string {
	// One Sum256 over the lines, not a Hasher: blake3.New allocates about
	// 10 KiB, and every request computes its scope's digest.
	var b []byte
	for i, name := range s.Names {
		var l lanes
		if ts := s.tenants[i]; ts != nil {
			l = ts.digestAt(s.Gen)
		}
		b = fmt.Appendf(b, "%q %x %x %x %x\n", name, l[0], l[1], l[2], l[3])
	}
	sum := blake3.Sum256(b)
	return evidence.HashPrefix + hex.EncodeToString(sum[:])
}

// Admits reports whether chunk id was committed by the scope's generation.
func (s Scope) Admits(id string) bool {
	g, ok := s.State.committedGen(id)
	return ok && g <= s.Gen
}

// Eligibility returns the lexical leg's restriction for h in this scope:
// a generation clause only when some chunk of the scope is newer than the
// scope's generation.
func (s Scope) Eligibility(h evidence.Header) retrieve.Eligibility {
	e := retrieve.Eligibility{AsOf: h.AsOf, Tenant: h.Tenant, Filters: h.Filters, Pinned: !s.Latest, UpTo: s.Gen}
	if e.Pinned {
		e.Readmit = s.readmit(h.AsOf)
		// Chunks of the whole index, not of the scope: the clause runs over
		// every document the lexical index holds.
		before, after := s.State.countUpTo(s.Gen), s.State.Stats.Docs
		e.FewerAfter = after-before < before
	}
	return e
}

// EligibilityAt returns the eligibility with which a lexical index that
// holds st's documents answers e, the eligibility of a request on an
// earlier state st extends (e.UpTo: the request's scope generation): the
// same request pinned to that generation in st, which keeps out what st
// committed later and readmits what its later facts retire. A commit being
// applied reads the lexical index so (see Engine.whileCommitted).
//
// Invariant: in an index holding st's documents, the result admits exactly
// the chunks e admitted in the state of generation e.UpTo.
func (st *State) EligibilityAt(e retrieve.Eligibility) retrieve.Eligibility {
	return st.Scope(e.Tenant, e.UpTo).Eligibility(evidence.Header{AsOf: e.AsOf, Tenant: e.Tenant, Filters: e.Filters})
}

// Admitted returns the IDs of chunks (sorted by ID) that a read with
// eligibility e admits by their tenant, dates and metadata: of a commit's
// chunks still pending in the lexical index, those that e's clauses, under
// the pending state's bounds, would let through. Only these need keeping
// out by ID (see Engine.whileCommitted).
func Admitted(chunks []*evidence.Chunk, e retrieve.Eligibility) []string {
	h := evidence.Header{Tenant: e.Tenant, AsOf: e.AsOf, Filters: e.Filters}
	var ids []string
	for _, c := range chunks {
		if h.Admits(c) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// countUpTo counts the chunks of every tenant committed by generation g.
func (st *State) countUpTo(g int64) int64 {
	var n int64
	for _, ts := range st.Tenants {
		n += ts.Docs.at(g)
	}
	return n
}

// TenantNames lists the tenants with chunks, sorted: Check walks them.
func (st *State) TenantNames() []string {
	names := slices.Collect(maps.Keys(st.Tenants))
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

// Reads is the state of the index a request reads: a generation, an
// instant, or (both zero) the latest.
type Reads struct {
	Gen     int64
	KnownAt time.Time
}

// Resolve returns the index generation r names in st.
func (st *State) Resolve(r Reads) (int64, error) {
	switch {
	case r.Gen > st.Gen:
		return 0, fmt.Errorf("%w: generation %d is not committed (the latest is %d)", ErrBadRequest, r.Gen, st.Gen)
	case r.Gen > 0:
		return r.Gen, nil
	case r.KnownAt.IsZero():
		return st.Gen, nil
	}
	var g int64
	for i, at := range st.Commits {
		if !at.After(r.KnownAt) {
			g = int64(i + 1)
		}
	}
	if g == 0 { // generation 0 holds nothing: an empty pack would pass for an answer
		first := "no commit yet"
		if len(st.Commits) > 0 {
			first = "the first was committed at " + st.Commits[0].Format(time.RFC3339)
		}
		return 0, fmt.Errorf("%w (%w): known-at %s is before the index's first commit (%s)",
			ErrBeforeFirstCommit, ErrBadRequest, r.KnownAt.UTC().Format(time.RFC3339), first)
	}
	return g, nil
}

// ScopeOf resolves what h reads in st: the index generation at names, then
// the scope's generation there, which becomes h's Generation.
func (st *State) ScopeOf(h *evidence.Header, at Reads) (Scope, error) {
	upTo, err := st.Resolve(at)
	if err != nil {
		return Scope{}, err
	}
	sc := st.Scope(h.Tenant, upTo)
	h.Generation = sc.Gen
	return sc, nil
}

// CommitsByTenant returns, for each generation in (from, to] of st, what
// it did per tenant: out[g-from-1] lists the tenants it touched, sorted by
// name. Chunks, facts and purges are read from the full state (st.rows
// nil).
func (st *State) CommitsByTenant(from, to int64) [][]TenantCommit {
	if to <= from {
		return nil
	}
	type key struct {
		gen    int64
		tenant string
	}
	acc := map[key]*TenantCommit{} // assembled, then read in sorted order below
	at := func(gen int64, id string) *TenantCommit {
		tenant := ""
		if c, ok := st.Chunks[id]; ok {
			tenant = c.Tenant
		}
		k := key{gen, tenant}
		tc := acc[k]
		if tc == nil {
			tc = &TenantCommit{Tenant: tenant}
			acc[k] = tc
		}
		return tc
	}
	for id, g := range st.Committed {
		if g > from && g <= to {
			tc := at(g, id)
			tc.Added = append(tc.Added, id)
		}
	}
	for _, fa := range st.FactLog {
		if fa.Gen <= from || fa.Gen > to {
			continue
		}
		tc := at(fa.Gen, fa.Fact.ChunkID)
		switch fa.Fact.Kind {
		case evidence.FactSuperseded:
			tc.Superseded = append(tc.Superseded, fa.Fact.ChunkID)
		case evidence.FactRetracted:
			tc.Retracted = append(tc.Retracted, fa.Fact.ChunkID)
		default:
			tc.Ended = append(tc.Ended, fa.Fact.ChunkID)
		}
	}
	for _, id := range st.PurgeLog {
		if pa := st.Purged[id]; pa.Gen > from && pa.Gen <= to {
			tc := at(pa.Gen, id)
			tc.Purged = append(tc.Purged, id)
		}
	}
	keys := make([]key, 0, len(acc))
	for k := range acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.gen, b.gen); c != 0 {
			return c
		}
		return strings.Compare(a.tenant, b.tenant)
	})
	out := make([][]TenantCommit, to-from)
	for _, k := range keys {
		tc := acc[k]
		for _, ids := range [][]string{tc.Added, tc.Superseded, tc.Ended, tc.Retracted, tc.Purged} {
			slices.Sort(ids)
		}
		tc.Superseded, tc.Ended, tc.Retracted = slices.Compact(tc.Superseded), slices.Compact(tc.Ended), slices.Compact(tc.Retracted)
		out[k.gen-from-1] = append(out[k.gen-from-1], *tc)
	}
	return out
}

// TenantCommit is what one commit did to one tenant's evidence. Every list
// holds chunk IDs, sorted.
type TenantCommit struct {
	Tenant string // "" is the shared tenant
	// Added holds the chunks the commit added.
	Added []string
	// Superseded, Ended and Retracted hold the chunks that a fact the
	// commit added says were superseded, ended or retracted.
	Superseded, Ended, Retracted []string
	// Purged holds the chunks whose text the commit deleted (Engine.Purge).
	Purged []string
}

// Count returns how many chunks the commit added or changed in the tenant.
func (t TenantCommit) Count() int {
	return len(t.Added) + len(t.Superseded) + len(t.Ended) + len(t.Retracted) + len(t.Purged)
}

// Summary renders the tenant's part of a commit in words: a count per kind
// of change, in a fixed order, with the chunk IDs of a kind when there are
// at most names of them ("3 added (a, b, c), 1 superseded (d)").
func (t TenantCommit) Summary(names int) string {
	var parts []string
	for _, k := range []struct {
		what string
		ids  []string
	}{{"added", t.Added}, {"superseded", t.Superseded}, {"ended", t.Ended}, {"retracted", t.Retracted}, {"purged", t.Purged}} {
		if len(k.ids) == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s", len(k.ids), k.what)
		if len(k.ids) <= names {
			s += " (" + strings.Join(k.ids, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// ChunkIDs returns the IDs of the chunks of scope sc at its generation,
// sorted.
func (sc Scope) ChunkIDs() []string {
	var ids []string
	for _, name := range sc.Names {
		if ts := sc.State.Tenants[name]; ts != nil {
			ids = append(ids, ts.ChunkIDs...)
		}
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return !sc.Admits(id) })
	slices.Sort(ids)
	return ids
}

// HoldsIndex reports whether no tenant outside scope sc has a chunk in its
// state: the view of every vector then holds no other tenant's.
func (sc Scope) HoldsIndex() bool {
	for name, ts := range sc.State.Tenants { // a yes or no over all: the order cannot matter
		if len(ts.ChunkIDs) > 0 && !slices.Contains(sc.Names, name) {
			return false
		}
	}
	return true
}

// Admitter returns the in-memory eligibility predicate of a request of the
// scope as of day asOf with lexical restriction elig: the chunk's own fields
// (elig.Admits, evidence.Header's predicate), committed by the scope's
// generation when the request is pinned, and retired by no fact that
// generation knew. The dense leg scans with it; the lexical leg compiles the
// same predicate into its query.
func (sc Scope) Admitter(elig retrieve.Eligibility, asOf asof.Date) func(c *evidence.Chunk) bool {
	st := sc.State
	admit := elig.Admits
	if !sc.Latest { // a pinned request: only what its generation had committed
		admit = func(c *evidence.Chunk) bool { return elig.Admits(c) && sc.Admits(c.ID) }
	}
	if st.Bounds.MinRetired <= asOf.Days() { // some fact may retire a chunk as of the day
		base := admit
		admit = func(c *evidence.Chunk) bool { return base(c) && st.RetiredAt(c.ID, sc.Gen) > asOf.Days() }
	}
	if len(st.Purged) > 0 { // a purged chunk is never eligible, at any generation
		base := admit
		admit = func(c *evidence.Chunk) bool { _, gone := st.Purged[c.ID]; return !gone && base(c) }
	}
	return admit
}

// PurgedIn lists the purged chunks the scope held at its generation, in
// purge order.
func (sc Scope) PurgedIn() []string {
	var out []string
	for _, id := range sc.State.PurgeLog {
		if tenant, _ := sc.State.TenantOf(id); sc.Admits(id) && slices.Contains(sc.Names, tenant) {
			out = append(out, id)
		}
	}
	return out
}
