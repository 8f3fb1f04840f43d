package state

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// A state is built one of two ways. From the batch files (loadState, and
// every commit's extend of such a state), it holds every chunk in memory:
// what a purge, Check and Diff need. From a checkpoint (decodeCheckpoint),
// it holds the figures and a row table, and reads a chunk only when a query
// needs it: what Open makes when the index has one, so that Open does not
// read every chunk. A state read from a checkpoint takes commits of chunks
// as it is (extend), its maps then holding what those commits added beside
// the rows: the chunks committed after the checkpoint, and every chunk of a
// stored document one of them joined (copied out of the rows: copyOut).
// The query path reads chunks through one interface, chunkReader, with an
// implementation for each (MemChunks, and Layered over a RowTable), which
// answer the same either way; the state's methods below hand each call to
// the one its state has (state.reader).

// chunkReader is how a query reads a state's chunks. Every method answers
// for committed chunks only; a reader over a checkpoint answers false after
// a failed check, and the query fails (rowTable.Err).
type chunkReader interface {
	// CommittedGen returns the generation that committed chunk id.
	CommittedGen(id string) (int64, bool)
	// TenantOf returns the tenant of chunk id.
	TenantOf(id string) (string, bool)
	// ReadUpTo returns chunk id when generation gen holds it (ok false, and
	// nothing read, when it does not), through the cache of checked chunks
	// when cached (see state.chunkUpTo).
	ReadUpTo(id string, gen int64, cached bool) (c *evidence.Chunk, ok bool, err error)
	// DocOf returns chunk id's document and the generation that committed
	// it (see state.docOf).
	DocOf(id string) (docView, int64, bool)
}

// Reader returns the chunkReader of s: its maps, then its row table when
// it was read from a checkpoint (Layered); else its maps alone.
func (s *State) Reader() chunkReader {
	if s.Rows != nil {
		return Layered{s}
	}
	return MemChunks{s}
}

// Layered reads a state read from a checkpoint: the chunks its maps hold
// (committed since, or copied out with a document they joined) first, then
// the checkpoint's rows.
//
// Invariant: a document is either wholly in the maps or wholly in the rows
// (copyOut moves every chunk of it), so a document view never mixes them.
type Layered struct{ s *State }

// CommittedGen implements chunkReader.
func (l Layered) CommittedGen(id string) (int64, bool) {
	if g, ok := l.s.Committed[id]; ok {
		return g, true
	}
	return l.s.Rows.CommittedGen(id)
}

// TenantOf implements chunkReader.
func (l Layered) TenantOf(id string) (string, bool) {
	if c, ok := l.s.Chunks[id]; ok {
		return c.Tenant, true
	}
	return l.s.Rows.TenantOf(id)
}

// ReadUpTo implements chunkReader.
func (l Layered) ReadUpTo(id string, gen int64, cached bool) (*evidence.Chunk, bool, error) {
	if _, ok := l.s.Committed[id]; ok {
		return MemChunks(l).ReadUpTo(id, gen, cached)
	}
	return l.s.Rows.ReadUpTo(id, gen, cached)
}

// DocOf implements chunkReader.
func (l Layered) DocOf(id string) (docView, int64, bool) {
	if _, ok := l.s.DocPlace[id]; ok {
		return MemChunks(l).DocOf(id)
	}
	return l.s.Rows.DocOf(id)
}

// fromRows reports whether a read of chunk id goes to the checkpoint's
// rows, which check every chunk they read against its content hash.
func (s *State) fromRows(id string) bool {
	if s.Rows == nil {
		return false
	}
	_, mem := s.Committed[id]
	return !mem
}

