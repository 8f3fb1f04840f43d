package evpack

import (
	"iter"
	"os"
	"sync"
	"sync/atomic"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// The checkpoint's bytes are internal/checkpoint's; here the state is
// handed to its encoder and built back from what its decoder reads.

// checkpointFormat is the checkpoint's magic (internal/checkpoint).
const checkpointFormat = checkpoint.Format

// olderCheckpoints are the magics Open passes over (internal/checkpoint).
var olderCheckpoints = checkpoint.Older

// checkpointSum returns the checksum the manifest records of a checkpoint.
func checkpointSum(raw []byte) (string, error) { return checkpoint.Sum(raw) }

// checkpointOf returns the sealed checkpoint of st, a state built from
// batches (every chunk in memory, with its line), for the engine's lexical
// index: its analyzers' identity, and the catalog of its partitions that
// st's documents give (so that Open opens none of them). The catalog is
// computed beside the rest: both only read st.
func (ix *index) checkpointOf(st *state) (checkpoint.File, error) {
	type result struct {
		raw []byte
		err error
	}
	done := make(chan result, 1) // buffered: an encoder that fails first leaves no goroutine behind
	go func() {
		raw, err := ix.lex.Catalog(st.lexDocs())
		done <- result{raw, err}
	}()
	return encodeCheckpoint(st, analysisIdentity(ix.lex), func() ([]byte, error) {
		r := <-done
		return r.raw, r.err
	})
}

// encodeCheckpoint returns the sealed checkpoint of st for analyzers
// identity and the lexical catalog catalog returns (see checkpointOf), which
// is asked for once the rest is encoded.
func encodeCheckpoint(st *state, identity string, catalog func() ([]byte, error)) (checkpoint.File, error) {
	h := checkpoint.Head{Gen: st.gen, Commits: st.commits, Docs: st.stats.Docs, Tokens: st.stats.Tokens, Bounds: st.bounds}
	for _, k := range evidence.SortedKeys(st.entities) {
		names := make([]checkpoint.Entity, len(st.entities[k]))
		for i, en := range st.entities[k] {
			names[i] = checkpoint.Entity{Name: en.name, Gen: en.gen}
		}
		h.Entities = append(h.Entities, checkpoint.Entities{Key: k, Names: names})
	}
	h.Facts = make([]checkpoint.Fact, len(st.factLog))
	for i, fa := range st.factLog {
		h.Facts[i] = checkpoint.Fact{Gen: fa.gen, F: fa.f}
	}
	h.Purges = make([]checkpoint.Purge, len(st.purgeLog))
	for i, id := range st.purgeLog {
		p := st.purged[id]
		h.Purges[i] = checkpoint.Purge{ID: id, Gen: p.gen, Reason: p.reason, Hash: p.hash, Redaction: p.r}
	}
	for _, name := range st.tenantNames() {
		ts := st.tenants[name]
		t := checkpoint.Tenant{Name: name, Docs: checkpoint.Series(ts.docs), Tokens: checkpoint.Series(ts.tokens),
			Facts: checkpoint.Series(ts.facts), Purges: checkpoint.Series(ts.purges), RRTerms: checkpoint.Series(ts.rrTerms)}
		t.Digest = make([]checkpoint.Lane, len(ts.digest))
		for i, lp := range ts.digest {
			t.Digest[i] = checkpoint.Lane{Gen: lp.gen, L: lp.l}
		}
		t.LexDF, t.RRDF = termCounts(ts.lexDF), termCounts(ts.rrDF)
		h.Tenants = append(h.Tenants, t)
	}
	keys := evidence.SortedKeys(st.docOrder)
	docs := make([]checkpoint.Doc, len(keys))
	for i, k := range keys {
		docs[i] = checkpoint.Doc{IDs: st.docOrder[k].ids, Nums: st.docOrder[k].nums}
	}
	return checkpoint.Encode(checkpoint.Input{Head: h, Identity: identity, Names: st.names, Docs: docs, Placed: len(st.docPlace),
		Catalog: catalog,
		Chunk: func(id string) checkpoint.Chunk {
			pl, c := st.docPlace[id], st.chunks[id]
			_, purged := st.purged[id] // nil in memory, or none read back: the same
			return checkpoint.Chunk{Gen: pl.gen, Line: pl.line, Hash: c.ContentHash, Tenant: c.Tenant, Purged: purged}
		}})
}

// termCounts returns df by term.
func termCounts(df map[string]series) []checkpoint.TermCounts {
	out := make([]checkpoint.TermCounts, 0, len(df))
	for _, t := range evidence.SortedKeys(df) {
		out = append(out, checkpoint.TermCounts{Term: t, Counts: checkpoint.Series(df[t])})
	}
	return out
}

// decodeCheckpoint checks the head of checkpoint file f (name is used in
// errors) against sum, the manifest's, parses it, and maps the body: a
// state whose chunks are read through a row table over batch files files
// (by generation) of d. ok is false, with no error, when the checkpoint was
// made by other analyzers than identity.
func decodeCheckpoint(name string, f *os.File, sum, identity string, d *storage.Dir, files []string) (*state, bool, error) {
	h, t, ok, err := checkpoint.Decode(name, f, sum, identity, len(files))
	if err != nil || !ok {
		return nil, ok, err
	}
	st := newState()
	st.gen, st.commits, st.bounds = h.Gen, h.Commits, h.Bounds
	st.stats.Docs, st.stats.Tokens = h.Docs, h.Tokens
	st.names = h.Terms
	for i, n := range h.Terms {
		st.intern[n] = uint32(i)
	}
	for _, e := range h.Entities {
		list := make([]entityName, len(e.Names))
		for i, en := range e.Names {
			list[i] = entityName{name: en.Name, gen: en.Gen}
		}
		st.entities[e.Key] = list
	}
	st.factLog = make([]factAt, len(h.Facts))
	for i, fa := range h.Facts {
		st.factLog[i] = factAt{gen: fa.Gen, f: fa.F}
		st.facts[fa.F.ChunkID] = append(st.facts[fa.F.ChunkID], st.factLog[i])
	}
	st.purgeLog = make([]string, len(h.Purges))
	for i, p := range h.Purges {
		st.purgeLog[i] = p.ID
		st.purged[p.ID] = purgeAt{gen: p.Gen, reason: p.Reason, hash: p.Hash, r: p.Redaction}
	}
	for _, ht := range h.Tenants {
		ts := newTenantStats()
		ts.docs, ts.tokens, ts.facts, ts.purges, ts.rrTerms = series(ht.Docs), series(ht.Tokens), series(ht.Facts), series(ht.Purges), series(ht.RRTerms)
		ts.digest = make([]lanePoint, len(ht.Digest))
		for i, l := range ht.Digest {
			ts.digest[i] = lanePoint{gen: l.Gen, l: l.L}
		}
		for _, c := range ht.LexDF {
			ts.lexDF[c.Term] = series(c.Counts)
		}
		for _, c := range ht.RRDF {
			ts.rrDF[c.Term] = series(c.Counts)
		}
		st.tenants[ht.Name] = ts
	}
	st.rows = &rowTable{Table: t, dir: d, files: files, checked: make([]atomic.Pointer[checkedChunk], min(t.Len(), checkedChunks)+1)}
	return st, true, nil
}

// lexDocs yields the lexical document of each chunk of st (every chunk in
// memory), in row order, with whether the lexical index holds it: a purge
// deleted the documents of the chunks it took.
func (st *state) lexDocs() iter.Seq2[retrieve.Doc, bool] {
	return func(yield func(retrieve.Doc, bool) bool) {
		for _, k := range evidence.SortedKeys(st.docOrder) {
			for _, id := range st.docOrder[k].ids {
				d, err := st.lexDoc(id)
				if err != nil {
					continue // every placed chunk is committed (rows checks the count)
				}
				if _, purged := st.purged[id]; !yield(d, !purged) {
					return
				}
			}
		}
	}
}

// rowTable is the chunks' half of a state read from a checkpoint: the
// checkpoint's rows (checkpoint.Table), and the batch files its chunks are
// read from. It is read-only once made (but for its caches and checks,
// which are safe for concurrent use), so any number of queries read it at
// once. close releases both the files and the checkpoint's mapping.
type rowTable struct {
	*checkpoint.Table
	mu     sync.Mutex
	open   map[string]*os.File // batch files read so far, kept open until close
	closed bool
	docs   sync.Map // first row of a document -> *docRows, made on first use
	// checked holds chunks read and checked lately (chunkUpTo), in the
	// slot of their row modulo its length: an edit to a batch file after
	// a request read a chunk is found by Check and Verify, which read the
	// files, and by the next process.
	checked []atomic.Pointer[checkedChunk]
	dir     *storage.Dir
	files   []string // batch file of generation g at files[g-1]
}
