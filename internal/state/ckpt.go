package state

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// The checkpoint's bytes are internal/checkpoint's; here the state is
// handed to its encoder and built back from what its decoder reads.

// CheckpointFormat is the checkpoint's magic (internal/checkpoint).
const CheckpointFormat = checkpoint.Format

// OlderCheckpoints are the magics Open passes over (internal/checkpoint).
var OlderCheckpoints = checkpoint.Older

// CheckpointSum returns the checksum the manifest records of a checkpoint.
func CheckpointSum(raw []byte) (string, error) { return checkpoint.Sum(raw) }

// Checkpoint returns the sealed checkpoint of st, a state built from
// batches (every chunk in memory, with its line), for lexical index lex:
// its analyzers' identity, and the catalog of its partitions (so that Open
// opens none of them), which catalog returns; nil computes it from every
// chunk of st. The catalog is computed beside the rest: both only read st.
//
// The documents in key order are walked once, on every core, and handed to
// both: at a million chunks each walk took 1.3 s, and the catalog and the
// encoder each made its own.
func Checkpoint(st *State, lex *retrieve.Lexical, catalog func(docs []checkpoint.Doc) ([]byte, error)) (checkpoint.File, error) {
	return checkpointUnless(st, lex, catalog, encodeWith{})
}

// encodeWith is how a checkpoint is encoded besides its state: stop (nil:
// never) says when to give up with checkpoint.ErrStopped, and the body's
// sections are made in scratch (nil: on the heap). The zero value is a
// commit's own checkpoint; a checkpoint written ahead sets both.
type encodeWith struct {
	stop    func() bool
	scratch *checkpoint.Scratch
	// delta: docs are a delta level's (DeltaCheckpoint), its base's terms
	// seed.
	delta bool
	seed  []string
}

// checkpointUnless is Checkpoint encoded as with says: its stop is asked
// every stopEvery rows of the walk and every run of the encoder.
func checkpointUnless(st *State, lex *retrieve.Lexical, catalog func(docs []checkpoint.Doc) ([]byte, error), with encodeWith) (checkpoint.File, error) {
	stop := with.stop
	if catalog == nil {
		catalog = func(docs []checkpoint.Doc) ([]byte, error) { return catalogOf(lex, st, docs, stop) }
	}
	docs, err := st.docsInKeyOrder(true, st.walkParts(), stop)
	if err != nil {
		return nil, err
	}
	type result struct {
		raw []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := catalog(docs)
		done <- result{raw, err}
	}()
	waited := false
	f, err := encodeCheckpoint(st, AnalysisIdentity(lex), docs, func() ([]byte, error) {
		r := <-done
		waited = true
		return r.raw, r.err
	}, with)
	if !waited {
		<-done // an encoder that failed or stopped first: the catalog reads st's rows, which the caller may close next
	}
	return f, err
}

// The checkpoint's lag: how far an index's manifest may leave its
// checkpoint behind. Writing the whole state again at every commit cost a
// commit what the index holds, not what it adds (issue 30); instead a
// commit without purges may leave the checkpoint as it is, and Open reads
// the batch files after it and adds what they hold. The bounds are what
// that costs: Open reads a batch file for each generation after the
// checkpoint (a few tens of microseconds for one of facts alone at a
// million chunks, more for one of chunks, which brings an analysis file
// and documents to copy out of the rows), and State.Extend copies, at every
// commit, the maps of the chunks the state holds beside the checkpoint's
// rows (at a million chunks, a lag of an eighth of them made Open take
// 1.9 s and a commit of 100 chunks 0.3 to 0.5 s). The rule is a function
// of the log alone, so a replica writes its checkpoints at the
// generations the writer does.
const (
	// CheckpointLag bounds the generations after the checkpoint that add
	// chunks.
	CheckpointLag = 64
	// LagChunks bounds the chunks committed after the checkpoint.
	LagChunks = 4096
	// LagGenerations bounds the generations after the checkpoint, those
	// of facts alone included. Each checkpoint written costs a commit what
	// the index holds (3 to 4 s at a million chunks): bounded at 64
	// generations of any kind, a retraction a commit cost there 39 to 52
	// times bleve's delete of a document on average, a checkpoint's share
	// included; bounded at 1,024, 12 to 17 times, and Open after 1,024 of
	// them takes 63 to 76 ms more (docs/benchmarks.md, "Generations of
	// facts alone").
	LagGenerations = 1024
	// LagFacts bounds the facts committed after the checkpoint: Open adds
	// each again, looking up its chunk in the rows.
	LagFacts = 4096
)

// Plan is what a commit does with the checkpoint (PlanCheckpoint). The
// zero Plan leaves the manifest's as it is.
//
// Writing the checkpoint of the commit past the lag cost that commit what
// the index holds (1.9 to 3.7 s at a million chunks). Instead that commit
// (P) starts writing its state's checkpoint ahead, on a spare core, once it
// is committed (Start), and a later commit names it (Name): the first after
// P with more than half the lag's bounds committed after P. Until then the
// manifest keeps the checkpoint before P, so Open reads at most twice the
// lag's bounds of batch files (PlanCheckpoint's invariant).
// Which commit starts and which names is a function of the log alone: a
// replica, or a process that restarted between P and the commit that names
// it, names the same file at the same generation (it then writes it there,
// from the state it reads back as of P).
type Plan struct {
	// Write: the commit writes its own state's checkpoint, now.
	Write bool
	// Name, when not zero, is the earlier generation whose checkpoint the
	// commit names: written ahead since that generation committed, or now
	// when no one did.
	Name int64
	// Start: once committed, the state's checkpoint is written ahead,
	// for the commit that names it.
	Start bool
	// Delta: the checkpoint Name names is a delta level over the
	// manifest's checkpoint (DeltaAt).
	Delta bool
}

