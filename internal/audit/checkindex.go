package audit

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// Index is what CheckState reads besides the state.
type Index struct {
	Dir   string       // the index directory, "" for an index in memory
	Store *storage.Dir // nil for an index in memory
	Lex   *retrieve.Lexical
	// Checkpoint returns the checkpoint st gives (what a commit at st's
	// generation writes).
	Checkpoint func(st *state.State) (checkpoint.File, error)
	// SkipLexical leaves the lexical documents unchecked: they hold an
	// unfinished commit's documents until an Open rolls them back.
	SkipLexical bool
}

// CheckState compares st with a recount from its chunks (every corpus
// figure, generation by generation), with every file of ix the manifest
// names, and with every lexical document, adding each problem to rep. It
// returns an error only when the check cannot run.
func CheckState(ctx context.Context, ix Index, st *state.State, rep *CheckReport) error {
	bad := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
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
		an := state.Analyze(ix.Lex, nil, nil, c.Text)
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
	CheckTenants(st, fresh, bad)
	if st.Dense != nil && !slices.Equal(st.Dense.IDs(), evidence.SortedKeys(st.Chunks)) {
		bad("dense index covers %d chunks, store holds %d", st.Dense.Len(), len(st.Chunks))
	}
	if st.Graph != nil {
		if err := st.Graph.Check(); err != nil {
			bad("hnsw graph: %v", err)
		}
	}

	if ix.Store != nil {
		checkFiles(ix, st, analyses, rep, bad)
		checkCheckpoint(ix, st, bad)
	}
	if ix.SkipLexical {
		return nil
	}
	// bleve's files first, whole, against the checksums zapx wrote in them.
	if err := ix.Lex.CheckSegments(ctx); err != nil {
		return CorruptLexical(ctx, err)
	}
	seen := 0
	err := ix.Lex.Docs(ctx, func(d retrieve.StoredDoc) error {
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
			if err := ix.Lex.CheckDoc(d, want); err != nil {
				bad("lexical document %q: %v", d.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return CorruptLexical(ctx, err)
	}
	if seen != len(st.Chunks)-len(st.Purged) {
		bad("lexical index holds %d documents, store %d chunks (%d of them purged)", seen, len(st.Chunks), len(st.Purged))
	}
	return nil
}

// checkFiles re-reads every file the manifest names and compares the batch
// files' chunks with st's.
func checkFiles(ix Index, st *state.State, analyses map[string]state.Analyzed, rep *CheckReport, bad func(string, ...any)) {
	m := ix.Store.Manifest()
	if m.Generation != st.Gen {
		bad("manifest at generation %d, engine at %d", m.Generation, st.Gen)
	}
	inBatches, factsInBatches, purgesInBatches := 0, 0, 0
	for _, b := range m.Batches {
		cont, err := ix.Store.ReadBatch(b)
		if err != nil {
			bad("%v", err)
			continue
		}
		chunks := cont.Chunks
		rep.Files = append(rep.Files, CheckedFile{Name: storage.ChunksDir + "/" + b.File, Sum: b.Sum,
			Chunks: len(chunks), Facts: len(cont.Facts), Purges: len(cont.Purges)})
		if b.Analysis != "" {
			checkAnalysis(ix, b, chunks, analyses, rep, bad)
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
	for i, v := range m.Volumes {
		raw, err := ix.Store.ReadFile(v.File, v.Sum)
		if err != nil {
			bad("%v", err)
			continue
		}
		// The volume as Open read it is the manifest in memory: written
		// again, it gives the stored bytes, or one of them changed since.
		if want, err := storage.EncodeVolume(m.VolumeEntries(i)); err != nil || !bytes.Equal(raw, want) {
			bad("%s: does not list the manifest's batch entries up to generation %d", v.File, v.Last)
			continue
		}
		rep.Files = append(rep.Files, CheckedFile{Name: v.File, Sum: v.Sum})
	}
	if d := m.Dense; d != nil {
		for _, f := range [][2]string{{d.File, d.Sum}, {d.Graph, d.GraphSum}} {
			if f[0] == "" {
				continue
			}
			if _, err := ix.Store.ReadFile(f[0], f[1]); err != nil {
				bad("%v", err)
			} else {
				rep.Files = append(rep.Files, CheckedFile{Name: f[0], Sum: f[1]})
			}
		}
	}
	strays, err := ix.Store.Strays()
	if err != nil {
		bad("list %s: %v", ix.Dir, err)
	}
	rep.Strays = strays
	for _, s := range strays {
		// A temp file of an atomic write, or a file in chunks/ the manifest
		// does not name (a batch or analysis file a commit made obsolete,
		// come back after a power cut), may hold chunk text: a purged
		// chunk's. Open removes the temp files; one that is left, and any
		// such file, is a problem, not a harmless stray.
		dir, base := path.Split(s)
		if slices.Contains(ix.Store.PendingFiles(), s) {
			continue // an unfinished commit's, which its record removes
		}
		if dir == "" && storage.IsRebuildLeftover(base) {
			bad("%s: a lexical index an interrupted rebuild-lexical left, which may hold purged chunks' terms; run rebuild-lexical again, or remove it", filepath.Join(ix.Dir, s))
			continue
		}
		if fi, err := os.Lstat(filepath.Join(ix.Dir, s)); err == nil && fi.Mode().IsRegular() &&
			(fsutil.IsTemp(base) || dir == storage.ChunksDir+"/") {
			bad("%s: a file the manifest does not name, which may hold chunk text (an interrupted write's or an obsolete batch's); remove it", filepath.Join(ix.Dir, s))
		}
	}
}

// checkAnalysis compares batch b's analysis file with the fresh analysis
// of each of its chunks (analyses, by chunk ID: the recount's, of the text
// held in memory, which checkFiles compares with the stored text). A file
// made by other analyzers is left alone: Open does not use it.
func checkAnalysis(ix Index, b storage.Batch, chunks []*evidence.Chunk, analyses map[string]state.Analyzed, rep *CheckReport, bad func(string, ...any)) {
	a, _, err := ix.Store.ReadAnalysis(b)
	if err != nil {
		bad("%v", err)
		return
	}
	rep.Files = append(rep.Files, CheckedFile{Name: storage.ChunksDir + "/" + b.Analysis, Sum: b.AnalysisSum, Chunks: len(a.Chunks)})
	if a.Identity != state.AnalysisIdentity(ix.Lex) {
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

// checkCheckpoint reports, through bad, a checkpoint or a delta level over
// it (storage.Manifest.Delta) that differs from the one the batch files
// give at its generation (checkLevel).
func checkCheckpoint(ix Index, st *state.State, bad func(string, ...any)) {
	m := ix.Store.Manifest()
	if m.Checkpoint == "" || m.Generation != st.Gen {
		return
	}
	if m.Delta != "" {
		checkLevel(ix, st, level{name: m.Delta, sum: m.DeltaSum, gen: m.DeltaGeneration(), what: "delta level",
			build: func(st *state.State) (checkpoint.File, error) {
				// The checkpoint's terms, which the delta numbers first, from
				// its head (its bytes are compared below).
				base, err := state.LevelOf(ix.Store, ix.Lex)
				if err != nil {
					return nil, fmt.Errorf("its checkpoint: %w", err)
				}
				return state.DeltaCheckpoint(st, ix.Lex, base, nil, nil)
			}}, bad)
	}
	checkLevel(ix, st, level{name: m.Checkpoint, sum: m.CheckpointSum, gen: m.CheckpointGeneration(), what: "checkpoint", build: ix.Checkpoint}, bad)
}

// level is a checkpoint file the manifest names (a checkpoint or a delta
// level over it) for checkLevel: its name, checksum and generation, what
// it is, and what builds it from the state of that generation.
type level struct {
	name, sum, what string
	gen             int64
	build           func(st *state.State) (checkpoint.File, error)
}

// checkLevel reports, through bad, a checkpoint file l that differs from
// the one l.build makes of the state the batch files give at its
// generation: st's (st holds every chunk), or, for one later generations
// followed (state.PlanCheckpoint), the state the batch files up to it
// give.
func checkLevel(ix Index, st *state.State, l level, bad func(string, ...any)) {
	if l.gen < st.Gen {
		at, err := state.LoadStateAt(ix.Store, ix.Lex, l.gen)
		if err != nil {
			bad("%s: %v", l.name, err)
			return
		}
		st = at
	}
	f, err := ix.Store.OpenData(l.name)
	if err != nil {
		bad("%v", err)
		return
	}
	defer f.Close()
	raw, err := io.ReadAll(f)
	if err != nil {
		bad("%s: %v", l.name, err)
		return
	}
	if checkpoint.IsOlder(raw) {
		return // an older format's, which Open does not read: the next commit replaces it
	}
	want, err := l.build(st)
	if err != nil {
		bad("%s: %v", l.name, err)
		return
	}
	sum, _ := state.CheckpointSum(want.Head())
	if !bytes.Equal(raw, want.Bytes()) || sum != l.sum {
		bad("%s differs from the %s the batch files give", l.name, l.what)
	}
}
