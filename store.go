package evpack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// Stored format versions. A reader refuses any other version.
const (
	IndexFormat = "evpack-index/1"
	chunkFormat = "evpack-chunks/1"
)

// Layout of an index directory.
const (
	manifestName = "MANIFEST.json"
	chunksDir    = "chunks"
	lexicalDir   = "lexical"
)

// manifest is the commit point: a batch exists once the manifest names it.
type manifest struct {
	Format     string    `json:"format"`
	Generation int64     `json:"generation"`
	Docs       int64     `json:"docs"`
	Tokens     int64     `json:"tokens"`
	Batches    []string  `json:"batches"`
	Dense      *denseRef `json:"dense,omitempty"`
}

// denseRef names the stored dense index of a generation and the embedder
// that made it: only a corpus-free embedder's vectors are stored (SIF's
// depend on the whole corpus and are cheap to rebuild).
type denseRef struct {
	File     string `json:"file"`
	Embedder string `json:"embedder"`
	// Graph is the HNSW graph over those vectors, when the index keeps one,
	// and GraphBuild the settings it was built with (see graphBuild).
	Graph      string `json:"graph,omitempty"`
	GraphBuild string `json:"graph_build,omitempty"`
}

// files lists the files r names.
func (r *denseRef) files() []string {
	if r.Graph == "" {
		return []string{r.File}
	}
	return []string{r.File, r.Graph}
}

// graphBuild names the settings that shape a graph's links.
func graphBuild(o retrieve.GraphOptions) string {
	return fmt.Sprintf("m=%d ef_construction=%d seed=%d", o.M, o.EfConstruction, o.Seed)
}

// corpusFree reports whether emb's vectors are independent of the corpus.
func corpusFree(emb retrieve.Embedder) bool {
	f, ok := emb.(retrieve.CorpusFree)
	return ok && f.CorpusFree()
}

// state is everything a query reads besides the bleve index. It is replaced
// or extended only under Engine.mu held for writing.
type state struct {
	gen    int64
	chunks map[string]*evidence.Chunk
	stats  retrieve.BM25Stats
	bounds retrieve.Bounds
	df     map[string]int      // reranker term document frequencies
	terms  map[string][]string // reranker terms per chunk ID, interned
	intern map[string]string
	// entities maps an EntityFilterKey value to its company's names.
	entities map[string][]string
	// The dense leg, when the index has an embedder: features per chunk,
	// corpus counts, and the vectors, rebuilt at every commit.
	feats      map[string][]int32
	counts     *retrieve.Counts
	dense      *retrieve.Dense
	graph      *retrieve.Graph   // over dense, when the index keeps one
	denseRows  []*evidence.Chunk // dense row -> chunk, for the eligibility check
	denseFiles []string          // the stored dense index (and graph) of this generation, if any
	digest     string            // corpus digest over (chunk ID, content hash)
	batches    []string
	// Document context for rerankers (rerank.Documents): the chunk IDs of
	// each document version in document order, each chunk's document version
	// and place key, and the total reranker term count. Document order is a
	// function of the chunks alone (never of ingest order or batching): the
	// chunk's MetaPosition when it has one (chunks without one come after
	// those with one), then the natural order of chunk
	// IDs ("art-2" before "art-10"), then the IDs' bytes.
	docOrder  map[string]*docList
	docPlace  map[string]docPlace
	termTotal int64
}

// MetaPosition is the metadata key a connector sets to a chunk's 0-based
// place in its document (a decimal integer), when the chunk ID does not
// already sort in document order.
const MetaPosition = "position"

// docList is one document version's chunks in document order: IDs and
// their reranker terms side by side.
type docList struct {
	ids   []string
	terms [][]string
}

// docPlace is a chunk's document version and its order key there.
type docPlace struct {
	key string // Tenant + "\x00" + DocID + "\x00" + Version
	seq int64  // MetaPosition, or MaxInt64 (after the positioned) when absent or not a number
	pos int    // index in docOrder[key], kept current as chunks arrive
}