// String prints the plan: "keep", "write", "start", "name N" or "name
// delta N".
func (p Plan) String() string {
	switch {
	case p.Write:
		return "write"
	case p.Name != 0 && p.Delta:
		return fmt.Sprintf("name delta %d", p.Name)
	case p.Name != 0:
		return fmt.Sprintf("name %d", p.Name)
	case p.Start:
		return "start"
	}
	return "keep"
}

// lag is what generations after a checkpoint hold: what Open reads after
// it.
type lag struct {
	gens, chunks, facts, withChunks int64
}

func (l *lag) add(chunks, facts int) {
	l.gens++
	l.chunks += int64(chunks)
	l.facts += int64(facts)
	if chunks > 0 {
		l.withChunks++
	}
}

// over reports whether l passes the lag's bounds divided by div.
func (l lag) over(div int64) bool {
	return l.gens > LagGenerations/div || l.chunks > LagChunks/div || l.facts > LagFacts/div || l.withChunks > CheckpointLag/div
}

// PlanCheckpoint returns what generation gen of the index in d, a commit
// of chunks chunks, facts facts and no purge, does with the checkpoint
// (Plan), for lexical index lex. It writes one now when the manifest has
// none, or one Open would not read (another format or other analyzers, or
// gone), and when the commit alone holds more than half the lag's bounds
// (a bulk import): such a commit pays for its batch anyway, and left to a
// later one it would be read again at every Open until one named it.
//
// Invariant: the generations after the checkpoint the manifest names hold
// at most twice the lag's bounds (LagGenerations generations,
// CheckpointLag of them with chunks, LagChunks chunks, LagFacts facts): at
// most the bounds before the commit that starts the next, half of them in
// that commit (more, and it writes its own), and half after it before the
// commit that names it.
func PlanCheckpoint(d *storage.Dir, lex *retrieve.Lexical, gen int64, chunks, facts int) Plan {
	m := d.Manifest()
	c := m.LevelGeneration()
	var this lag
	this.add(chunks, facts)
	if c == 0 || gen <= c || gen-1 > int64(len(m.Batches)) || this.over(2) || !readable(d, m.Checkpoint, lex) || (m.Delta != "" && !readable(d, m.Delta, lex)) {
		return Plan{Write: true}
	}
	started, since := startedIn(m.Batches[c : gen-1])
	if started == 0 {
		since.add(chunks, facts)
		return Plan{Start: since.over(1)}
	}
	// The first generation past half the bounds after it names it.
	var after lag // after the generation that started
	for _, b := range m.Batches[started : gen-1] {
		after.add(b.Chunks, b.Facts)
	}
	after.add(chunks, facts)
	if !after.over(2) {
		return Plan{}
	}
	return Plan{Name: started, Delta: DeltaAt(m, started)} // after it at most the bounds, this commit at most half of them: none to start
}

// CheckpointFile returns the name of the file a plan that names one
// (Plan.Name) names: a delta level's, or a checkpoint's.
func CheckpointFile(p Plan) string {
	if p.Delta {
		return storage.DeltaName(p.Name)
	}
	return storage.CheckpointName(p.Name)
}

// DeltaShare bounds a delta level: a checkpoint started past the lag
// (Plan.Start) is written as a delta level over the manifest's checkpoint
// while the chunks committed after that checkpoint are at most a
// DeltaShare-th of the chunks it holds, and whole past that. Why: a
// checkpoint written whole costs what the index holds (330 MB and 3 to 4 s
// of CPU at a million chunks), once every LagChunks chunks; a delta costs
// what was committed since its checkpoint. With the share at k, a chunk
// costs about k rows of whole checkpoints and N/(2kL) rows of deltas (N
// chunks held, L = LagChunks): at a million chunks 8 + 15 rows where every
// checkpoint whole cost 244, and k = 8 is near the best there
// (sqrt(N/2L) = 11) and at a hundred thousand (3.5).
const DeltaShare = 8

// DeltaAt reports whether the checkpoint of generation gen (started past
// the lag: Plan.Start), of the index whose manifest m holds gen, is a
// delta level over m's checkpoint (DeltaShare). Like the plan, it is a
// function of the log: the writer, a replica and a process that opened
// the index later write the same file.
func DeltaAt(m *storage.Manifest, gen int64) bool {
	c := m.CheckpointGeneration()
	if c == 0 || gen <= c || gen > int64(len(m.Batches)) {
		return false
	}
	var held, since int64
	for _, b := range m.Batches[:c] {
		held += int64(b.Chunks)
	}
	for _, b := range m.Batches[c:gen] {
		since += int64(b.Chunks)
	}
	return since*DeltaShare <= held
}

// startedIn returns the generation of later, the batches after the
// checkpoint, that started the next one (the first past the lag's bounds:
// Plan.Start), or 0 and what later holds when none did.
func startedIn(later []storage.Batch) (int64, lag) {
	var since lag
	for _, b := range later {
		since.add(b.Chunks, b.Facts)
		if since.over(1) {
			return b.Generation, since
		}
	}
	return 0, since
}