// copyOut puts every chunk of stored document key, which the rows hold and
// s's maps do not, into s's maps (which s must own: a state being built),
// each read from its batch file and checked: a chunk committed now joins
// it. A document the rows do not hold is left alone. An error is
// storage.ErrCorrupt naming the checkpoint or the batch file.
func (s *State) copyOut(key string) error {
	t := s.Rows.levelOfDoc(key)
	e, ok := t.FindDoc(key)
	if !ok {
		return t.Err()
	}
	list := &DocList{IDs: make([]string, e.Len), Nums: make([][]uint32, e.Len)}
	places := make([]docPlace, e.Len)
	chunks := make([]*evidence.Chunk, e.Len)
	for k := range e.Len {
		w, ok := t.Row(e.First + k)
		if ok {
			list.IDs[k], ok = t.ID(w)
		}
		if ok {
			list.Nums[k], ok = t.Nums(w)
		}
		if !ok {
			return t.Err()
		}
		c, err := t.read(list.IDs[k], w)
		if err != nil {
			return err
		}
		p := placeOf(c, int64(w.Gen), w.Line)
		if p.Key != key {
			return fmt.Errorf("%w: %s: row %d (chunk %q) is of document %q, in the rows of %q", storage.ErrCorrupt, t.Name(), e.First+k, c.ID, p.Key, key)
		}
		p.Pos, p.List = k, list
		places[k], chunks[k] = p, c
	}
	for k, id := range list.IDs {
		s.Chunks[id], s.Committed[id], s.DocPlace[id] = chunks[k], places[k].Gen, places[k]
	}
	s.DocOrder[key] = list
	return nil
}

// MemChunks reads the chunks of a state built from batches: every chunk
// in memory, in its maps (chunks, committed, docPlace, docOrder).
type MemChunks struct{ s *State }

// CommittedGen implements chunkReader.
func (m MemChunks) CommittedGen(id string) (int64, bool) {
	g, ok := m.s.Committed[id]
	return g, ok
}

// TenantOf implements chunkReader.
func (m MemChunks) TenantOf(id string) (string, bool) {
	c, ok := m.s.Chunks[id]
	if !ok {
		return "", false
	}
	return c.Tenant, true
}

// ReadUpTo implements chunkReader.
func (m MemChunks) ReadUpTo(id string, gen int64, _ bool) (*evidence.Chunk, bool, error) {
	if g, ok := m.s.Committed[id]; !ok || g > gen {
		return nil, false, nil
	}
	return m.s.Chunks[id], true, nil
}

// DocOf implements chunkReader.
func (m MemChunks) DocOf(id string) (docView, int64, bool) {
	s := m.s
	p, ok := s.DocPlace[id]
	if !ok {
		return docView{}, 0, false
	}
	l := p.List
	return docView{IDs: l.IDs, Nums: l.Nums, Pos: p.Pos, Gens: func(k int) int64 { return s.DocPlace[l.IDs[k]].Gen }}, p.Gen, true
}

// Stored returns committed chunk id (ok false when there is none): from
// memory, or read from its batch file and checked against the content hash
// the checkpoint's row holds. An error is storage.ErrCorrupt naming the
// file and the chunk.
func (s *State) Stored(id string) (c *evidence.Chunk, ok bool, err error) {
	return s.Reader().ReadUpTo(id, math.MaxInt64, true)
}

// SetLines records where chunks lie in their batch file (lines[i] is
// chunks[i]'s). s must own its docPlace: a state being built.
func (s *State) SetLines(chunks []*evidence.Chunk, lines []storage.Span) {
	for i, c := range chunks {
		p := s.DocPlace[c.ID]
		p.Line = lines[i]
		s.DocPlace[c.ID] = p
	}
}

// CommittedGen returns the generation that committed chunk id. (From a
// row table, a failed check answers false, and fails the query: see
// RowTable.err.)
func (s *State) committedGen(id string) (int64, bool) { return s.Reader().CommittedGen(id) }

// CommittedGen implements chunkReader.
func (t *RowTable) CommittedGen(id string) (int64, bool) {
	_, _, w, ok := t.find(id)
	return int64(w.Gen), ok
}

// TenantOf returns the tenant of committed chunk id.
func (s *State) TenantOf(id string) (string, bool) { return s.Reader().TenantOf(id) }

// TenantOf implements chunkReader.
func (t *RowTable) TenantOf(id string) (string, bool) {
	t, _, w, ok := t.find(id)
	if !ok {
		return "", false
	}
	return t.Tenant(w), true
}

