package evpack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// CheckReport says what CheckIndex verified and what it found wrong.
type CheckReport struct {
	Generation int64         // the committed generation checked
	Chunks     int           // committed chunks
	Files      []CheckedFile // every stored file the manifest names, in manifest order
	// Strays are files in the index directory that the manifest does not
	// name (a temporary directory left by a crash, say): reported, never
	// deleted. One that may hold chunk text (a temp file of an atomic
	// write, or a file in chunks/) is also a problem.
	Strays   []string
	Problems []string // empty iff the index is healthy
}

// CheckedFile is a stored file whose bytes were read and found to hash to
// the checksum the manifest records.
type CheckedFile struct {
	Name   string // relative to the index directory
	Sum    string // "blake3:<hex>"
	Chunks int    // for batch files, how many chunks it holds
	Facts  int    // and how many facts
	Purges int    // and purges
}

// OK reports whether no problem was found.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Check tests the index's invariants and returns nil, or an error wrapping
// ErrCheck that lists every violation (see CheckIndex). Tests run it in
// t.Cleanup; a service can run it after a restore.
func (e *Engine) Check() error {
	rep, err := e.CheckIndex(context.Background())
	if err != nil {
		return err
	}
	if !rep.OK() {
		errs := make([]error, len(rep.Problems))
		for i, p := range rep.Problems {
			errs[i] = errors.New(p)
		}
		return fmt.Errorf("%w: %w", ErrCheck, errors.Join(errs...))
	}
	return nil
}