// Window returns the generation whose checkpoint the next commits of the
// index in d are to name (Plan.Name): one that started a checkpoint,
// committed after the one the manifest names; 0 when there is none. Like
// the plan, it is a function of the log: a process that opened the index
// after that generation learns from it what to write ahead
// (AheadSlot.StartAt).
func Window(d *storage.Dir) int64 {
	m := d.Manifest()
	c := m.LevelGeneration()
	if c == 0 || c > int64(len(m.Batches)) {
		return 0
	}
	started, _ := startedIn(m.Batches[c:])
	return started
}

// readable reports whether Open would read checkpoint name of the index in
// d, made for lexical index lex.
func readable(d *storage.Dir, name string, lex *retrieve.Lexical) bool {
	f, err := d.OpenData(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return checkpoint.Readable(f, AnalysisIdentity(lex))
}

// NextCheckpoint returns what generation next.Gen of the index in d does
// with the checkpoint (PlanCheckpoint), and the checkpoint it writes now
// when it writes one (Plan.Write): next is parent plus the chunks add and
// nfacts facts (rewritten: the rewrite of a batch a purge redacted, which
// always writes one), for lexical index lex. A commit that does not write
// one keeps next's catalog current when adding gives it (one summary per
// partition: CatalogAfter); after facts the next checkpoint computes it
// from every chunk.
func NextCheckpoint(d *storage.Dir, lex *retrieve.Lexical, parent, next *State, add []*evidence.Chunk, nfacts int, rewritten bool) (checkpoint.File, Plan, error) {
	catalog := CatalogAfter(lex, parent, next, add, nfacts)
	plan := Plan{Write: true}
	if !rewritten {
		plan = PlanCheckpoint(d, lex, next.Gen, len(add), nfacts)
	}
	if plan.Write {
		f, err := Checkpoint(next, lex, catalog)
		return f, plan, err
	}
	if parent.Catalog != nil && nfacts == 0 {
		if _, err := catalog(nil); err != nil {
			return nil, plan, err
		}
	}
	return nil, plan, nil
}

// CheckpointAhead returns the sealed checkpoint of st, a committed state
// that queries may be reading and later commits extending (it only reads
// st), for lexical index lex: what a commit that starts one writes ahead
// (Plan.Start). Its bytes are those Checkpoint gives of the same state.
// Once stop (nil: never) says true, it gives up with checkpoint.ErrStopped.
// The body's sections are made in sc (nil: on the heap): the File lives
// until sc.Free.
func CheckpointAhead(st *State, lex *retrieve.Lexical, stop func() bool, sc *checkpoint.Scratch) (checkpoint.File, error) {
	known := st.Catalog // set before st was committed, never after
	return checkpointUnless(st, lex, func(docs []checkpoint.Doc) ([]byte, error) {
		if known != nil {
			return known, nil
		}
		return catalogOf(lex, st, docs, stop)
	}, encodeWith{stop: stop, scratch: sc})
}

// ReadBack returns the state read from the checkpoint the manifest of d
// names, which the commit of generation gen just named (written, or
// written ahead: then of an earlier generation, and the batch files after
// it are added), for lexical index lex: what the engine holds after such
// a commit. False when the manifest names no checkpoint (or d is nil: an
// index in memory), when emb is not nil (a dense leg's vectors are over
// every chunk in memory), or when it cannot be read; the caller keeps its
// state (which answers the same), and Check and the next Open say what is
// wrong. When ahead (which ReadBack closes or takes) holds the named
// checkpoint, read back by its writer (AheadSlot.TakeRead), the state is
// made from it and the batch files after it, as OpenState makes it from
// the file.
func ReadBack(d *storage.Dir, lex *retrieve.Lexical, emb retrieve.Embedder, gen int64, ahead Read) (*State, bool) {
	if d == nil || emb != nil || d.Manifest().Checkpoint == "" {
		ahead.Close()
		return nil, false
	}
	if ahead.st != nil {
		if st, ok := readBackAhead(d, lex, gen, ahead); ok {
			return st, true
		}
	}
	st, err := OpenState(d, lex, nil, nil)
	switch {
	case err != nil:
		return nil, false
	case st.Rows == nil || st.Gen != gen || st.Base != d.Manifest().LevelGeneration():
		if st.Rows != nil {
			st.Rows.Close()
		}
		return nil, false
	}
	return st, true
}

// readBackAhead is ReadBack from ahead, when it holds the checkpoint the
// manifest of d names; ahead is closed when false.
func readBackAhead(d *storage.Dir, lex *retrieve.Lexical, gen int64, ahead Read) (*State, bool) {
	st, m := ahead.st, d.Manifest()
	sum, level := m.CheckpointSum, m.CheckpointGeneration()
	if st.Rows.Over != nil { // a delta level, read back over the checkpoint the manifest still names
		sum, level = m.DeltaSum, m.DeltaGeneration()
		if st.Rows.gen != m.CheckpointGeneration() {
			sum = ""
		}
	}
	if sum != ahead.sum || level != st.Base || m.Generation != gen || st.Gen > gen {
		ahead.Close()
		return nil, false
	}
	// The batches after those its writer added (Read.catchUp).
	st.Rows.setFiles(m)
	err := st.addLater(d, m, m.Batches[st.Gen:gen], lex, nil)
	if err == nil {
		err = st.agrees(m)
	}
	if err != nil {
		ahead.Close()
		return nil, false
	}
	return st, true
}

// CatalogAfter returns what computes the lexical catalog of next, which is
// parent plus the chunks add and nfacts facts, and makes it next's
// (State.Catalog; next must be a state no one holds yet). Without facts and
// with parent's known, it adds add's documents to parent's (CatalogAdd,
// Catalog's bytes); else it goes over every chunk of next: over docs, its
// documents in key order when the caller has them (nil: it walks them).
func CatalogAfter(lex *retrieve.Lexical, parent, next *State, add []*evidence.Chunk, nfacts int) func(docs []checkpoint.Doc) ([]byte, error) {
	return func(all []checkpoint.Doc) (raw []byte, err error) {
		if parent.Catalog == nil || nfacts > 0 {
			raw, err = catalogOf(lex, next, all, nil)
		} else {
			docs := make([]retrieve.Doc, len(add))
			for i, c := range add {
				if docs[i], err = next.LexDoc(c.ID); err != nil {
					return nil, err
				}
			}
			raw, err = lex.CatalogAdd(parent.Catalog, docs)
		}
		next.Catalog = raw
		return raw, err
	}
}

// Level is a checkpoint a delta level is written over: its generation,
// and the terms its head names, which the delta numbers first
// (checkpoint.Input.Seed).
type Level struct {
	Gen   int64
	Terms []string
}

// Level returns the checkpoint st was read from, as a delta level over it
// needs it; false for a state not read from one.
func (st *State) Level() (Level, bool) {
	if st.Rows == nil {
		return Level{}, false
	}
	return Level{Gen: st.Rows.gen, Terms: st.Names[:st.Rows.terms]}, true
}

// DeltaCheckpoint returns the sealed delta level of st over checkpoint
// base (storage.Manifest.Delta), for lexical index lex: st's figures
// whole, and the rows of its document versions committed to after base's
// generation, each whole, their terms numbered after base's. Those are
// upperDocs when st was read from base; else st holds every chunk in
// memory (Check's), and they are its documents with a chunk committed
// after base: the same bytes either way. Once stop (nil: never) says
// true, it gives up with checkpoint.ErrStopped; the body's sections are
// made in sc (nil: on the heap).
func DeltaCheckpoint(st *State, lex *retrieve.Lexical, base Level, stop func() bool, sc *checkpoint.Scratch) (checkpoint.File, error) {
	var docs []checkpoint.Doc
	var err error
	switch {
	case st.Rows != nil && st.Rows.gen != base.Gen:
		return nil, fmt.Errorf("evpack: a delta level over generation %d of a state read from generation %d", base.Gen, st.Rows.gen)
	case st.Rows != nil:
		docs, err = st.upperDocs(true, stop)
	default:
		var all []checkpoint.Doc
		all, err = st.docsInKeyOrder(true, 1, stop)
		for _, d := range all {
			if slices.ContainsFunc(d.IDs, func(id string) bool { return st.DocPlace[id].Gen > base.Gen }) {
				docs = append(docs, d)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	known := st.Catalog // set before st was committed, never after
	catalog := func() ([]byte, error) {
		if known != nil {
			return known, nil
		}
		return catalogOf(lex, st, nil, stop)
	}
	return encodeCheckpoint(st, AnalysisIdentity(lex), docs, catalog, encodeWith{stop: stop, scratch: sc, delta: true, seed: base.Terms})
}

// EncodeCheckpoint returns the sealed checkpoint of st for analyzers
// identity and the lexical catalog catalog returns (see Checkpoint), which
// is asked for once the rest is encoded.
func EncodeCheckpoint(st *State, identity string, catalog func() ([]byte, error)) (checkpoint.File, error) {
	docs, err := st.docsInKeyOrder(true, st.walkParts(), nil)
	if err != nil {
		return nil, err
	}
	return encodeCheckpoint(st, identity, docs, catalog, encodeWith{})
}

// encodeCheckpoint is EncodeCheckpoint of st's documents in key order,
// docs (docsInKeyOrder with their reranker terms), encoded as with says.
func encodeCheckpoint(st *State, identity string, docs []checkpoint.Doc, catalog func() ([]byte, error), with encodeWith) (checkpoint.File, error) {
	stop := with.stop
	h := checkpoint.Head{Gen: st.Gen, Commits: st.Commits, Docs: st.Stats.Docs, Tokens: st.Stats.Tokens, Bounds: st.Bounds}
	for _, k := range evidence.SortedKeys(st.Entities) {
		names := make([]checkpoint.Entity, len(st.Entities[k]))
		for i, en := range st.Entities[k] {
			names[i] = checkpoint.Entity{Name: en.name, Gen: en.gen}
		}
		h.Entities = append(h.Entities, checkpoint.Entities{Key: k, Names: names})
	}
	h.Facts = make([]checkpoint.Fact, len(st.FactLog))
	for i, fa := range st.FactLog {
		h.Facts[i] = checkpoint.Fact{Gen: fa.Gen, F: fa.Fact}
	}
	h.Purges = make([]checkpoint.Purge, len(st.PurgeLog))
	for i, id := range st.PurgeLog {
		p := st.Purged[id]
		h.Purges[i] = checkpoint.Purge{ID: id, Gen: p.Gen, Reason: p.Reason, Hash: p.Hash, Redaction: p.Redaction}
	}
	for _, name := range st.TenantNames() {
		if stop != nil && stop() { // a tenant's terms sorted: tens of milliseconds at a million chunks
			return nil, checkpoint.ErrStopped
		}
		ts := st.Tenants[name]
		t := checkpoint.Tenant{Name: name, Docs: checkpoint.Series(ts.Docs), Tokens: checkpoint.Series(ts.Tokens),
			Facts: checkpoint.Series(ts.Facts), Purges: checkpoint.Series(ts.Purges), RRTerms: checkpoint.Series(ts.RerankTerms)}
		t.Digest = make([]checkpoint.Lane, len(ts.Digest))
		for i, lp := range ts.Digest {
			t.Digest[i] = checkpoint.Lane{Gen: lp.gen, L: lp.l}
		}
		t.LexDF, t.RRDF = termCounts(ts.LexDF), termCounts(ts.RerankDF)
		h.Tenants = append(h.Tenants, t)
	}
	placed := len(st.DocPlace)
	switch {
	case with.delta:
		placed = 0
		for _, d := range docs {
			placed += len(d.IDs)
		}
	case st.Rows != nil:
		placed = int(st.Stats.Docs) // every chunk is in a document, of the rows or of the maps
	}
	var bad atomic.Pointer[string] // the first malformed content hash (the encoder runs on every core)
	f, err := checkpoint.Encode(checkpoint.Input{Head: h, Identity: identity, Names: st.Names, Seed: with.seed, Docs: docs, Placed: placed,
		Catalog: catalog, Stop: stop, Scratch: with.scratch,
		Chunk: func(id string) checkpoint.Chunk {
			pl, c := st.DocPlace[id], st.Chunks[id]
			_, purged := st.Purged[id] // nil in memory, or none read back: the same
			out := checkpoint.Chunk{Gen: pl.Gen, Line: pl.Line, Tenant: c.Tenant, Purged: purged}
			out.AnchorDay, out.From, out.To = rowDays(c)
			if !digestOf(c.ContentHash, &out.Hash) {
				bad.CompareAndSwap(nil, &id)
			}
			return out
		}})
	if id := bad.Load(); id != nil && err == nil {
		err = fmt.Errorf("evpack: checkpoint: chunk %q: content hash %q", *id, st.Chunks[*id].ContentHash)
	}
	return f, err
}

// docsInKeyOrder returns st's document versions in key order, as its
// checkpoint holds them: those of its maps as they are (Input.Chunk gives
// their rows' fields), and, when st was read from a checkpoint, those of
// its rows (and of their delta level) that its maps do not hold, read from
// the rows with their fields. The rows are in key order already, so this
// is a merge, not a sort. Without nums, the rows' documents hold no
// reranker terms (the catalog reads none).
//
// The rows' documents are cut into parts (walkParts), each merged on a
// core of its own with the upper documents (upperDocs) whose keys fall in
// its span, and the parts joined in order: the result does not depend on
// how many.
func (st *State) docsInKeyOrder(nums bool, parts int, stop func() bool) ([]checkpoint.Doc, error) {
	upper, err := st.upperDocs(nums, stop)
	if err != nil || st.Rows == nil {
		return upper, err
	}
	t := st.Rows
	n := t.Docs()
	parts = max(1, min(parts, n))
	// Part p walks rows' documents [first[p], first[p+1]) and the upper
	// documents [from[p], from[p+1]): those before its first document's
	// key go to the part before (the first part takes every one before
	// its own).
	first, from := make([]int, parts+1), make([]int, parts+1)
	first[parts], from[parts] = n, len(upper)
	for p := 1; p < parts; p++ {
		first[p] = p * n / parts
		e, ok := t.Doc(first[p])
		if !ok {
			return nil, t.Err()
		}
		from[p], _ = slices.BinarySearchFunc(upper, e.Key, func(d checkpoint.Doc, k string) int { return strings.Compare(d.Key, k) })
	}
	out := make([][]checkpoint.Doc, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[p], errs[p] = st.walkDocs(t, nums, upper[from[p]:from[p+1]], first[p], first[p+1], stop)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(out...), nil
}

// upperDocs returns, in key order, the document versions of st that are
// not read from its checkpoint's rows: those of its maps and, when the
// rows have a delta level, the delta's that its maps do not hold. These
// are the document versions committed to after the rows' generation (each
// with every chunk, copied out whole): what a delta level over the rows
// holds (DeltaCheckpoint).
func (st *State) upperDocs(nums bool, stop func() bool) ([]checkpoint.Doc, error) {
	keys := evidence.SortedKeys(st.DocOrder)
	mem := make([]checkpoint.Doc, len(keys))
	for i, k := range keys {
		if stop != nil && i%stopEvery == 0 && stop() {
			return nil, checkpoint.ErrStopped
		}
		mem[i] = st.memDoc(k)
	}
	if st.Rows == nil || st.Rows.Over == nil {
		return mem, nil
	}
	over := st.Rows.Over
	return st.walkDocs(over, nums, mem, 0, over.Docs(), stop) // a document the maps copied out of the delta is the maps'
}

// minWalkPart is the fewest rows' documents walkParts gives a part: below
// it, a goroutine costs more than it saves.
const minWalkPart = 4096

// stopEvery is how many rows the walk of a checkpoint written ahead reads
// between questions to its stop, which gives way to the commits in flight
// (Ahead.pause): about a millisecond's worth at a million chunks. At 16,384
// rows a commit that came just after a question shared the cores with the
// walk for up to 20 ms.
const stopEvery = 2048

// walkParts is how many parts docsInKeyOrder cuts st's rows into: one a
// core, of at least minWalkPart documents.
func (st *State) walkParts() int {
	if st.Rows == nil {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), st.Rows.Docs()/minWalkPart))
}

// memDoc is document k of the maps, as a checkpoint holds it.
func (st *State) memDoc(k string) checkpoint.Doc {
	return checkpoint.Doc{Key: k, IDs: st.DocOrder[k].IDs, Nums: st.DocOrder[k].Nums}
}

// walkDocs merges the documents [lo, hi) of rows t with upper, documents
// of a newer level in key order: docsInKeyOrder's part (t the
// checkpoint's rows, upper upperDocs), or upperDocs' own (t the delta's,
// upper the maps'). A document of t that upper holds too is upper's (a
// later version of its chunks).
func (st *State) walkDocs(t *RowTable, nums bool, upper []checkpoint.Doc, lo, hi int, stop func() bool) ([]checkpoint.Doc, error) {
	docs := make([]checkpoint.Doc, 0, hi-lo+len(upper))
	j := 0
	unasked := 0 // rows walked since stop was last asked: a document may hold thousands
	for k := lo; k < hi; k++ {
		if stop != nil && (k == lo || unasked >= stopEvery) {
			if stop() {
				return nil, checkpoint.ErrStopped
			}
			unasked = 0
		}
		e, ok := t.Doc(k)
		if !ok {
			return nil, t.Err()
		}
		unasked += e.Len
		for ; j < len(upper) && upper[j].Key < e.Key; j++ {
			docs = append(docs, upper[j])
		}
		if j < len(upper) && upper[j].Key == e.Key { // copied out: upper's list holds its rows' chunks
			docs = append(docs, upper[j])
			j++
			continue
		}
		d, err := st.rowsDoc(t, e, nums)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return append(docs, upper[j:]...), nil
}

// rowsDoc returns document e of rows t, as a checkpoint holds it: its
// chunks' IDs, their fields and, with nums, their reranker terms.
func (st *State) rowsDoc(t *RowTable, e checkpoint.DocEntry, nums bool) (checkpoint.Doc, error) {
	d := checkpoint.Doc{Key: e.Key, IDs: make([]string, e.Len), Nums: make([][]uint32, e.Len), Chunks: make([]checkpoint.Chunk, e.Len)}
	rows := make([]checkpoint.Row, e.Len)
	size := 0
	for i := range rows {
		var ok bool
		if rows[i], ok = t.Row(e.First + i); !ok {
			return d, t.Err()
		}
		size += int(rows[i].NumsLen)
	}
	var arena []uint32 // the document's terms in one array, not one per chunk
	if nums {
		arena = make([]uint32, 0, size)
	}
	for i, w := range rows {
		var ok bool
		d.IDs[i], ok = t.ID(w)
		if ok && nums {
			from := len(arena)
			arena, ok = t.AppendNums(arena, w)
			d.Nums[i] = arena[from:len(arena):len(arena)]
		}
		if !ok {
			return d, t.Err()
		}
		_, purged := st.Purged[d.IDs[i]]
		d.Chunks[i] = checkpoint.Chunk{Gen: int64(w.Gen), Line: w.Line, Hash: w.Hash, Tenant: t.Tenant(w), Purged: purged,
			AnchorDay: w.AnchorDay, From: w.From, To: w.To}
	}
	return d, nil
}

// rowDays returns the days of chunk c a checkpoint's row holds: its anchor
// day and validity start and end, checkpoint.NoDay for none.
func rowDays(c *evidence.Chunk) (anchor, from, to int32) {
	day := func(zero bool, d int64) int32 {
		if zero {
			return checkpoint.NoDay
		}
		return int32(d)
	}
	return day(c.Anchor.At.IsZero(), c.Anchor.Day().Days()), day(c.Valid.From.IsZero(), c.Valid.From.Days()), day(c.Valid.To.IsZero(), c.Valid.To.Days())
}

// chunkOfDays sets c to a chunk holding only what a row says of chunk id
// of tenant: its tenant and days (rowDays), which is all the lexical
// catalog reads of it (retrieve.Lexical.Catalog), and returns it.
func chunkOfDays(c *evidence.Chunk, id, tenant string, anchor, from, to int32) *evidence.Chunk {
	*c = evidence.Chunk{ID: id, Tenant: tenant}
	if anchor != checkpoint.NoDay {
		c.Anchor.At = asof.DateFromDays(int64(anchor)).Start()
	}
	if from != checkpoint.NoDay {
		c.Valid.From = asof.DateFromDays(int64(from))
	}
	if to != checkpoint.NoDay {
		c.Valid.To = asof.DateFromDays(int64(to))
	}
	return c
}

// digestOf decodes content hash h (evidence.HashPrefix and 64 hex digits)
// into sum, false when it is not one.
func digestOf(h string, sum *[32]byte) bool {
	hexSum, ok := strings.CutPrefix(h, evidence.HashPrefix)
	if !ok || len(hexSum) != 64 {
		return false
	}
	var buf [64]byte // decoded from an array: no allocation per chunk
	copy(buf[:], hexSum)
	_, err := hex.Decode(sum[:], buf[:])
	return err == nil
}

// termCounts returns df by term.
func termCounts(df map[string]Series) []checkpoint.TermCounts {
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
func decodeCheckpoint(name string, f *os.File, sum, identity string, d *storage.Dir, files []string) (*State, bool, error) {
	h, t, ok, err := checkpoint.Decode(name, f, sum, identity, len(files))
	if err != nil || !ok {
		return nil, ok, err
	}
	st := stateOfHead(h)
	st.Catalog = t.Catalog()
	st.Rows = newRowTable(t, d, files, h)
	st.Base = st.Gen
	return st, true, nil
}

// newRowTable returns the row table over t, the rows of the checkpoint
// whose head is h, whose chunks are read from batch files files of d.
func newRowTable(t *checkpoint.Table, d *storage.Dir, files []string, h *checkpoint.Head) *RowTable {
	return &RowTable{Table: t, dir: d, files: files, gen: h.Gen, terms: len(h.Terms), docs: rowCache{max: DocRowsCache},
		Checked: make([]atomic.Pointer[checkedChunk], min(t.Len(), checkedChunks)+1)}
}

// stateOfHead returns the state whose figures checkpoint head h holds,
// without rows.
func stateOfHead(h *checkpoint.Head) *State {
	st := NewState()
	st.Gen, st.Commits, st.Bounds = h.Gen, h.Commits, h.Bounds
	st.Stats.Docs, st.Stats.Tokens = h.Docs, h.Tokens
	st.Names = h.Terms
	st.Intern = make(map[string]uint32, len(h.Terms)) // sized: growing it step by step moved every entry again
	for i, n := range h.Terms {
		st.Intern[n] = uint32(i)
	}
	for _, e := range h.Entities {
		list := make([]entityName, len(e.Names))
		for i, en := range e.Names {
			list[i] = entityName{name: en.Name, gen: en.Gen}
		}
		st.Entities[e.Key] = list
	}
	if len(h.Facts) > 0 { // none: nil, as a state built from the batch files has it
		st.FactLog = make([]factAt, len(h.Facts))
	}
	for i, fa := range h.Facts {
		st.FactLog[i] = factAt{Gen: fa.Gen, Fact: fa.F}
		st.Facts[fa.F.ChunkID] = append(st.Facts[fa.F.ChunkID], st.FactLog[i])
	}
	if len(h.Purges) > 0 {
		st.PurgeLog = make([]string, len(h.Purges))
	}
	for i, p := range h.Purges {
		st.PurgeLog[i] = p.ID
		st.Purged[p.ID] = PurgeAt{Gen: p.Gen, Reason: p.Reason, Hash: p.Hash, Redaction: p.Redaction}
	}
	for _, ht := range h.Tenants {
		ts := &tenantStats{LexDF: make(map[string]Series, len(ht.LexDF)), RerankDF: make(map[string]Series, len(ht.RRDF))}
		ts.Docs, ts.Tokens, ts.Facts, ts.Purges, ts.RerankTerms = Series(ht.Docs), Series(ht.Tokens), Series(ht.Facts), Series(ht.Purges), Series(ht.RRTerms)
		ts.Digest = make([]lanePoint, len(ht.Digest))
		for i, l := range ht.Digest {
			ts.Digest[i] = lanePoint{gen: l.Gen, l: l.L}
		}
		for _, c := range ht.LexDF {
			ts.LexDF[c.Term] = Series(c.Counts)
		}
		for _, c := range ht.RRDF {
			ts.RerankDF[c.Term] = Series(c.Counts)
		}
		st.Tenants[ht.Name] = ts
	}
	return st
}

// LexDocs yields the lexical document of each chunk of st, in row order,
// with whether the lexical index holds it: a purge deleted the documents
// of the chunks it took. A chunk of a checkpoint's rows is read from its
// batch file; when one cannot be, the sequence stops and *failed says why.
func (st *State) LexDocs(failed *error) iter.Seq2[retrieve.Doc, bool] {
	return func(yield func(retrieve.Doc, bool) bool) {
		docs, err := st.docsInKeyOrder(false, st.walkParts(), nil)
		if err != nil {
			*failed = err
			return
		}
		for _, doc := range docs {
			for _, id := range doc.IDs {
				d, err := st.LexDoc(id)
				if err != nil {
					*failed = err
					return
				}
				if _, purged := st.Purged[id]; !yield(d, !purged) {
					return
				}
			}
		}
	}
}

// catalogOf returns lex's catalog of every chunk of st, whose documents in
// key order are docs (nil: walked here). The chunks of a checkpoint's rows
// are read as the rows give them (chunkOfDays), not from their batch files:
// at a million chunks, reading every line made the first checkpoint after
// a fact take 22 s. Once stop (nil: never), asked every stopEvery chunks,
// says true, it gives up with checkpoint.ErrStopped.
func catalogOf(lex *retrieve.Lexical, st *State, docs []checkpoint.Doc, stop func() bool) ([]byte, error) {
	if docs == nil {
		var err error
		if docs, err = st.docsInKeyOrder(false, st.walkParts(), stop); err != nil {
			return nil, err
		}
	}
	var failed error
	raw, err := lex.Catalog(st.catalogDocs(docs, &failed, stop))
	if failed != nil {
		return nil, failed
	}
	return raw, err
}

// catalogDocs yields the lexical document of each chunk of docs (st's, in
// key order) for the lexical catalog, with whether the lexical index holds
// it: a chunk in memory as LexDoc gives it, one of the rows with what its
// row says of it (chunkOfDays) and its facts.
func (st *State) catalogDocs(docs []checkpoint.Doc, failed *error, stop func() bool) iter.Seq2[retrieve.Doc, bool] {
	return func(yield func(retrieve.Doc, bool) bool) {
		var err error
		var scratch evidence.Chunk // Catalog keeps nothing of a document it is handed
		unasked := 0
		for _, doc := range docs {
			if unasked += len(doc.IDs); stop != nil && unasked >= stopEvery {
				if stop() {
					*failed = checkpoint.ErrStopped
					return
				}
				unasked = 0
			}
			for i, id := range doc.IDs {
				var d retrieve.Doc
				if doc.Chunks == nil { // the maps'
					if d, err = st.LexDoc(id); err != nil {
						*failed = err
						return
					}
				} else {
					c := doc.Chunks[i]
					d = st.lexDocOf(chunkOfDays(&scratch, id, c.Tenant, c.AnchorDay, c.From, c.To), c.Gen)
				}
				if _, purged := st.Purged[id]; !yield(d, !purged) {
					return
				}
			}
		}
	}
}

// RowTable is the chunks' half of a state read from a checkpoint: the
// checkpoint's rows (checkpoint.Table), and the batch files its chunks are
// read from. It is read-only once made (but for its caches and checks,
// which are safe for concurrent use), so any number of queries read it at
// once. close releases both the files and the checkpoint's mapping.
type RowTable struct {
	*checkpoint.Table
	// Over, when set, is the delta level over t (storage.Manifest.Delta):
	// the rows of a later generation's checkpoint that hold only the
	// document versions committed to after t's generation, each whole. A
	// chunk or document Over holds is read from it; t's copy of it, if
	// any, is of an earlier version of its document and is never read.
	Over   *RowTable
	gen    int64 // the generation of t's checkpoint
	terms  int   // how many terms its head names: the state's first terms
	mu     sync.Mutex
	open   map[string]*os.File // batch files read so far, kept open until close
	closed bool
	docs   rowCache // documents' rows read lately, by their first row
	// checked holds chunks read and checked lately (chunkUpTo), in the
	// slot of their row modulo its length: an edit to a batch file after
	// a request read a chunk is found by Check and Verify, which read the
	// files, and by the next process.
	Checked []atomic.Pointer[checkedChunk]
	dir     *storage.Dir
	files   []string // batch file of generation g at files[g-1]
	// lines holds buffers (*[]byte) for the chunk lines read: decoding
	// copies out what the chunk keeps, so a buffer goes back once the
	// line is decoded (a request reads its cited chunks' lines: into new
	// buffers, 5% of the bytes it allocated at 100k).
	lines sync.Pool
}

// setFiles makes t name the batch files of every generation m holds: the
// rows name those up to the checkpoint's, and a state goes on with the
// batches after it. Only before the state is anyone's but its maker's.
func (t *RowTable) setFiles(m *storage.Manifest) {
	t.files = batchFiles(m.Batches)
	if t.Over != nil {
		t.Over.files = t.files
	}
}

// find returns the table that answers for chunk id, t.Over when it holds
// id, else t, and id's row there (Table.Find). After a failed check of
// Over it returns Over, which answers false and fails the query (Err),
// never t's older copy.
func (t *RowTable) find(id string) (*RowTable, int, checkpoint.Row, bool) {
	if t.Over != nil {
		if i, w, ok := t.Over.Find(id); ok || t.Over.Table.Err() != nil {
			return t.Over, i, w, ok
		}
	}
	i, w, ok := t.Find(id)
	return t, i, w, ok
}

// levelOfDoc is find's table for stored document key.
func (t *RowTable) levelOfDoc(key string) *RowTable {
	if t.Over == nil {
		return t
	}
	if _, ok := t.Over.FindDoc(key); ok || t.Over.Table.Err() != nil {
		return t.Over
	}
	return t
}

// Err returns the error a read of t or of its delta level met: a block
// that failed its check, or a read after Close.
func (t *RowTable) Err() error {
	if t.Over != nil {
		if err := t.Over.Table.Err(); err != nil {
			return err
		}
	}
	return t.Table.Err()
}

// CheckAll checks every block of t's checkpoint and of its delta level
// that no read checked yet (checkpoint.Table.CheckAll); nil for a state
// with every chunk in memory.
func (t *RowTable) CheckAll(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.Over.CheckAll(ctx); err != nil { // nil: none
		return err
	}
	return t.Table.CheckAll(ctx)
}

// CheckCurrent is CheckAll of t, the rows of a state a caller took, or,
// when a commit replaced that state meanwhile, of the rows current
// returns (the committed state's now): the replaced rows were closed, and
// a query that read them after (to start again on the new state) marked
// them failed ("the state that read it is gone"), which is no damage.
func (t *RowTable) CheckCurrent(ctx context.Context, current func() *RowTable) error {
	for {
		err := t.CheckAll(ctx)
		cur := current()
		if err == nil || cur == t || ctx.Err() != nil {
			return err
		}
		t = cur
	}
}

// Catalog returns the lexical catalog of the newest level: the delta's
// when t has one.
func (t *RowTable) Catalog() []byte {
	if t.Over != nil {
		return t.Over.Table.Catalog()
	}
	return t.Table.Catalog()
}

// batchFiles is the file of each of batches, in their order: a row
// table's files (RowTable.files).
func batchFiles(batches []storage.Batch) []string {
	files := make([]string, len(batches))
	for i, b := range batches {
		files[i] = b.File
	}
	return files
}