// ErrMismatch is a stored chunk line that reads, but not as the chunk the
// checkpoint committed: the gate drops such a chunk (contract 5), where a
// line that cannot be read at all fails the request.
var ErrMismatch = fmt.Errorf("%w: stored chunk differs from its content hash", storage.ErrCorrupt)

// ChunkOf returns committed chunk id, nil when there is none. From a row
// table it reads the chunk's line and checks it against the content hash
// the row holds, which covers every field (a purged chunk's line, its text
// gone, must name the row's hash). An error is storage.ErrCorrupt naming the file
// and the chunk; errMismatch when the line reads as another chunk. It
// reads the file at every call (Verify's read); a request reads through
// ChunkUpTo.
func (s *State) ChunkOf(id string) (*evidence.Chunk, error) {
	c, _, err := s.Reader().ReadUpTo(id, math.MaxInt64, false)
	return c, err
}

// ChunkUpTo is chunkOf for a chunk committed by generation gen, in one
// lookup: ok is false, and nothing is read, for a chunk gen does not hold.
// A chunk read and checked lately is answered from rowTable.checked, not
// read and hashed again: what a request cites, as a state in memory does.
func (s *State) ChunkUpTo(id string, gen int64) (c *evidence.Chunk, ok bool, err error) {
	return s.Reader().ReadUpTo(id, gen, true)
}

// ReadUpTo is chunkUpTo from a checkpoint's rows, through the cache of
// checked chunks when cached.
func (t *RowTable) ReadUpTo(id string, gen int64, cached bool) (c *evidence.Chunk, ok bool, err error) {
	t, i, w, ok := t.find(id)
	if !ok {
		return nil, false, t.Err()
	}
	if int64(w.Gen) > gen {
		return nil, false, nil
	}
	if !cached {
		c, err = t.read(id, w)
		return c, true, err
	}
	slot := &t.Checked[i%len(t.Checked)]
	if k := slot.Load(); k != nil && k.row == i {
		return k.c, true, nil
	}
	if c, err = t.read(id, w); err == nil {
		slot.Store(&checkedChunk{row: i, c: c})
	}
	return c, true, err
}

// checkedChunks is how many chunks read and checked a row table keeps,
// each in the slot of its row modulo this: the chunks a few hundred packs
// cite, a few MiB, whatever the corpus's size.
const checkedChunks = 4096

// checkedChunk is a chunk read from its batch file and checked, and its row.
type checkedChunk struct {
	row int
	c   *evidence.Chunk
}

// maxPooledLine bounds the buffers RowTable.lines keeps: a line longer
// than this (a chunk far above the usual few KiB) is left to the collector.
const maxPooledLine = 64 << 10

