package state

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/checkpoint"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// The first write after Open needs the state with every chunk in memory
// (Engine.writable). loadState builds it from the batch files alone: it
// analyzes every chunk again (or reads its analysis file), counts every
// tenant's figures term by term and places every chunk in its document,
// which at a million chunks was most of the first write's 50 s of CPU.
// The checkpoint Open read holds all of that already, checked: its
// figures, and its rows in document order with each chunk's generation,
// line, content hash and reranker terms. unfold builds the same state
// from it and the chunks of the batch files, matching every row to the
// chunk at its line.
//
// Invariant: unfold(s) equals loadState for the same index, field by
// field, but for the numbering of reranker terms, which is the
// checkpoint's (TestUnfoldIsLoadState). Check never uses it: it rebuilds
// the state from the batch files alone and compares the checkpoint with
// that. Of the figures, unfold checks each tenant's chunk count against
// the batch files; the term frequencies it takes as the checkpoint's head
// has them (sealed in the manifest, and what every query reads), and
// Check recounts them.

// ErrUnfold is a checkpoint that does not match the batch files row for
// row: the caller builds the state from the batch files instead (loadState),
// which are the record, and the next commit writes a checkpoint of them.
var ErrUnfold = errors.New("evpack: the checkpoint disagrees with the batch files")

// Unfold returns the state s, read from a checkpoint (s.rows set), holds,
// with every chunk read from the batch files of d into memory. An error
// wrapping errUnfold says a row and the batch files disagree; any other
// is a batch file that cannot be read.
func (s *State) Unfold(d *storage.Dir) (*State, error) {
	t := s.Rows
	m := d.Manifest()
	// Batches after the row table's files hold what s's maps hold (a commit
	// extends a state read from a checkpoint as it is).
	if t == nil || len(m.Batches) < len(t.files) || m.Generation != s.Gen {
		return nil, fmt.Errorf("%w: the state is of generation %d, the manifest of %d", ErrUnfold, s.Gen, m.Generation)
	}
	batches := make([]storage.Contents, len(m.Batches))
	total := 0
	for i, b := range m.Batches {
		c, err := d.ReadBatch(b)
		if err != nil {
			return nil, err
		}
		batches[i], total = c, total+len(c.Chunks)
	}
	since := 0 // the chunks committed after the checkpoint, in its delta level or s's maps
	for _, b := range m.Batches[t.gen:] {
		since += b.Chunks
	}
	if total != t.Len()+since {
		return nil, fmt.Errorf("%w: %d rows and %d chunks committed since, %d chunks in the batch files", ErrUnfold, t.Len(), since, total)
	}
	n := &State{
		Gen: s.Gen, Commits: s.Commits, Chunks: make(map[string]*evidence.Chunk, total), Committed: make(map[string]int64, total),
		Facts: s.Facts, FactLog: s.FactLog, Purged: s.Purged, PurgeLog: s.PurgeLog,
		Tenants: make(map[string]*tenantStats, len(s.Tenants)), Stats: s.Stats, Bounds: s.Bounds.Clone(),
		Intern: s.Intern, Names: s.Names, Entities: s.Entities, Feats: map[string][]int32{}, Counts: retrieve.NewCounts(),
		DocOrder: make(map[string]*DocList), DocPlace: make(map[string]docPlace, total), Catalog: s.Catalog,
	}
	// Each tenant's chunk IDs in commit order, which the checkpoint does
	// not hold: batch by batch, line by line, as loadState adds them.
	ids := map[string][]string{}
	for _, c := range batches {
		for _, ch := range c.Chunks {
			ids[ch.Tenant] = append(ids[ch.Tenant], ch.ID)
		}
	}
	for _, name := range evidence.SortedKeys(s.Tenants) { // the first mismatch in name order, not the map's
		ts := s.Tenants[name]
		if got := len(ids[name]); ts.Docs.at(s.Gen) != int64(got) || s.Bounds.Tenants[name] != got {
			return nil, fmt.Errorf("%w: tenant %q has %d chunks in the checkpoint's figures, %d in the batch files", ErrUnfold, name, ts.Docs.at(s.Gen), got)
		}
		cp := *ts // its maps shared: a commit copies a tenant's before it writes them (ownTenant)
		cp.ChunkIDs = ids[name]
		n.Tenants[name] = &cp
	}
	if len(n.Tenants) != len(ids) {
		return nil, fmt.Errorf("%w: %d tenants in the checkpoint, %d in the batch files", ErrUnfold, len(n.Tenants), len(ids))
	}
	seen := make([][]bool, len(batches))
	for g, c := range batches {
		seen[g] = make([]bool, len(c.Chunks))
	}
	// The rows of the checkpoint, then of its delta level (RowTable.Over):
	// a document the delta holds is the delta's, its older rows passed over.
	levels := []*RowTable{t}
	if t.Over != nil {
		levels = append(levels, t.Over)
	}
	for _, lt := range levels {
		var shadowed func(id string) bool
		if lt == t && t.Over != nil {
			shadowed = func(id string) bool { _, _, ok := t.Over.Find(id); return ok }
		}
		if err := unfoldRows(n, lt, batches, seen, shadowed); err != nil {
			return nil, err
		}
	}
	// What s's maps hold, committed since the checkpoint or copied out of
	// its rows with a document such a chunk joined, replaces the rows':
	// every chunk of such a document is in the maps (Layered).
	for key, list := range s.DocOrder {
		n.DocOrder[key] = list
	}
	for id, p := range s.DocPlace {
		n.Chunks[id], n.Committed[id], n.DocPlace[id] = s.Chunks[id], s.Committed[id], p
	}
	if len(n.Chunks) != total {
		return nil, fmt.Errorf("%w: %d chunks unfolded, %d in the batch files", ErrUnfold, len(n.Chunks), total)
	}
	return n, nil
}

