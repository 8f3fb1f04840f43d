package state

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// GraphBuild names the settings that shape a graph's links. The build is
// named only when it is not the sequential one, which every manifest written
// before builds had names holds.
func GraphBuild(o retrieve.GraphOptions) string {
	s := fmt.Sprintf("m=%d ef_construction=%d seed=%d", o.M, o.EfConstruction, o.Seed)
	if o.Build != "" && o.Build != retrieve.BuildSequential {
		s += " build=" + o.Build
	}
	return s
}

// CorpusFree reports whether emb's vectors are independent of the corpus.
func CorpusFree(emb retrieve.Embedder) bool {
	f, ok := emb.(retrieve.CorpusFree)
	return ok && f.CorpusFree()
}

// State is everything a query reads besides the bleve index.
//
// Invariant: a state is never changed once an Engine holds it. A commit
// builds the next state from a copy (extend) and swaps it in, so a query
// that took a state reads it without any lock, through model calls of any
// length.
type State struct {
	Gen     int64
	Commits []time.Time // commit time of generation i+1
	Chunks  map[string]*evidence.Chunk
	// committed maps a chunk ID to the generation that committed it.
	Committed map[string]int64
	// facts holds each chunk's facts, oldest first; factLog every fact in
	// commit order (facts.go).
	Facts   map[string][]factAt
	FactLog []factAt
	// purged holds the chunks whose text a purge deleted; purgeLog their
	// IDs in purge order (purge.go).
	Purged   map[string]PurgeAt
	PurgeLog []string
	// Tenants holds each tenant's corpus figures over generations (scope.go).
	Tenants map[string]*tenantStats
	Stats   retrieve.BM25Stats // the whole index's totals (the manifest's)
	Bounds  retrieve.Bounds
	// Reranker terms are held as numbers (docList.nums): intern numbers
	// each distinct term, and names holds the terms by number. A chunk's
	// terms as strings are made only when a reranker is handed them
	// (termsOf): held as strings, they were a quarter of the heap.
	//
	// Numbers are given in order of first arrival and never reused, so
	// that rerank.TermNumbers can match terms by number. Only equality of
	// numbers is ever used, never their order, so neither ingest order nor
	// the order in which Open reads the terms can reach a ranking.
	Intern map[string]uint32
	Names  []string // may share its array with earlier states (see series.add)
	// entities maps a tenant and entity filter (entityKey) to the names its
	// chunks declare.
	Entities map[string][]entityName
	// The dense leg, when the index has an embedder: features per chunk and
	// corpus counts; and, for a corpus-free embedder, the vectors over every
	// chunk (a corpus-dependent one's are built per scope: denseview.go).
	Feats     map[string][]int32
	Counts    *retrieve.Counts
	Dense     *retrieve.Dense
	Graph     *retrieve.Graph   // over dense, when the index keeps one
	DenseRows []*evidence.Chunk // dense row -> chunk, for the eligibility check
	// Document context for rerankers (rerank.Documents): the chunk IDs of
	// each document version in document order, and each chunk's document
	// version and place key. Document order is a function of the chunks
	// alone (never of ingest order or batching): the chunk's MetaPosition
	// when it has one (chunks without one come after those with one), then
	// the natural order of chunk IDs ("art-2" before "art-10"), then the
	// IDs' bytes.
	DocOrder map[string]*DocList
	DocPlace map[string]docPlace
	// Rows, when set, holds the chunks of the checkpoint the state was
	// read from, and of its delta level (RowTable.Over), the newer of the
	// two of generation Base; Chunks, Committed, DocOrder and DocPlace
	// hold only what was committed after Base, with the stored documents
	// those commits joined (see lazy.go).
	Rows *RowTable
	Base int64
	// adopt is the catalog Open settles the lexical partitions by, when
	// the state was read from a checkpoint (OpenCatalog).
	adopt []byte
	// Catalog, when set, is the lexical catalog of the state's documents
	// (retrieve.Lexical.Catalog): the checkpoint's it was read from, or the
	// one its commit wrote. The next commit adds its chunks to it
	// (retrieve.Lexical.CatalogAdd) instead of going over every chunk.
	Catalog []byte
}