// read returns chunk id of row w, read from its batch file and checked
// (see chunkOf).
func (t *RowTable) read(id string, w checkpoint.Row) (*evidence.Chunk, error) {
	file := t.files[w.Gen-1]
	f, err := t.batch(file)
	if err != nil {
		return nil, fmt.Errorf("chunk %q: %w", id, err)
	}
	buf, _ := t.lines.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	line, err := storage.ReadLineInto(f, w.Line, *buf)
	if err != nil {
		return nil, fmt.Errorf("chunk %q: %w", id, err)
	}
	where := func() string { return fmt.Sprintf("%s/%s at byte %d", storage.ChunksDir, file, w.Line.Off) }
	c, redacted, err := storage.DecodeChunkLine(where, line)
	if cap(line) <= maxPooledLine {
		*buf = line
		t.lines.Put(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	want := evidence.HashPrefix + hex.EncodeToString(w.Hash[:])
	switch {
	case c.ID != id || c.ContentHash != want:
		return nil, fmt.Errorf("%w: %s: chunk %q where the checkpoint has %q (content hash %s)", ErrMismatch, where(), c.ID, id, want)
	case redacted == nil && c.ComputeHash() != want:
		return nil, fmt.Errorf("%w: %s: chunk %q", ErrMismatch, where(), id)
	}
	return c, nil
}

// docView is a chunk's document version: its chunks' IDs in document order,
// their reranker terms as numbers, and the chunk's position. Read from a
// checkpoint (rows not nil), it holds only the chunks read so far: fill
// reads the ones a caller needs first.
type docView struct {
	IDs  []string
	Nums [][]uint32
	Pos  int
	Gens func(i int) int64 // the generation that committed chunk i
	rows *docRows
}

// Fill makes sure chunks [lo, hi) of the view are read; false when a read
// failed (and the query fails: rowTable.err).
func (d docView) Fill(lo, hi int) bool {
	return d.rows == nil || d.rows.fill(lo, hi)
}

// docRows is a document version in a checkpoint's rows, read chunk by
// chunk as requests need them and shared by every view of it: a request
// reads the chunks around its candidates (scope.place), and the rest of a
// long document is never read nor checked for it. Reading it whole at its
// first request was most of a tenant's first request at a million chunks.
type docRows struct {
	t     *RowTable
	start int // the first row
	ids   []string
	nums  [][]uint32
	gen   []int64
	gens  func(i int) int64
	done  []atomic.Bool // chunk k's entries above are read: written before, never after
	mu    sync.Mutex    // held to read a chunk
	// bytes is what it holds, roughly (docRowsSize, rowSize); charge the
	// count of the cache shard that holds it, which its reads add to, and
	// used whether a lookup found it since the shard's hand last passed
	// (rowCache).
	bytes  atomic.Int64
	charge atomic.Pointer[atomic.Int64]
	used   atomic.Bool
}

func newDocRows(t *RowTable, start, n int) *docRows {
	d := &docRows{t: t, start: start, ids: make([]string, n), nums: make([][]uint32, n), gen: make([]int64, n), done: make([]atomic.Bool, n)}
	d.gens = func(k int) int64 { return d.gen[k] }
	d.bytes.Store(docRowsSize(n))
	return d
}

// size is what d holds, roughly, in bytes.
func (d *docRows) size() int64 { return d.bytes.Load() }

// fill makes sure chunks [lo, hi) are read.
func (d *docRows) fill(lo, hi int) bool {
	for k := lo; k < hi; k++ {
		if !d.done[k].Load() {
			return d.read(k, hi)
		}
	}
	return true
}

// read reads chunks [lo, hi) that are not yet read, together
// (checkpoint.Table.ReadRows: the IDs copied, the term numbers slices of
// the mapping, read by requests that pin the table, State.Pin).
func (d *docRows) read(lo, hi int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	var buf [32]int
	ks := buf[:0]
	for k := lo; k < hi; k++ {
		if !d.done[k].Load() {
			ks = append(ks, k)
		}
	}
	if !d.t.ReadRows(d.start, ks, d.ids, d.nums, d.gen) {
		return false
	}
	for _, k := range ks {
		d.done[k].Store(true)
		b := rowSize(d.ids[k])
		d.bytes.Add(b)
		if c := d.charge.Load(); c != nil {
			c.Add(b)
		}
	}
	return true
}

// batch returns batch file file, opened on first use and kept open until
// close: a query reads a few lines of it, and opening the file for each
// was a tenth of a query's time.
func (t *RowTable) batch(file string) (*os.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("%w: %s: the state that named it is gone", storage.ErrCorrupt, file)
	}
	if f, ok := t.open[file]; ok {
		return f, nil
	}
	f, err := t.dir.OpenBatch(file)
	if err != nil {
		return nil, err
	}
	if t.open == nil {
		t.open = map[string]*os.File{}
	}
	t.open[file] = f
	return f, nil
}

// Close closes the batch files t opened and unmaps its checkpoint: once
// the engine holds another state, or closes. A query still reading t then
// fails to read, and starts again on the new state (Engine.readFailed).
// What queries took from t stays valid: the IDs it hands out are copies,
// and the term numbers point into a mapping that stays until the last
// request that pinned t ends (State.Pin, checkpoint.Table.Unpin).
func (t *RowTable) Close() error {
	if t == nil { // a state with every chunk in memory
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(t.open)) {
		errs = append(errs, t.open[name].Close())
	}
	t.open = nil
	errs = append(errs, t.Table.Close())
	if t.Over != nil {
		errs = append(errs, t.Over.Close())
	}
	return errors.Join(errs...)
}

// Pin keeps the mappings of s's checkpoint rows (and of their delta
// level) until the returned func is called, even past their Close: a
// request pins the state it answers from, whose documents' term numbers
// point into them (docRows). Nothing for a state with every chunk in
// memory.
func (s *State) Pin() (unpin func()) {
	t := s.Rows
	if t == nil {
		return func() {}
	}
	over := t.Over
	t.Table.Pin()
	if over != nil {
		over.Table.Pin()
	}
	return func() {
		if over != nil {
			over.Table.Unpin()
		}
		t.Table.Unpin()
	}
}

// DocOf returns the document of committed chunk id, and the generation
// that committed it. From a checkpoint, the view has none of its chunks
// read (docView.fill).
func (s *State) docOf(id string) (docView, int64, bool) { return s.Reader().DocOf(id) }

// DocOf implements chunkReader.
func (t *RowTable) DocOf(id string) (docView, int64, bool) {
	t, i, w, ok := t.find(id)
	if !ok {
		return docView{}, 0, false // and, after a failed check, the query fails: rowTable.Err
	}
	start, n := int(w.DocStart), int(w.DocLen)
	d := t.docs.get(start, func() *docRows { return newDocRows(t, start, n) })
	return docView{IDs: d.ids, Nums: d.nums, Pos: i - start, Gens: d.gens, rows: d}, int64(w.Gen), true
}

// OpenState returns the committed state of the index in d: from its
// checkpoint when it has one made by these analyzers and the engine has no
// dense leg (a dense leg's vectors are built over every chunk), else from
// every batch file.
func OpenState(d *storage.Dir, lex *retrieve.Lexical, emb retrieve.Embedder, graph *retrieve.GraphOptions) (*State, error) {
	m := d.Manifest()
	if m.Checkpoint == "" || emb != nil {
		return LoadState(d, lex, emb, graph)
	}
	st, ok, err := openCheckpoint(d, lex, m, m.Generation, nil)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return LoadState(d, lex, emb, graph)
	}
	if err := st.agrees(m); err != nil {
		st.Rows.Close()
		return nil, err
	}
	return st, nil
}