// UnfoldOrLoad is what the first write after Open builds: s unfolded, or,
// where the checkpoint disagrees with the batch files, the state they give
// alone (LoadState, with lex, emb and graph).
func (s *State) UnfoldOrLoad(d *storage.Dir, lex *retrieve.Lexical, emb retrieve.Embedder, graph *retrieve.GraphOptions) (*State, error) {
	full, err := s.Unfold(d)
	if errors.Is(err, ErrUnfold) {
		return LoadState(d, lex, emb, graph)
	}
	return full, err
}

// placeOf returns chunk c's place in its document version, but for its
// position there: its key and order key, the generation that committed
// it and its line.
func placeOf(c *evidence.Chunk, gen int64, line storage.Span) docPlace {
	p := docPlace{Key: docKey(c), seq: math.MaxInt64, Gen: gen, Line: line}
	if v, err := strconv.ParseInt(c.Meta[MetaPosition], 10, 64); err == nil && v >= 0 {
		p.seq = v
	}
	return p
}

// docKey returns the key of chunk c's document version: its tenant,
// document ID and version, joined by NULs (docPlace.Key).
func docKey(c *evidence.Chunk) string { return c.Tenant + "\x00" + c.DocID + "\x00" + c.Version }

// unfoldRows adds the chunks of rows t, each matched to its line in
// batches (seen marks the lines matched), to n, with their documents;
// rows whose chunk shadowed (nil: none) says a newer level holds are
// passed over, a document at a time.
func unfoldRows(n *State, t *RowTable, batches []storage.Contents, seen [][]bool, shadowed func(id string) bool) error {
	var list *DocList
	var key string
	var arena []uint32
	start, end := 0, 0 // the rows of the document being read
	skip := false      // the rows of a document shadowed passed over
	for i := range t.Len() {
		w, ok := t.Row(i)
		id, okID := t.ID(w)
		nums, okNums := t.Nums(w)
		if !ok || !okID || !okNums {
			return fmt.Errorf("%w: %w", ErrUnfold, t.Err())
		}
		if shadowed != nil {
			switch {
			case int(w.DocStart) == i && shadowed(id):
				if i != end {
					return fmt.Errorf("%w: %s: a document starts at row %d, the one before ends at %d", ErrUnfold, t.Name(), i, end)
				}
				skip, start, end, key = true, i, i+int(w.DocLen), ""
				continue
			case int(w.DocStart) == i:
				skip = false
			case skip != shadowed(id):
				return fmt.Errorf("%w: %s: row %d (chunk %q): its document is in %s in part", ErrUnfold, t.Name(), i, id, t.Over.Name())
			case skip:
				continue
			}
		}
		g := int(w.Gen) - 1
		c := batches[g]
		j := sort.Search(len(c.Lines), func(j int) bool { return c.Lines[j].Off >= w.Line.Off })
		if j == len(c.Lines) || c.Lines[j] != w.Line || seen[g][j] {
			return fmt.Errorf("%w: row %d (chunk %q) names line %+v of %s", ErrUnfold, i, id, w.Line, t.files[g])
		}
		seen[g][j] = true
		ch := c.Chunks[j]
		hash, _ := strings.CutPrefix(ch.ContentHash, evidence.HashPrefix)
		var hexSum [64]byte // encoded into an array: no allocation per chunk
		if ch.ID != id || ch.Tenant != t.Tenant(w) || hash != string(hex.AppendEncode(hexSum[:0], w.Hash[:])) {
			return fmt.Errorf("%w: row %d holds chunk %q of tenant %q, %s at byte %d chunk %q of tenant %q",
				ErrUnfold, i, id, t.Tenant(w), t.files[g], w.Line.Off, ch.ID, ch.Tenant)
		}
		place := placeOf(ch, int64(w.Gen), w.Line)
		if int(w.DocStart) == i { // a document's first row: its list, its terms in one array (packNums)
			if _, dup := n.DocOrder[place.Key]; dup || i != end {
				return fmt.Errorf("%w: document %q starts at row %d, the one before ends at %d", ErrUnfold, place.Key, i, end)
			}
			start, end = i, i+int(w.DocLen)
			list, key = &DocList{IDs: make([]string, w.DocLen), Nums: make([][]uint32, w.DocLen)}, place.Key
			size := 0
			for r := i; r < i+int(w.DocLen); r++ {
				if v, ok := t.Row(r); ok && v.Flags&checkpoint.NoTerms == 0 {
					size += int(v.NumsLen)
				}
			}
			arena = make([]uint32, 0, size)
			n.DocOrder[key] = list
		}
		if int(w.DocStart) != start || place.Key != key {
			return fmt.Errorf("%w: row %d (chunk %q) is of document %q, in the rows of %q", ErrUnfold, i, id, place.Key, key)
		}
		place.Pos, place.List = i-int(w.DocStart), list
		list.IDs[place.Pos] = ch.ID
		if w.Flags&checkpoint.NoTerms == 0 {
			from := len(arena)
			arena = append(arena, nums...)
			list.Nums[place.Pos] = arena[from:len(arena):len(arena)]
		}
		n.Chunks[ch.ID], n.Committed[ch.ID], n.DocPlace[ch.ID] = ch, int64(w.Gen), place
	}
	if end != t.Len() {
		return fmt.Errorf("%w: the last document ends at row %d of %d", ErrUnfold, end, t.Len())
	}
	return nil
}