// MetaPosition is the metadata key a connector sets to a chunk's 0-based
// place in its document (a decimal integer), when the chunk ID does not
// already sort in document order.
const MetaPosition = "position"

// DocList is one document version's chunks in document order: IDs and
// their reranker terms as numbers (state.intern), side by side.
type DocList struct {
	IDs  []string
	Nums [][]uint32
}

// packNums lays the term numbers of d's chunks out in one array in
// document order, so that a chunk's neighbours and heading path lie next to
// it in memory (the learned reranker reads them for every candidate). d
// must be owned by the state being built; a purged chunk's nil stays nil.
func (d *DocList) packNums() {
	n := 0
	for _, ns := range d.Nums {
		n += len(ns)
	}
	arena := make([]uint32, 0, n)
	for i, ns := range d.Nums {
		if ns == nil {
			continue
		}
		start := len(arena)
		arena = append(arena, ns...)
		d.Nums[i] = arena[start:len(arena):len(arena)]
	}
}

// TermsOf returns the reranker terms numbered nums (nil for nil: a purged
// chunk's).
func (s *State) TermsOf(nums []uint32) []string {
	if nums == nil {
		return nil
	}
	ts := make([]string, len(nums))
	for i, n := range nums {
		ts[i] = s.Names[n]
	}
	return ts
}

// DocPlace is a chunk's document version and its order key there.
type docPlace struct {
	Line storage.Span // the chunk's line in its batch file (a checkpoint's rows hold it)
	Key  string       // Tenant + "\x00" + DocID + "\x00" + Version
	seq  int64        // MetaPosition, or MaxInt64 (after the positioned) when absent or not a number
	Pos  int          // index in docOrder[key], kept current as chunks arrive
	Gen  int64        // the generation that committed the chunk (as committed)
	List *DocList     // docOrder[key] of this state, kept current when the list is copied
}