// agrees checks st, read from the checkpoint manifest m names with the
// batch files after it added, against m's counts.
func (st *State) agrees(m *storage.Manifest) error {
	since := 0 // chunks committed after the checkpoint (in its delta level, or in the maps)
	for _, b := range m.Batches[st.Rows.gen:] {
		since += b.Chunks
	}
	if st.Gen != m.Generation || st.Stats.Docs != m.Docs || st.Stats.Tokens != m.Tokens || int64(st.Rows.Len()+since) != m.Docs {
		return fmt.Errorf("%w: %s and the %d chunks committed after it are of generation %d, %d chunks and %d tokens, the manifest's %d, %d and %d",
			storage.ErrCorrupt, m.Checkpoint, since, st.Gen, st.Rows.Len()+since, st.Stats.Tokens, m.Generation, m.Docs, m.Tokens)
	}
	return nil
}

// OpenStateAt returns the state of the index in d as of generation gen,
// from the checkpoint the manifest names (which must be of gen or
// earlier, and readable by lex's analyzers) and the batch files after it
// up to gen: the state a checkpoint deferred past its generation is of
// (Plan.Name), when no one wrote it ahead.
func OpenStateAt(d *storage.Dir, lex *retrieve.Lexical, gen int64) (*State, error) {
	return openStateAt(d, lex, gen, nil)
}

