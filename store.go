package evpack

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/terms"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
)

// graphBuild names the settings that shape a graph's links.
func graphBuild(o retrieve.GraphOptions) string {
	return fmt.Sprintf("m=%d ef_construction=%d seed=%d", o.M, o.EfConstruction, o.Seed)
}

// corpusFree reports whether emb's vectors are independent of the corpus.
func corpusFree(emb retrieve.Embedder) bool {
	f, ok := emb.(retrieve.CorpusFree)
	return ok && f.CorpusFree()
}

// state is everything a query reads besides the bleve index.
//
// Invariant: a state is never changed once an Engine holds it. A commit
// builds the next state from a copy (extend) and swaps it in, so a query
// that took a state reads it without any lock, through model calls of any
// length.
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
	feats     map[string][]int32
	counts    *retrieve.Counts
	dense     *retrieve.Dense
	graph     *retrieve.Graph   // over dense, when the index keeps one
	denseRows []*evidence.Chunk // dense row -> chunk, for the eligibility check
	digest    string            // corpus digest over (chunk ID, content hash)
}

func newState() *state {
	return &state{chunks: map[string]*evidence.Chunk{}, df: map[string]int{}, terms: map[string][]string{},
		intern: map[string]string{}, entities: map[string][]string{}, feats: map[string][]int32{},
		counts: retrieve.NewCounts(), bounds: retrieve.NewBounds()}
}

// DocCount implements rerank.Stats.
func (s *state) DocCount() int { return len(s.chunks) }

// DocFreq implements rerank.Stats.
func (s *state) DocFreq(term string) int { return s.df[term] }

// extend returns a new state: s plus the chunks add (with their token
// counts and dense features) at generation gen. s is not changed.
func (s *state) extend(gen int64, add []*evidence.Chunk, tokens []int, feats [][]int32) *state {
	n := &state{
		gen: gen, chunks: maps.Clone(s.chunks), stats: s.stats, bounds: s.bounds.Clone(),
		df: maps.Clone(s.df), terms: maps.Clone(s.terms), intern: maps.Clone(s.intern),
		entities: maps.Clone(s.entities), feats: maps.Clone(s.feats),
		counts: &retrieve.Counts{N: maps.Clone(s.counts.N), Total: s.counts.Total},
		dense:  s.dense, graph: s.graph, denseRows: s.denseRows,
	}
	for i, c := range add {
		var f []int32
		if feats != nil {
			f = feats[i]
		}
		n.add(c, tokens[i], f)
	}
	n.computeDigest()
	return n
}

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

// loadState rebuilds the in-memory state from the batch files the manifest
// names, each checked against the manifest before a byte is used.
func loadState(d *storage.Dir, emb retrieve.Embedder, graph *retrieve.GraphOptions) (*state, error) {
	m := d.Manifest()
	st := newState()
	st.gen = m.Generation
	for _, b := range m.Batches {
		chunks, err := d.ReadBatch(b)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			if _, dup := st.chunks[c.ID]; dup {
				return nil, fmt.Errorf("%w: %s: chunk %q stored twice", ErrCorrupt, b.File, c.ID)
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
	st.computeDigest()
	switch {
	case emb == nil:
	case m.Dense != nil && corpusFree(emb) && m.Dense.Embedder == emb.Identity():
		raw, err := d.ReadFile(m.Dense.File, m.Dense.Sum)
		if err != nil {
			return nil, err
		}
		dn, err := retrieve.DecodeDense(m.Dense.File, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if !slices.Equal(dn.IDs(), evidence.SortedKeys(st.chunks)) {
			return nil, fmt.Errorf("%w: %s covers other chunks than the manifest's batches", ErrCorrupt, m.Dense.File)
		}
		st.dense = dn
		if graph != nil && m.Dense.Graph != "" && m.Dense.GraphBuild == graphBuild(*graph) {
			raw, err := d.ReadFile(m.Dense.Graph, m.Dense.GraphSum)
			if err != nil {
				return nil, err
			}
			g, err := retrieve.DecodeGraph(m.Dense.Graph, raw, dn, *graph)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			st.setDense(dn, g)
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