// cmpDocOrder orders two chunks of one document version.
func (s *state) cmpDocOrder(a, b string) int {
	pa, pb := s.docPlace[a], s.docPlace[b]
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

func newState() *state {
	return &state{chunks: map[string]*evidence.Chunk{}, df: map[string]int{}, terms: map[string][]string{},
		intern: map[string]string{}, entities: map[string][]string{}, feats: map[string][]int32{},
		counts: retrieve.NewCounts(), bounds: retrieve.NewBounds(),
		docOrder: map[string]*docList{}, docPlace: map[string]docPlace{}}
}

// ChunkTerms implements rerank.Documents.
func (s *state) ChunkTerms(id string) []string { return s.terms[id] }

// TermTotal implements rerank.Documents.
func (s *state) TermTotal() int64 { return s.termTotal }

// Document implements rerank.Documents: the chunk IDs and terms of id's
// document version in document order, and id's position there.
func (s *state) Document(id string) ([]string, [][]string, int) {
	p, ok := s.docPlace[id]
	if !ok {
		return nil, nil, -1
	}
	d := s.docOrder[p.key]
	return d.ids, d.terms, p.pos
}

// DocCount implements rerank.Stats.
func (s *state) DocCount() int { return len(s.chunks) }

// DocFreq implements rerank.Stats.
func (s *state) DocFreq(term string) int { return s.df[term] }

func (s *state) add(c *evidence.Chunk, tokens int, feats []int32) {
	if feats != nil {
		s.feats[c.ID] = feats
		s.counts.Add(feats)
	}
	s.chunks[c.ID] = c
	s.stats.Docs++
	s.stats.Tokens += int64(tokens)
	s.bounds.Add(c)
	s.addEntityNames(c)
	ts := rerank.Terms(c.Text)
	for i, t := range ts {
		if interned, ok := s.intern[t]; ok {
			ts[i] = interned
		} else {
			s.intern[t] = t
		}
	}
	s.terms[c.ID] = ts
	s.termTotal += int64(len(ts))
	// Keyed by tenant too: another tenant's document of the same ID is not
	// this chunk's document, and its chunks must not move this tenant's packs.
	place := docPlace{key: c.Tenant + "\x00" + c.DocID + "\x00" + c.Version, seq: math.MaxInt64}
	if v, err := strconv.ParseInt(c.Meta[MetaPosition], 10, 64); err == nil && v >= 0 {
		place.seq = v
	}
	s.docPlace[c.ID] = place
	d := s.docOrder[place.key]
	if d == nil {
		d = &docList{}
		s.docOrder[place.key] = d
	}
	at, _ := slices.BinarySearchFunc(d.ids, c.ID, s.cmpDocOrder)
	d.ids = slices.Insert(d.ids, at, c.ID)
	d.terms = slices.Insert(d.terms, at, ts)
	for i := at; i < len(d.ids); i++ { // chunks after it move one place on
		p := s.docPlace[d.ids[i]]
		p.pos = i
		s.docPlace[d.ids[i]] = p
	}
	for _, t := range terms.Distinct(ts) {
		s.df[t]++
	}
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

// buildDense embeds every chunk of s plus add (with features addFeats)
// without changing s: SIF weights depend on corpus counts, so a commit
// changes every vector, and rebuilding makes the vectors a function of the
// corpus alone, not of the order it arrived in. An error leaves s as it was.
func (s *state) buildDense(ctx context.Context, emb retrieve.Embedder, add []*evidence.Chunk, addFeats [][]int32) (*retrieve.Dense, error) {
	counts := &retrieve.Counts{N: maps.Clone(s.counts.N), Total: s.counts.Total}
	feats := make(map[string][]int32, len(s.feats)+len(add))
	maps.Copy(feats, s.feats)
	for i, c := range add {
		feats[c.ID] = addFeats[i]
		counts.Add(addFeats[i])
	}
	ids := evidence.SortedKeys(feats)
	vecs := make([][]int8, len(ids))
	var todo []int // rows to embed
	free, _ := emb.(retrieve.CorpusFree)
	for i, id := range ids {
		if free != nil && free.CorpusFree() && s.dense != nil {
			if v, ok := s.dense.Vector(id); ok {
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
	d := retrieve.NewDense(ids, vecs)
	if r, ok := emb.(retrieve.ComponentRemover); ok && r.RemovesFirstComponent() && !corpusFree(emb) {
		d = d.WithoutFirstComponent()
	}
	return d, nil
}

// setDense installs d, its graph g (nil for none) and the chunks of its
// rows. The chunks must already be in s (buildDense embeds exactly s's chunks
// plus those being committed).
func (s *state) setDense(d *retrieve.Dense, g *retrieve.Graph) {
	s.dense, s.graph = d, g
	s.denseRows = make([]*evidence.Chunk, d.Len())
	for i := range s.denseRows {
		s.denseRows[i] = s.chunks[d.ID(i)]
	}
}

// computeDigest names the corpus: BLAKE3 over the sorted (ID, content hash)
// pairs, so it is the same whatever order or batching built the index.
func (s *state) computeDigest() {
	ids := evidence.SortedKeys(s.chunks)
	h := blake3.New()
	for _, id := range ids {
		fmt.Fprintf(h, "%s\t%s\n", id, s.chunks[id].ContentHash)
	}
	s.digest = evidence.HashPrefix + fmt.Sprintf("%x", h.Sum(nil))
}

// storedChunk is one line of a batch file.
type storedChunk struct {
	ID          string            `json:"id"`
	DocID       string            `json:"doc_id"`
	Version     string            `json:"version"`
	Text        string            `json:"text"`
	SourceURL   string            `json:"source_url"`
	Connector   string            `json:"connector"`
	RetrievedAt string            `json:"retrieved_at"`
	Anchor      string            `json:"anchor"`
	AnchorField string            `json:"anchor_field"`
	ValidFrom   string            `json:"valid_from"`
	ValidTo     string            `json:"valid_to"`
	Tenant      string            `json:"tenant"`
	ContentHash string            `json:"content_hash"`
	Meta        map[string]string `json:"meta,omitempty"`
}

func encodeBatch(chunks []*evidence.Chunk) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"format": chunkFormat}); err != nil {
		return nil, err
	}
	for _, c := range chunks {
		sc := storedChunk{ID: c.ID, DocID: c.DocID, Version: c.Version, Text: c.Text, SourceURL: c.SourceURL,
			Connector: c.Connector, RetrievedAt: asof.FormatInstant(c.RetrievedAt),
			Anchor: asof.FormatInstant(c.Anchor.At), AnchorField: c.Anchor.Field,
			ValidFrom: c.Valid.From.String(), ValidTo: c.Valid.To.String(), Tenant: c.Tenant,
			ContentHash: c.ContentHash, Meta: c.Meta}
		if err := enc.Encode(&sc); err != nil {
			return nil, fmt.Errorf("chunk %q: %w", c.ID, err)
		}
	}
	return b.Bytes(), nil
}

func decodeBatch(path string) ([]*evidence.Chunk, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var out []*evidence.Chunk
	for line := 1; sc.Scan(); line++ {
		where := fmt.Sprintf("%s:%d", path, line)
		if line == 1 {
			var h map[string]string
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h["format"] != chunkFormat {
				return nil, fmt.Errorf("%w: %s: want header {\"format\":%q}", ErrCorrupt, where, chunkFormat)
			}
			continue
		}
		var s storedChunk
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, where, err)
		}
		c := &evidence.Chunk{ID: s.ID, DocID: s.DocID, Version: s.Version, Text: s.Text, SourceURL: s.SourceURL,
			Connector: s.Connector, Tenant: s.Tenant, ContentHash: s.ContentHash, Meta: s.Meta,
			Anchor: asof.Anchor{Field: s.AnchorField}}
		errs := []error{}
		if s.RetrievedAt != "" {
			c.RetrievedAt, err = asof.ParseInstant(s.RetrievedAt)
			errs = append(errs, err)
		}
		if s.Anchor != "" {
			c.Anchor.At, err = asof.ParseInstant(s.Anchor)
			errs = append(errs, err)
		}
		if s.ValidFrom != "" {
			c.Valid.From, err = asof.ParseDate(s.ValidFrom)
			errs = append(errs, err)
		}
		if s.ValidTo != "" {
			c.Valid.To, err = asof.ParseDate(s.ValidTo)
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%w: %s: chunk %q: %w", ErrCorrupt, where, s.ID, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return out, nil
}

func readManifest(dir string) (*manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, manifestName, err)
	}
	if m.Format != IndexFormat {
		return nil, fmt.Errorf("%w: %s: format %q, this evpack reads %q", ErrCorrupt, manifestName, m.Format, IndexFormat)
	}
	names := slices.Clone(m.Batches)
	if m.Dense != nil {
		names = append(names, m.Dense.files()...)
	}
	for _, b := range names {
		if b == "" || strings.ContainsAny(b, `/\`) || strings.HasPrefix(b, ".") {
			return nil, fmt.Errorf("%w: %s: bad file name %q", ErrCorrupt, manifestName, b)
		}
	}
	return &m, nil
}

func writeManifest(dir string, m *manifest) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteAtomic(filepath.Join(dir, manifestName), append(raw, '\n'))
}

// loadState rebuilds the in-memory state from the manifest's batch files.
func loadState(dir string, m *manifest, emb retrieve.Embedder, graph *retrieve.GraphOptions) (*state, error) {
	st := newState()
	st.gen = m.Generation
	st.batches = slices.Clone(m.Batches)
	if m.Dense != nil {
		st.denseFiles = m.Dense.files()
	}
	for _, b := range m.Batches {
		chunks, err := decodeBatch(filepath.Join(dir, chunksDir, b))
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			if _, dup := st.chunks[c.ID]; dup {
				return nil, fmt.Errorf("%w: %s: chunk %q stored twice", ErrCorrupt, b, c.ID)
			}
			var f []int32
			if emb != nil {
				f = analyzeChunk(emb, c.Text)
			}
			st.add(c, 0, f)
		}
	}
	// Token totals come from the manifest: recomputing them needs the
	// analyzer, and Check compares the two.
	st.stats = retrieve.BM25Stats{Docs: m.Docs, Tokens: m.Tokens}
	if int64(len(st.chunks)) != m.Docs {
		return nil, fmt.Errorf("%w: manifest says %d chunks, batch files hold %d", ErrCorrupt, m.Docs, len(st.chunks))
	}
	st.computeDigest()
	switch {
	case emb == nil:
	case m.Dense != nil && corpusFree(emb) && m.Dense.Embedder == emb.Identity():
		path := filepath.Join(dir, m.Dense.File)
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		d, err := retrieve.DecodeDense(path, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if !slices.Equal(d.IDs(), evidence.SortedKeys(st.chunks)) {
			return nil, fmt.Errorf("%w: %s covers other chunks than the manifest's batches", ErrCorrupt, path)
		}
		st.dense = d
		if graph != nil && m.Dense.Graph != "" && m.Dense.GraphBuild == graphBuild(*graph) {
			gpath := filepath.Join(dir, m.Dense.Graph)
			raw, err := os.ReadFile(gpath)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			g, err := retrieve.DecodeGraph(gpath, raw, d, *graph)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			st.setDense(d, g)
			return st, nil
		}
	default: // no stored vectors, or another embedder's: embed again
		dense, err := st.buildDense(context.Background(), emb, nil, nil)
		if err != nil {
			return nil, err
		}
		st.dense = dense
	}
	if emb != nil {
		// No stored graph (or one built otherwise): the graph is a function
		// of the vectors and its settings, so building it gives the same one.
		g, err := buildGraph(context.Background(), st.dense, graph)
		if err != nil {
			return nil, err
		}
		st.setDense(st.dense, g)
	}
	return st, nil
}