// openStateAt is OpenStateAt, giving up with checkpoint.ErrStopped between
// two batch files once stop (nil: never) says true.
func openStateAt(d *storage.Dir, lex *retrieve.Lexical, gen int64, stop func() bool) (*State, error) {
	m := d.Manifest()
	if m.Checkpoint == "" || gen < m.CheckpointGeneration() || gen > m.Generation {
		return nil, fmt.Errorf("evpack: state of generation %d from checkpoint %q of an index at %d", gen, m.Checkpoint, m.Generation)
	}
	st, ok, err := openCheckpoint(d, lex, m, gen, stop)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("evpack: state of generation %d: checkpoint %s is of another format or other analyzers", gen, m.Checkpoint)
	}
	return st, nil
}

// openCheckpoint reads the checkpoint m names and adds to it m's
// generations after it up to upTo (addLater, with stop); false when it is
// of another format or other analyzers.
func openCheckpoint(d *storage.Dir, lex *retrieve.Lexical, m *storage.Manifest, upTo int64, stop func() bool) (*State, bool, error) {
	f, err := d.OpenData(m.Checkpoint)
	if err != nil {
		return nil, false, err
	}
	defer f.Close() // the body's mapping outlives it
	st, ok, err := decodeCheckpoint(m.Checkpoint, f, m.CheckpointSum, AnalysisIdentity(lex), d, batchFiles(m.Batches))
	if err != nil || !ok {
		return nil, ok, err
	}
	fail := func(err error) (*State, bool, error) {
		st.Rows.Close() // its mapping and the batch files it opened: nothing else holds them
		return nil, false, err
	}
	if st.Gen != m.CheckpointGeneration() {
		return fail(fmt.Errorf("%w: %s holds generation %d", storage.ErrCorrupt, m.Checkpoint, st.Gen))
	}
	if g := m.DeltaGeneration(); g != 0 && g <= upTo {
		over, err := readDelta(d, lex, m, st)
		if err != nil {
			return fail(err)
		}
		st = over
	}
	if err := st.addLater(d, m, m.Batches[st.Gen:upTo], lex, stop); err != nil {
		return fail(err)
	}
	if st.Gen != upTo {
		return fail(fmt.Errorf("%w: %s and the batches after it are of generation %d, not %d", storage.ErrCorrupt, m.Checkpoint, st.Gen, upTo))
	}
	return st, true, nil
}

// readDelta returns the state read from the delta level m names over
// base, the state read from m's checkpoint (whose rows it takes): the
// delta's figures, and the rows of both.
func readDelta(d *storage.Dir, lex *retrieve.Lexical, m *storage.Manifest, base *State) (*State, error) {
	f, err := d.OpenData(m.Delta)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the body's mapping outlives it
	return decodeDelta(d, lex, f, m.Delta, m.DeltaSum, m.DeltaGeneration(), base)
}