// cmpDocOrder orders two chunks of one document version.
func (s *State) cmpDocOrder(a, b string) int {
	pa, pb := s.DocPlace[a], s.DocPlace[b]
	if pa.seq != pb.seq {
		if pa.seq < pb.seq {
			return -1
		}
		return 1
	}
	if c := naturalCompare(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// naturalCompare compares strings with runs of digits compared as numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return cmpInt(len(na), len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmpInt(int(a[0]), int(b[0]))
		}
		a, b = a[1:], b[1:]
	}
	return cmpInt(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NewState returns the state of an empty index.
func NewState() *State { return newStateFor(0) }

// newStateFor is newState with room for n chunks in the maps kept per
// chunk: a state built from the batch files knows how many it will hold
// (the manifest's count), and growing those maps step by step moved every
// entry again at each step.
func newStateFor(n int) *State {
	return &State{Chunks: make(map[string]*evidence.Chunk, n), Committed: make(map[string]int64, n), Facts: map[string][]factAt{}, Purged: map[string]PurgeAt{}, Tenants: map[string]*tenantStats{},
		Intern: map[string]uint32{}, Entities: map[string][]entityName{}, Feats: map[string][]int32{},
		Counts: retrieve.NewCounts(), Bounds: retrieve.NewBounds(),
		DocOrder: map[string]*DocList{}, DocPlace: make(map[string]docPlace, n)}
}

// Analyzed is what a commit computes of a chunk before it is added: its
// distinct lexical terms and token count (the lexical index's analyzer) and
// its dense features (nil without a dense leg). Read from an analysis file
// at Open, the terms are indices into the file's table instead (tab set,
// lex and rr nil).
type Analyzed struct {
	Lex    []string
	Freqs  []int // how often each lex term occurs (set at ingest; not stored)
	Tokens int
	Rerank []string // reranker terms in text order (rerank.Terms)
	Feats  []int32
	tab    *termTable
	lexIdx []uint32 // lex, as indices into tab
	rrIdx  []uint32 // rr, as indices into tab
	// line is where the chunk lies in its batch file, when read from one
	// (a commit sets it once the batch is encoded: setLines).
	line storage.Span
	// redacted, for a purged chunk read back, holds the counts its text
	// gave (tokens is then Tokens); nil otherwise.
	Redacted *storage.Redaction
}

// Extend returns a new state: s plus the chunks add (analyzed as an) and
// then the facts as generation gen, committed at at. s is not changed.
//
// A state read from a checkpoint stays one: the new state shares its rows
// and copies only its maps (what was committed since the checkpoint), so
// that a commit after Open costs its batch, not an unfold of every chunk.
// A chunk that joins a document the rows hold first brings that document
// into the maps (copyOut); an error is a stored chunk that cannot be read
// back as the checkpoint has it, and nothing is committed.
func (s *State) Extend(gen int64, at time.Time, add []*evidence.Chunk, an []Analyzed, facts []*evidence.Fact) (*State, error) {
	// Facts alone change no chunk, term or document: then n shares s's
	// maps of them (neither changes them), and the commit costs its facts,
	// not a copy of every chunk's entries.
	n := &State{
		Gen: gen, Commits: append(s.Commits, at), Chunks: s.Chunks, Committed: s.Committed,
		Facts: s.Facts, FactLog: s.FactLog, Purged: s.Purged, PurgeLog: s.PurgeLog,
		Tenants: maps.Clone(s.Tenants), Stats: s.Stats, Bounds: s.Bounds.Clone(),
		Intern: s.Intern, Names: s.Names, Entities: s.Entities, Feats: s.Feats, Counts: s.Counts,
		Dense: s.Dense, Graph: s.Graph, DenseRows: s.DenseRows,
		DocOrder: s.DocOrder, DocPlace: s.DocPlace, Rows: s.Rows, Base: s.Base,
	}
	if len(add) > 0 {
		n.Chunks, n.Committed, n.DocPlace = cloneFor(s.Chunks, len(add)), cloneFor(s.Committed, len(add)), cloneFor(s.DocPlace, len(add))
		n.Intern, n.Entities, n.Feats, n.DocOrder = maps.Clone(s.Intern), maps.Clone(s.Entities), maps.Clone(s.Feats), maps.Clone(s.DocOrder)
		n.Counts = &retrieve.Counts{N: maps.Clone(s.Counts.N), Total: s.Counts.Total}
	}
	b := NewBuilding()
	own := b.Own // tenants and documents whose figures n already copied
	if n.Rows != nil {
		for _, c := range add { // the stored documents these chunks join, before any is added
			key := docKey(c)
			if _, looked := own["doc\x00"+key]; looked {
				continue // another chunk of this batch's document: looked for once
			}
			if _, ok := n.DocOrder[key]; ok {
				continue
			}
			if err := n.copyOut(key); err != nil {
				return nil, err
			}
			own["doc\x00"+key] = n.DocOrder[key] != nil // copied: n's own list
		}
	}
	for i, c := range add {
		n.Add(gen, c, an[i], b)
	}
	packed := map[string]bool{}
	for _, c := range add { // the documents this commit changed, each once
		if key := n.DocPlace[c.ID].Key; !packed[key] {
			packed[key] = true
			n.DocOrder[key].packNums()
		}
	}
	if len(facts) > 0 {
		n.Facts = maps.Clone(s.Facts)
	}
	for _, f := range facts {
		n.AddFact(gen, f, own)
	}
	return n, nil
}

// cloneFor returns a copy of m with room for extra more entries: a batch
// larger than the state would otherwise grow the copy step by step, each
// step moving every entry again. (Only the copy's capacity depends on
// extra, never its contents.)
func cloneFor[K comparable, V any](m map[K]V, extra int) map[K]V {
	if extra <= len(m) {
		return maps.Clone(m)
	}
	n := make(map[K]V, len(m)+extra)
	maps.Copy(n, m)
	return n
}

// AddFact records fact f, committed at generation gen, of a chunk s holds.
// s.facts must be a copy owned by s (see extend); a chunk's list is copied
// before it grows.
func (s *State) AddFact(gen int64, f *evidence.Fact, own map[string]bool) {
	fa := factAt{Gen: gen, Fact: f}
	s.Facts[f.ChunkID] = append(slices.Clip(s.Facts[f.ChunkID]), fa)
	s.FactLog = append(s.FactLog, fa)
	s.Bounds.Retire(f.Retires())
	tenant, _ := s.TenantOf(f.ChunkID) // in memory, or a checkpoint's row (laterFacts)
	s.OwnTenant(tenant, own).addFact(gen, f)
}

// OwnTenant returns the figures of tenant for s to change: new, or copied
// from the state s extends unless own says s already copied them.
func (s *State) OwnTenant(name string, own map[string]bool) *tenantStats {
	ts := s.Tenants[name]
	switch {
	case ts == nil:
		ts = newTenantStats()
		s.Tenants[name] = ts
	case !own[name]:
		ts = ts.clone()
		s.Tenants[name] = ts
	}
	own[name] = true
	return ts
}

// building is what one build of a state (extend, loadState, Check's
// recount) carries from chunk to chunk: the tenants and documents whose
// figures the state already owns (copied from the state it extends, or
// new), and a scratch for finding a chunk's distinct reranker terms by
// number instead of through a map per chunk.
type building struct {
	Own      map[string]bool
	seen     []uint64 // per interned term number, the mark of the last chunk that held it
	mark     uint64   // this chunk's mark, one more per chunk
	distinct []string // this chunk's distinct reranker terms, in first-seen order
	lex      []string // this chunk's lexical terms, when read as indices
}

// termTable is the term table of one analysis file as Open reads it, and
// the state's number of each term, given the first time a chunk's reranker
// terms name it (noNumber until then).
type termTable struct {
	terms []string
	num   []uint32
}

const noNumber = math.MaxUint32

func newTermTable(terms []string) *termTable {
	t := &termTable{terms: terms, num: make([]uint32, len(terms))}
	for i := range t.num {
		t.num[i] = noNumber
	}
	return t
}

// NewBuilding returns what a state being built from chunks one by one
// keeps beside it (the copies it owns).
func NewBuilding() *building { return &building{Own: map[string]bool{}} }

// Add counts chunk c, committed at generation gen, into the state b builds.
func (s *State) Add(gen int64, c *evidence.Chunk, an Analyzed, b *building) {
	if an.Feats != nil {
		s.Feats[c.ID] = an.Feats
		s.Counts.Add(an.Feats)
	}
	s.Chunks[c.ID] = c
	s.Committed[c.ID] = gen
	s.Stats.Docs++
	s.Stats.Tokens += int64(an.Tokens)
	s.Bounds.Add(c)
	s.addEntityNames(c, gen)
	lex := an.Lex
	var nums []uint32
	if an.tab != nil {
		lex = b.lex[:0]
		for _, i := range an.lexIdx {
			lex = append(lex, an.tab.terms[i])
		}
		b.lex = lex
		nums = make([]uint32, len(an.rrIdx))
		for i, k := range an.rrIdx {
			if nums[i] = an.tab.num[k]; nums[i] == noNumber {
				nums[i] = s.number(an.tab.terms[k])
				an.tab.num[k] = nums[i]
			}
		}
	} else {
		nums = make([]uint32, len(an.Rerank))
		for i, t := range an.Rerank {
			nums[i] = s.number(t)
		}
	}
	rrCount := len(nums)
	if an.Redacted != nil {
		rrCount = an.Redacted.Terms
	}
	s.OwnTenant(c.Tenant, b.Own).add(gen, c, lex, b.distinctTerms(nums, s.Names), an.Tokens, rrCount)
	s.placeInDocument(gen, c, nums, an.line, b.Own)
}

// number returns reranker term t's number, giving it the next one when t
// is new. s.intern must be owned by the state being built.
func (s *State) number(t string) uint32 {
	n, ok := s.Intern[t]
	if !ok {
		n = uint32(len(s.Names))
		s.Intern[t] = n
		s.Names = append(s.Names, t)
	}
	return n
}

// distinctTerms returns terms.Distinct of the reranker terms numbered nums,
// names naming every number. The slice is b's scratch, good until the next
// call.
func (b *building) distinctTerms(nums []uint32, names []string) []string {
	if len(b.seen) < len(names) {
		b.seen = append(b.seen, make([]uint64, len(names)-len(b.seen))...)
	}
	b.mark++
	out := b.distinct[:0]
	for _, id := range nums {
		if b.seen[id] != b.mark {
			b.seen[id] = b.mark
			out = append(out, names[id])
		}
	}
	b.distinct = out
	return out
}

// placeInDocument inserts c, committed at generation gen, with its reranker
// terms as numbers nums, into its document version's order. own names
// the documents whose lists s already owns (a list shared with the state s
// extends is copied before it changes, and its chunks' places then point to
// the copy).
func (s *State) placeInDocument(gen int64, c *evidence.Chunk, nums []uint32, line storage.Span, own map[string]bool) {
	place := placeOf(c, gen, line)
	s.DocPlace[c.ID] = place
	d := s.DocOrder[place.Key]
	copied := false
	switch {
	case d == nil:
		d = &DocList{}
		s.DocOrder[place.Key] = d
	case !own["doc\x00"+place.Key]:
		d = &DocList{IDs: slices.Clone(d.IDs), Nums: slices.Clone(d.Nums)}
		s.DocOrder[place.Key] = d
		copied = true
	}
	own["doc\x00"+place.Key] = true
	at, _ := slices.BinarySearchFunc(d.IDs, c.ID, s.cmpDocOrder)
	d.IDs = slices.Insert(d.IDs, at, c.ID)
	d.Nums = slices.Insert(d.Nums, at, nums)
	from := at // chunks after it move one place on
	if copied {
		from = 0 // and every chunk of a copied list points to the copy
	}
	for i := from; i < len(d.IDs); i++ {
		p := s.DocPlace[d.IDs[i]]
		p.Pos, p.List = i, d
		s.DocPlace[d.IDs[i]] = p
	}
}

// Analyze computes what state.add needs of a chunk's text. The reranker's
// terms (rerank.Terms) come from sp when it is not nil: the same terms, with
// the words a batch repeats stemmed once. (Check passes nil, to recount with
// the plain splitter.)
func Analyze(lex *retrieve.Lexical, emb retrieve.Embedder, sp *terms.Splitter, text string) Analyzed {
	var an Analyzed
	a := lex.Analyze(text)
	an.Lex, an.Freqs, an.Tokens = a.Terms, a.Freqs, a.Tokens
	if sp != nil {
		an.Rerank = sp.Split(text)
	} else {
		an.Rerank = rerank.Terms(text)
	}
	if emb != nil {
		an.Feats = analyzeChunk(emb, text)
	}
	return an
}

// analyzeChunk returns emb's features of a chunk's text, never nil: a chunk
// with no features (no known words) still has a row in the dense index,
// with no vector.
func analyzeChunk(emb retrieve.Embedder, text string) []int32 {
	if f := emb.Analyze(text); f != nil {
		return f
	}
	return []int32{}
}

// BuildDense returns the dense index of a corpus-free embedder over every
// chunk of s plus add (with features addFeats), without changing s: the
// vectors s already has are kept, the new chunks' embedded. (A
// corpus-dependent embedder's vectors are built per scope: denseview.go.)
// An error leaves s as it was.
func (s *State) BuildDense(ctx context.Context, emb retrieve.Embedder, add []*evidence.Chunk, addFeats [][]int32) (*retrieve.Dense, error) {
	counts := &retrieve.Counts{N: maps.Clone(s.Counts.N), Total: s.Counts.Total}
	feats := make(map[string][]int32, len(s.Feats)+len(add))
	maps.Copy(feats, s.Feats)
	for i, c := range add {
		feats[c.ID] = addFeats[i]
		counts.Add(addFeats[i])
	}
	ids := evidence.SortedKeys(feats)
	vecs := make([][]int8, len(ids))
	var todo []int // rows to embed
	free, _ := emb.(retrieve.CorpusFree)
	for i, id := range ids {
		if free != nil && free.CorpusFree() && s.Dense != nil {
			if v, ok := s.Dense.Vector(id); ok {
				vecs[i] = v // unchanged by new counts: keep
				continue
			}
		}
		todo = append(todo, i)
	}
	list := make([][]int32, len(todo))
	for k, i := range todo {
		list[k] = feats[ids[i]]
	}
	got, err := emb.Embed(ctx, list, counts, false)
	if err != nil {
		return nil, fmt.Errorf("evpack: embed: %w", err)
	}
	if err := retrieve.CheckVectors(got, len(list), emb.Dims(), func(k int) string { return "chunk " + ids[todo[k]] }); err != nil {
		return nil, fmt.Errorf("evpack: embed %s: %w", emb.Identity(), err)
	}
	for k, i := range todo {
		vecs[i] = got[k]
	}
	return retrieve.NewDense(ids, vecs), nil
}

// SetDense installs d, its graph g (nil for none) and the chunks of its
// rows. The chunks must already be in s (buildDense embeds exactly s's chunks
// plus those being committed).
func (s *State) SetDense(d *retrieve.Dense, g *retrieve.Graph) {
	s.Dense, s.Graph = d, g
	s.DenseRows = make([]*evidence.Chunk, d.Len())
	for i := range s.DenseRows {
		s.DenseRows[i] = s.Chunks[d.ID(i)]
	}
}

// LoadState rebuilds the in-memory state from the batch files the manifest
// names, each checked against the manifest before a byte is used.
func LoadState(d *storage.Dir, lex *retrieve.Lexical, emb retrieve.Embedder, graph *retrieve.GraphOptions) (*State, error) {
	return loadState(d, lex, emb, graph, d.Manifest().Generation)
}

// LoadStateAt is LoadState as of generation gen, the generation of the
// checkpoint the manifest names, for an index without a dense leg: what
// Check compares that checkpoint with. (Its totals are compared with the
// manifest's only at the manifest's generation; Check builds that state
// too.)
func LoadStateAt(d *storage.Dir, lex *retrieve.Lexical, gen int64) (*State, error) {
	if m := d.Manifest(); gen < 0 || gen > m.Generation {
		return nil, fmt.Errorf("evpack: state of generation %d of %d", gen, m.Generation)
	}
	return loadState(d, lex, nil, nil, gen)
}

func loadState(d *storage.Dir, lex *retrieve.Lexical, emb retrieve.Embedder, graph *retrieve.GraphOptions, upTo int64) (*State, error) {
	m := d.Manifest()
	batches := m.Batches[:upTo]
	st := newStateFor(int(min(max(m.Docs, 0), 1<<22))) // checked at the end; a forged count reserves room for 4M at most
	bld := NewBuilding()
	own := bld.Own
	redacted := map[string]storage.Redaction{} // by the purges not yet read
	// Batch k+1 is read and analyzed while batch k is added: reading uses
	// every core, adding one, and at a million chunks they took 22 and 17 s
	// of CPU one after the other (before chunk lines were read directly). One batch ahead at most, and one reader
	// at a time (an embedder need not be safe for concurrent use).
	type readBatch struct {
		c       storage.Contents
		ans     []Analyzed
		readErr error
		anErr   error
	}
	ahead := func(b storage.Batch) <-chan readBatch {
		out := make(chan readBatch, 1)
		go func() {
			var r readBatch
			if r.c, r.readErr = d.ReadBatch(b); r.readErr == nil {
				r.ans, r.anErr = analyzeBatch(d, b, r.c.Chunks, lex, emb)
			}
			out <- r
		}()
		return out
	}
	var next <-chan readBatch
	defer func() {
		if next != nil { // returning early: no reader outlives the call
			<-next
		}
	}()
	if len(batches) > 0 {
		next = ahead(batches[0])
	}
	for k, b := range batches {
		got := <-next
		next = nil
		if got.readErr == nil && got.anErr == nil && k+1 < len(batches) {
			next = ahead(batches[k+1])
		}
		c := got.c
		if got.readErr != nil {
			return nil, got.readErr
		}
		at, err := time.Parse(time.RFC3339, b.CommittedAt)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: batch %s: committed_at: %v", storage.ErrCorrupt, storage.ManifestName, b.File, err)
		}
		st.Gen, st.Commits = b.Generation, append(st.Commits, at)
		ans := got.ans
		if got.anErr != nil {
			return nil, got.anErr
		}
		for i, ch := range c.Chunks {
			if _, dup := st.Chunks[ch.ID]; dup {
				return nil, fmt.Errorf("%w: %s: chunk %q stored twice", storage.ErrCorrupt, b.File, ch.ID)
			}
			an := ans[i]
			an.line = c.Lines[i]
			if r, ok := c.Redacted[ch.ID]; ok { // purged: the counts its text gave
				an.Tokens, an.Redacted = r.Tokens, &r
				redacted[ch.ID] = r
			}
			st.Add(b.Generation, ch, an, bld)
		}
		for _, f := range c.Facts {
			if _, ok := st.Chunks[f.ChunkID]; !ok {
				return nil, fmt.Errorf("%w: %s: a fact on chunk %q, which is not committed", storage.ErrCorrupt, b.File, f.ChunkID)
			}
			st.AddFact(b.Generation, f, own)
		}
		for _, p := range c.Purges {
			ch, ok := st.Chunks[p.ChunkID]
			r, redactedHere := redacted[p.ChunkID]
			switch {
			case !ok || ch.ContentHash != p.ContentHash:
				return nil, fmt.Errorf("%w: %s: the purge of chunk %q names no committed chunk of that content hash", storage.ErrCorrupt, b.File, p.ChunkID)
			case !redactedHere || r.Generation != b.Generation:
				return nil, fmt.Errorf("%w: %s: chunk %q is purged, but its batch file still holds its text", storage.ErrCorrupt, b.File, p.ChunkID)
			}
			delete(redacted, p.ChunkID)
			st.Purged[p.ChunkID] = PurgeAt{Gen: b.Generation, Reason: p.Reason, Hash: p.ContentHash, Redaction: r}
			st.PurgeLog = append(st.PurgeLog, p.ChunkID)
			st.OwnTenant(ch.Tenant, own).AddPurge(b.Generation, p.ChunkID)
		}
	}
	for _, id := range evidence.SortedKeys(redacted) {
		// A replica may hold a batch as a purge it has not applied yet
		// rewrote it (the log hands out the rewritten body): that purge
		// is after the manifest's generation. Any other redaction without
		// its purge is damage.
		if redacted[id].Generation <= m.Generation {
			return nil, fmt.Errorf("%w: chunks %q are redacted in their batch files but no purge records it", storage.ErrCorrupt, evidence.SortedKeys(redacted))
		}
	}
	if upTo == m.Generation && (st.Stats.Docs != m.Docs || st.Stats.Tokens != m.Tokens) { // the manifest's totals are its generation's
		return nil, fmt.Errorf("%w: %s records %d chunks and %d tokens, the batch files analyze to %d and %d",
			storage.ErrCorrupt, storage.ManifestName, m.Docs, m.Tokens, st.Stats.Docs, st.Stats.Tokens)
	}
	switch {
	case !CorpusFree(emb): // no embedder, or one whose views are built per scope (denseview.go)
		return st, nil
	case m.Dense != nil && m.Dense.Embedder == emb.Identity():
		raw, err := d.ReadFile(m.Dense.File, m.Dense.Sum)
		if err != nil {
			return nil, err
		}
		dn, err := retrieve.DecodeDense(m.Dense.File, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
		}
		if !slices.Equal(dn.IDs(), evidence.SortedKeys(st.Chunks)) {
			return nil, fmt.Errorf("%w: %s covers other chunks than the manifest's batches", storage.ErrCorrupt, m.Dense.File)
		}
		if dims := dn.Dims(); dn.Indexed() > 0 && dims != emb.Dims() {
			return nil, fmt.Errorf("%w: %s holds vectors of %d dimensions, the embedder %q makes %d", storage.ErrCorrupt, m.Dense.File, dims, m.Dense.Embedder, emb.Dims())
		}
		st.Dense = dn
		if graph != nil && m.Dense.Graph != "" && m.Dense.GraphBuild == GraphBuild(*graph) {
			raw, err := d.ReadFile(m.Dense.Graph, m.Dense.GraphSum)
			if err != nil {
				return nil, err
			}
			g, err := retrieve.DecodeGraph(m.Dense.Graph, raw, dn, *graph)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
			}
			st.SetDense(dn, g)
			return st, nil
		}
	default: // no stored vectors, or another embedder's: embed again
		dense, err := st.BuildDense(context.Background(), emb, nil, nil)
		if err != nil {
			return nil, err
		}
		st.Dense = dense
	}
	if emb != nil {
		// No stored graph (or one built otherwise): the graph is a function
		// of the vectors and its settings, so building it gives the same one.
		g, err := BuildGraph(context.Background(), st.Dense, graph)
		if err != nil {
			return nil, err
		}
		st.SetDense(st.Dense, g)
	}
	return st, nil
}