// CheckIndex reads the whole index back and compares its parts: every batch
// file against its checksum in the manifest and against the chunks in
// memory, every chunk against its content hash, the BM25 statistics and
// corpus digest against a recount, and every lexical document against the
// chunk and generation it was built from. It holds off commits while it
// runs. It returns an error only when the check cannot run.
func (e *Engine) CheckIndex(ctx context.Context) (*CheckReport, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	st := e.st
	rep := &CheckReport{Generation: st.Gen}
	bad := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	if e.broken != nil {
		bad("%v", e.broken)
	}
	if e.readOnly != nil {
		// The lexical index holds the unfinished commit's documents: what
		// it holds is compared once an Open with room rolled them back.
		bad("%v", e.readOnly)
	}
	if st.Rows != nil {
		// Open read the checkpoint: check the state every batch file gives
		// (and the checkpoint against it, below), leaving the engine's as
		// it is, so that a process that only queries stays small.
		full, err := state.LoadState(e.store, e.lex, e.emb, e.graph)
		if err != nil {
			bad("%v", err)
			return rep, nil
		}
		st = full
	}
	rep.Chunks = len(st.Chunks)

	// Recount every corpus figure from the chunks, generation by
	// generation, and compare it with the state's.
	ids := evidence.SortedKeys(st.Chunks)
	slices.SortStableFunc(ids, func(a, b string) int { return cmp.Compare(st.Committed[a], st.Committed[b]) })
	fresh, bld := state.NewState(), state.NewBuilding()
	own := bld.Own
	nextFact, nextPurge := 0, 0
	addFacts := func(upTo int64) { // facts and purges of generations up to upTo, in commit order
		for {
			factGen, purgeGen := int64(math.MaxInt64), int64(math.MaxInt64)
			if nextFact < len(st.FactLog) {
				factGen = st.FactLog[nextFact].Gen
			}
			if nextPurge < len(st.PurgeLog) {
				purgeGen = st.Purged[st.PurgeLog[nextPurge]].Gen
			}
			switch {
			case min(factGen, purgeGen) > upTo:
				return
			case factGen < purgeGen: // a purge and a fact are never of one generation
				fa := st.FactLog[nextFact]
				nextFact++
				if _, ok := fresh.Chunks[fa.Fact.ChunkID]; !ok {
					bad("fact %s of generation %d names chunk %q, not committed by then", fa.Fact, fa.Gen, fa.Fact.ChunkID)
					continue
				}
				fresh.AddFact(fa.Gen, fa.Fact, own)
			default:
				id := st.PurgeLog[nextPurge]
				nextPurge++
				fresh.OwnTenant(st.Chunks[id].Tenant, own).AddPurge(st.Purged[id].Gen, id)
			}
		}
	}
	analyses := make(map[string]state.Analyzed, len(ids)) // for the analysis files (checkAnalysis)
	for _, id := range ids {
		c := st.Chunks[id]
		an := state.Analyze(e.lex, nil, nil, c.Text)
		analyses[id] = an
		if p, ok := st.Purged[id]; ok { // its text is gone: the counts it gave
			an.Tokens, an.Redacted = p.Redaction.Tokens, &p.Redaction
			if c.Text != "" {
				bad("chunk %q was purged at generation %d but its text is still held", id, p.Gen)
			}
		} else if got := c.ComputeHash(); got != c.ContentHash {
			bad("chunk %q: fields hash to %s, stored content hash is %s", id, got, c.ContentHash)
		}
		addFacts(st.Committed[id] - 1)
		fresh.Add(st.Committed[id], c, an, bld)
	}
	addFacts(st.Gen)
	if st.Stats.Docs != fresh.Stats.Docs || st.Stats.Tokens != fresh.Stats.Tokens {
		bad("bm25 totals %d chunks %d tokens, recount gives %d and %d", st.Stats.Docs, st.Stats.Tokens, fresh.Stats.Docs, fresh.Stats.Tokens)
	}
	checkTenants(st, fresh, bad)
	if st.Dense != nil && !slices.Equal(st.Dense.IDs(), evidence.SortedKeys(st.Chunks)) {
		bad("dense index covers %d chunks, store holds %d", st.Dense.Len(), len(st.Chunks))
	}
	if st.Graph != nil {
		if err := st.Graph.Check(); err != nil {
			bad("hnsw graph: %v", err)
		}
	}

	if e.store != nil {
		e.checkFiles(st, analyses, rep, bad)
		e.checkCheckpoint(st, bad)
	}
	if e.readOnly != nil {
		return rep, nil
	}
	seen := 0
	err := e.lex.Docs(ctx, func(d retrieve.StoredDoc) error {
		seen++
		c, ok := st.Chunks[d.ID]
		switch {
		case !ok:
			bad("lexical document %q: no such committed chunk (generation %d)", d.ID, d.Generation)
		case st.Purged[d.ID].Gen > 0:
			bad("lexical document %q: its chunk was purged at generation %d, the document should be gone", d.ID, st.Purged[d.ID].Gen)
		case d.ContentHash != c.ContentHash:
			bad("lexical document %q: built from content hash %s, the chunk's is %s", d.ID, d.ContentHash, c.ContentHash)
		case d.Generation != st.Committed[d.ID]:
			bad("lexical document %q: generation %d, its chunk was committed at %d", d.ID, d.Generation, st.Committed[d.ID])
		default:
			want, _ := st.LexDoc(d.ID)
			if d.Retired != want.Retired || d.FactGen != want.FactGen || d.FirstFact != want.FirstFactGen {
				bad("lexical document %q: retired %q by facts of generations %d..%d, the facts say %q and %d..%d",
					d.ID, d.Retired.String(), d.FirstFact, d.FactGen, want.Retired.String(), want.FirstFactGen, want.FactGen)
			}
			if err := e.lex.CheckDoc(d, want); err != nil {
				bad("lexical document %q: %v", d.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, corruptLexical(ctx, err)
	}
	if seen != len(st.Chunks)-len(st.Purged) {
		bad("lexical index holds %d documents, store %d chunks (%d of them purged)", seen, len(st.Chunks), len(st.Purged))
	}
	return rep, nil
}

// checkFiles re-reads every file the manifest names and compares the batch
// files' chunks with st's.
func (e *Engine) checkFiles(st *state.State, analyses map[string]state.Analyzed, rep *CheckReport, bad func(string, ...any)) {
	m := e.store.Manifest()
	if m.Generation != st.Gen {
		bad("manifest at generation %d, engine at %d", m.Generation, st.Gen)
	}
	inBatches, factsInBatches, purgesInBatches := 0, 0, 0
	for _, b := range m.Batches {
		cont, err := e.store.ReadBatch(b)
		if err != nil {
			bad("%v", err)
			continue
		}
		chunks := cont.Chunks
		rep.Files = append(rep.Files, CheckedFile{Name: storage.ChunksDir + "/" + b.File, Sum: b.Sum,
			Chunks: len(chunks), Facts: len(cont.Facts), Purges: len(cont.Purges)})
		if b.Analysis != "" {
			checkAnalysis(e, b, chunks, analyses, rep, bad)
		}
		for _, p := range cont.Purges {
			if purgesInBatches >= len(st.PurgeLog) || st.PurgeLog[purgesInBatches] != p.ChunkID || st.Purged[p.ChunkID].Gen != b.Generation {
				bad("%s: the purge of chunk %q is not the engine's purge %d", b.File, p.ChunkID, purgesInBatches+1)
			}
			purgesInBatches++
		}
		for _, id := range evidence.SortedKeys(cont.Redacted) {
			if p, ok := st.Purged[id]; !ok || p.Redaction != cont.Redacted[id] {
				bad("%s: chunk %q is redacted, the engine's state does not say it was purged so", b.File, id)
			}
		}
		for _, f := range cont.Facts {
			if factsInBatches >= len(st.FactLog) || st.FactLog[factsInBatches].Gen != b.Generation || *st.FactLog[factsInBatches].Fact != *f {
				bad("%s: fact %s on chunk %q is not the engine's fact %d", b.File, f, f.ChunkID, factsInBatches+1)
			}
			factsInBatches++
		}
		for i, c := range chunks {
			inBatches++
			mem, ok := st.Chunks[c.ID]
			switch {
			case !ok:
				bad("%s: chunk %q is not in the engine's state", b.File, c.ID)
			case st.Committed[c.ID] != b.Generation:
				bad("%s: chunk %q is of generation %d, the engine's state says %d", b.File, c.ID, b.Generation, st.Committed[c.ID])
			case st.DocPlace[c.ID].Line != cont.Lines[i]:
				bad("%s: chunk %q lies at byte %d, the engine's state says %d", b.File, c.ID, cont.Lines[i].Off, st.DocPlace[c.ID].Line.Off)
			default:
				if f := storage.Differs(c, mem); f != "" {
					bad("%s: chunk %q: stored %s differs from the engine's", b.File, c.ID, f)
				}
			}
		}
	}
	if inBatches != len(st.Chunks) {
		bad("batch files hold %d chunks, the engine %d", inBatches, len(st.Chunks))
	}
	if factsInBatches != len(st.FactLog) {
		bad("batch files hold %d facts, the engine %d", factsInBatches, len(st.FactLog))
	}
	if purgesInBatches != len(st.PurgeLog) {
		bad("batch files record %d purges, the engine %d", purgesInBatches, len(st.PurgeLog))
	}
	if d := m.Dense; d != nil {
		for _, f := range [][2]string{{d.File, d.Sum}, {d.Graph, d.GraphSum}} {
			if f[0] == "" {
				continue
			}
			if _, err := e.store.ReadFile(f[0], f[1]); err != nil {
				bad("%v", err)
			} else {
				rep.Files = append(rep.Files, CheckedFile{Name: f[0], Sum: f[1]})
			}
		}
	}
	strays, err := e.store.Strays()
	if err != nil {
		bad("list %s: %v", e.dir, err)
	}
	rep.Strays = strays
	for _, s := range strays {
		// A temp file of an atomic write, or a file in chunks/ the manifest
		// does not name (a batch or analysis file a commit made obsolete,
		// come back after a power cut), may hold chunk text: a purged
		// chunk's. Open removes the temp files; one that is left, and any
		// such file, is a problem, not a harmless stray.
		dir, base := path.Split(s)
		if slices.Contains(e.store.PendingFiles(), s) {
			continue // an unfinished commit's, which its record removes
		}
		if fi, err := os.Lstat(filepath.Join(e.dir, s)); err == nil && fi.Mode().IsRegular() &&
			(fsutil.IsTemp(base) || dir == storage.ChunksDir+"/") {
			bad("%s: a file the manifest does not name, which may hold chunk text (an interrupted write's or an obsolete batch's); remove it", filepath.Join(e.dir, s))
		}
	}
}

// checkTenants compares the per-tenant figures of st with a recount.
func checkTenants(st, fresh *state.State, bad func(string, ...any)) {
	if got, want := st.TenantNames(), fresh.TenantNames(); !slices.Equal(got, want) {
		bad("tenants %q, recount gives %q", got, want)
		return
	}
	sameDF := func(a, b map[string]state.Series) bool {
		return maps.EqualFunc(a, b, func(x, y state.Series) bool { return slices.Equal(x, y) })
	}
	for _, name := range st.TenantNames() {
		a, b := st.Tenants[name], fresh.Tenants[name]
		switch {
		case !slices.Equal(a.Docs, b.Docs) || !slices.Equal(a.Tokens, b.Tokens) || !slices.Equal(a.Facts, b.Facts):
			bad("tenant %q: document, token or fact counts over generations differ from a recount", name)
		case !slices.Equal(a.Digest, b.Digest):
			bad("tenant %q: corpus digests over generations differ from a recount", name)
		case !sameDF(a.LexDF, b.LexDF) || !sameDF(a.RerankDF, b.RerankDF):
			bad("tenant %q: term document frequencies differ from a recount", name)
		}
	}
}

// checkAnalysis compares batch b's analysis file with the fresh analysis
// of each of its chunks (analyses, by chunk ID: the recount's, of the text
// held in memory, which checkFiles compares with the stored text). A file
// made by other analyzers is left alone: Open does not use it.
func checkAnalysis(e *Engine, b storage.Batch, chunks []*evidence.Chunk, analyses map[string]state.Analyzed, rep *CheckReport, bad func(string, ...any)) {
	a, _, err := e.store.ReadAnalysis(b)
	if err != nil {
		bad("%v", err)
		return
	}
	rep.Files = append(rep.Files, CheckedFile{Name: storage.ChunksDir + "/" + b.Analysis, Sum: b.AnalysisSum, Chunks: len(a.Chunks)})
	if a.Identity != state.AnalysisIdentity(e.lex) {
		return
	}
	for i, c := range chunks {
		ac, an := a.Chunks[i], analyses[c.ID]
		switch {
		case ac.ID != c.ID:
			bad("%s: entry %d is chunk %q, the batch's is %q", b.Analysis, i, ac.ID, c.ID)
		case ac.Tokens != an.Tokens || !slices.Equal(ac.Lex, an.Lex):
			bad("%s: chunk %q: lexical terms differ from its text's analysis", b.Analysis, c.ID)
		case !slices.Equal(ac.Rerank, an.Rerank):
			bad("%s: chunk %q: reranker terms differ from its text's analysis", b.Analysis, c.ID)
		}
	}
}

// corruptLexical marks err, a failure to read the lexical index of an
// existing index, as ErrCorrupt: a partition bleve refuses or panics on, a
// damaged layout file, a partition the catalog does not name. Those are
// damage to be rebuilt (evpack rebuild-lexical), not bad input. A
// cancelled context is left as it is.
func corruptLexical(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrCorrupt) || !errors.Is(err, retrieve.ErrLexical) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