// decodeDelta is readDelta of file f, the delta level name of generation
// gen with checksum sum.
func decodeDelta(d *storage.Dir, lex *retrieve.Lexical, f *os.File, name, sum string, gen int64, base *State) (*State, error) {
	h, t, ok, err := checkpoint.Decode(name, f, sum, AnalysisIdentity(lex), len(base.Rows.files))
	switch {
	case err != nil:
		return nil, err
	case !ok: // the checkpoint under it is of this format and these analyzers: so was it, when written
		return nil, fmt.Errorf("%w: %s is of another format or other analyzers than the checkpoint under it", storage.ErrCorrupt, name)
	}
	fail := func(format string, args ...any) (*State, error) {
		t.Close()
		return nil, fmt.Errorf("%w: %s: %s", storage.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	if h.Gen != gen {
		return fail("holds generation %d", h.Gen)
	}
	if n := base.Rows.terms; len(h.Terms) < n || !slices.Equal(h.Terms[:n], base.Names[:n]) {
		return fail("its terms do not begin with the %d of %s", n, base.Rows.Name())
	}
	st := stateOfHead(h)
	st.Catalog = t.Catalog()
	st.Rows = base.Rows
	st.Rows.Over = newRowTable(t, d, base.Rows.files, h)
	st.Base = st.Gen
	return st, nil
}

// addLater adds to s, just read from the checkpoint m names, later: m's
// generations after it (up to the one wanted), which add chunks and facts
// but purge nothing (storage.Manifest.Validate): a commit may leave the
// checkpoint as it was (PlanCheckpoint). Each is added as its commit added it (State.Extend):
// its chunks, analyzed by lex's analyzers from its analysis file (or its
// texts), then its facts. It sets s.Catalog as the commits did
// (CatalogAfter: added to, or nil after facts) and s.adopt to the catalog
// Open settles the partitions by (OpenCatalog). Once stop (nil: never)
// says true, it gives up with checkpoint.ErrStopped before the next batch.
func (s *State) addLater(d *storage.Dir, m *storage.Manifest, later []storage.Batch, lex *retrieve.Lexical, stop func() bool) error {
	if s.Gen == s.Base { // else it goes on from where an earlier call stopped (catchUp)
		s.adopt = s.Rows.Catalog()
	}
	b := NewBuilding()
	own := b.Own
	for _, batch := range later {
		if stop != nil && stop() {
			return checkpoint.ErrStopped
		}
		c, err := d.ReadBatch(batch)
		if err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339, batch.CommittedAt)
		if err != nil {
			return fmt.Errorf("%w: %s: batch %s: committed_at: %v", storage.ErrCorrupt, storage.ManifestName, batch.File, err)
		}
		if len(c.Purges) > 0 || len(c.Redacted) > 0 {
			return fmt.Errorf("%w: %s holds purges or redactions after checkpoint %s", storage.ErrCorrupt, batch.File, m.Checkpoint)
		}
		gen := batch.Generation
		s.Gen, s.Commits = gen, append(s.Commits, at)
		var ans []Analyzed
		if len(c.Chunks) > 0 {
			if ans, err = analyzeBatch(d, batch, c.Chunks, lex, nil); err != nil {
				return err
			}
		}
		for i, ch := range c.Chunks {
			if _, dup := s.TenantOf(ch.ID); dup {
				return fmt.Errorf("%w: %s: chunk %q stored twice", storage.ErrCorrupt, batch.File, ch.ID)
			}
			key := docKey(ch)
			if _, ok := s.DocOrder[key]; !ok {
				if err := s.copyOut(key); err != nil {
					return err
				}
			}
			own["doc\x00"+key] = true // s's maps are its own: it is being built
			an := ans[i]
			an.line = c.Lines[i]
			s.Add(gen, ch, an, b)
		}
		for _, ch := range c.Chunks {
			if key := docKey(ch); own["doc\x00"+key] {
				delete(own, "doc\x00"+key) // packed once per batch; owned still (placeInDocument re-marks it)
				s.DocOrder[key].packNums()
			}
		}
		for _, f := range c.Facts {
			if _, ok := s.TenantOf(f.ChunkID); !ok {
				return fmt.Errorf("%w: %s: a fact on chunk %q, which is not committed", storage.ErrCorrupt, batch.File, f.ChunkID)
			}
			s.AddFact(gen, f, own)
		}
		if err := s.Rows.Err(); err != nil {
			return err
		}
		if len(c.Chunks) == 0 {
			if len(c.Facts) > 0 {
				s.Catalog = nil // the next checkpoint's catalog is computed from every chunk
			}
			continue
		}
		docs := make([]retrieve.Doc, len(c.Chunks)) // as the commit indexed them: facts of the same batch included
		for i, ch := range c.Chunks {
			if docs[i], err = s.LexDoc(ch.ID); err != nil {
				return err
			}
		}
		if s.adopt, err = lex.CatalogAdd(s.adopt, docs); err != nil {
			return err
		}
		switch {
		case len(c.Facts) > 0:
			s.Catalog = nil
		case s.Catalog != nil:
			s.Catalog = s.adopt
		}
	}
	return nil
}

// OpenCatalog returns what Open settles the lexical partitions of s by
// (retrieve.Lexical.Adopt), for s read from a checkpoint: that checkpoint's
// catalog with the chunks committed after it added as their commits
// indexed them, and the documents the facts after it indexed again.
func (s *State) OpenCatalog() (raw []byte, later []retrieve.Doc, err error) {
	later, err = s.DocsOfFactsAfter(s.Base)
	return s.adopt, later, err
}