// PurgeAt is what the index keeps of a purged chunk besides its fields.
type PurgeAt struct {
	Gen       int64
	Reason    string
	Hash      string // the purged chunk's content hash
	Redaction storage.Redaction
}

// AddPurge counts the purge of chunk id at generation gen: like a fact, it
// moves the tenant's generation and digest.
func (ts *tenantStats) AddPurge(gen int64, id string) {
	ts.Purges = ts.Purges.add(gen, 1)
	ts.addLanes(gen, keyLanes("purge\x00"+id))
}

// purgedWhy says why the gate keeps purged chunk id out, or "".
func (s *State) purgedWhy(id string) string {
	p, ok := s.Purged[id]
	if !ok {
		return ""
	}
	return fmt.Sprintf("purged at generation %d: %s", p.Gen, p.Reason)
}

// BuildGraph builds the HNSW graph over d when the index keeps one.
func BuildGraph(ctx context.Context, d *retrieve.Dense, opts *retrieve.GraphOptions) (*retrieve.Graph, error) {
	if opts == nil {
		return nil, nil
	}
	g, err := retrieve.NewGraph(ctx, d, *opts)
	if err != nil {
		return nil, fmt.Errorf("evpack: build graph: %w", err)
	}
	return g, nil
}

// AnalysisOf returns the analysis file of a batch with checksum sum holding
// the chunks add, analyzed as an by lex's analyzers. Each commit stores it
// beside its batch, and Open reads it instead of analyzing every stored text
// again. It is derived data: used only when it names the batch it was made
// from and the analyzers the engine runs (their identity), and Check
// compares it with a fresh analysis. A batch without one (a purge's
// rewrite, or an index made before analysis files) is analyzed as before.
func AnalysisOf(lex *retrieve.Lexical, sum string, add []*evidence.Chunk, an []Analyzed) storage.Analysis {
	a := storage.Analysis{Identity: AnalysisIdentity(lex), Batch: sum, Chunks: make([]storage.Analyzed, len(add))}
	for i, c := range add {
		a.Chunks[i] = storage.Analyzed{ID: c.ID, Tokens: an[i].Tokens, Lex: an[i].Lex, Rerank: an[i].Rerank}
	}
	return a
}

// AnalysisIdentity names the analyzers whose output an analysis file holds:
// the lexical index's analyzer and the reranker's term splitter.
func AnalysisIdentity(lex *retrieve.Lexical) string {
	return "lexical=" + lex.Analyzer() + " rerank=" + terms.Version
}

// analyzeBatch returns the analysis of the chunks of batch b: from its
// analysis file when it has one made by these analyzers, else by analyzing
// each text. The dense features are computed either way (an embedder is
// not one of the file's analyzers).
func analyzeBatch(d *storage.Dir, b storage.Batch, chunks []*evidence.Chunk, lex *retrieve.Lexical, emb retrieve.Embedder) ([]Analyzed, error) {
	out := make([]Analyzed, len(chunks))
	a, ok, err := d.ReadAnalysisTable(b)
	if err != nil {
		return nil, err
	}
	if !ok || a.Identity != AnalysisIdentity(lex) {
		var sp terms.Splitter
		for i, c := range chunks {
			out[i] = Analyze(lex, emb, &sp, c.Text)
		}
		return out, nil
	}
	tab := newTermTable(a.Terms)
	for i, c := range chunks {
		ac := a.Chunks[i]
		if ac.ID != c.ID {
			return nil, fmt.Errorf("%w: %s: entry %d is chunk %q, the batch's is %q", storage.ErrCorrupt, b.Analysis, i, ac.ID, c.ID)
		}
		out[i] = Analyzed{Tokens: ac.Tokens, tab: tab, lexIdx: ac.Lex, rrIdx: ac.Rerank}
		if emb != nil {
			out[i].Feats = analyzeChunk(emb, c.Text)
		}
	}
	return out, nil
}
