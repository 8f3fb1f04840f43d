// Package checkpoint is the format of an index's checkpoint file,
// `evpack-state/5` (state-NNNNNNNN.bin): its encoder, its decoder, and the
// row table a query reads a mapped checkpoint through. It knows the bytes
// and nothing of the engine: the caller hands Encode the state's figures
// (Head) and its chunks by document (Input), and builds its state back
// from what Decode returns.
//
// A checkpoint is a generation's state in a form Open can use without
// reading a batch file (docs/design.md §5, "What Open reads"). Each commit
// writes one beside its batch; it is derived data, a function of the log
// and of the analyzers named in it, and Check rebuilds it from the batch
// files and compares the bytes.
//
// It holds two halves. The state's figures (per-tenant series, term names,
// entity names, facts, purges, bounds, commit times), which grow with the
// vocabulary and the tenants, are decoded at Open. The chunks are rows of
// fixed width in document order (a document version's chunks adjacent),
// with their IDs and reranker term numbers in arenas, and an ID order (each
// chunk's row and its ID's key, sorted by key: idKey) for lookups, and a
// document table (each document version's key and rows, in key order) for
// a commit that adds to a stored document (Table.FindDoc): Open maps it
// and decodes none of it, and a query reads the rows it needs (Table),
// each block checked as it is first read. A chunk's own fields
// stay in its batch file, read when a query needs them and checked against
// the content hash its row holds.
//
// Invariant: Decode(Encode(in)) answers every query as in does (the
// engine's TestCheckpointAnswersAsTheLog), and Encode is a function of its
// input alone: no map order, no clock, not the number of cores
// (TestCheckpointBytesArePinned).
//
// Invariant: nothing a Table hands out points into its mapping (IDs and
// term numbers are copies), so Close can unmap the body while the caller
// still holds what it read; a read after Close fails (Table.Err) instead.
package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// Format is the magic and version of a checkpoint file. An index whose
// checkpoint is of an older format (Older) is read from its batch files,
// as one without a checkpoint, until its next commit writes one of this
// format.
const Format = "evpack-state/5\n"

// Older are the magics of the formats before Format: /1 had no catalog of
// the lexical partitions; /2 held each chunk ID once, in ID order; /3 held
// each ID twice, in ID order and in row order, and ordered the lookup by ID
// rather than by key (idKey); /4 did not name its documents (the document
// table), so a commit could neither tell a chunk joining a stored document
// nor merge new documents into the rows without reading every chunk.
var Older = []string{"evpack-state/1\n", "evpack-state/2\n", "evpack-state/3\n", "evpack-state/4\n"}

// IsOlder reports whether raw starts with the magic of an older format.
func IsOlder(raw []byte) bool {
	for _, magic := range Older {
		if bytes.HasPrefix(raw, []byte(magic)) {
			return true
		}
	}
	return false
}

// rowSize is the width of a chunk's row: ID (offset and length in the ID
// arena), committing generation, tenant (index into the row tenants), line
// in its batch file (offset, length), content hash, reranker term numbers
// (offset and count in the number arena), document (first row and count),
// flags, and the days the lexical catalog reads (anchor day, validity start
// and end: a catalog is computed from the rows without reading a chunk).
const rowSize = 4 + 4 + 4 + 4 + 8 + 4 + 32 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4

// NoDay is a row's day a chunk does not have: no anchor (undated), no
// validity start, no validity end.
const NoDay = math.MinInt32

// docSize is the width of an entry of the document table: the document's
// first row and row count, and its key (offset and length in the key
// arena). The table is in row order, which is key order.
const docSize = 4 + 4 + 4 + 4

// NoTerms flags a purged chunk's row: its terms went with its text.
const NoTerms = 1

// NoNumber marks a term number no chunk holds.
const NoNumber = ^uint32(0)

// Point is a cumulative count as of the generation that last changed it.
type Point struct{ Gen, N int64 }

// Series is a count's history: points in ascending generation order.
type Series []Point

// Lane is a tenant's order-free digest as of a generation.
type Lane struct {
	Gen int64
	L   [4]uint64
}

// TermCounts is a term's series of chunks holding it.
type TermCounts struct {
	Term   string
	Counts Series
}

// Tenant is one tenant's corpus figures over generations.
type Tenant struct {
	Name                                 string
	Docs, Tokens, Facts, Purges, RRTerms Series
	Digest                               []Lane
	LexDF, RRDF                          []TermCounts // by term
}

// Entity is an entity name a chunk declared, and the generation that
// first committed it.
type Entity struct {
	Name string
	Gen  int64
}

// Entities are the names declared under one tenant and entity filter.
type Entities struct {
	Key   string
	Names []Entity
}

// Fact is a committed fact and its generation.
type Fact struct {
	Gen int64
	F   *evidence.Fact
}

// Purge is a purged chunk: its ID, the purge's generation and reason, the
// chunk's content hash and what the purge took.
type Purge struct {
	ID        string
	Gen       int64
	Reason    string
	Hash      string
	Redaction storage.Redaction
}

// Head is a state's figures, as a checkpoint's head holds them.
type Head struct {
	Gen          int64
	Commits      []time.Time // commit time of generation i+1, to the second
	Docs, Tokens int64       // the whole index's totals (the manifest's)
	Bounds       retrieve.Bounds
	// Terms are the reranker terms by checkpoint number. Encode numbers
	// them itself (see Input.Names) and ignores this field.
	Terms    []string
	Entities []Entities // by key
	Facts    []Fact     // in commit order
	Purges   []Purge    // in purge order
	Tenants  []Tenant   // by name
}

// Doc is one document version's chunks in document order: IDs and their
// reranker terms as the caller numbers them (Input.Names), side by side;
// nil terms for a purged chunk's.
type Doc struct {
	// Key names the document version (the engine's tenant, document ID and
	// version, joined by NULs). Docs are in strictly ascending key order.
	Key  string
	IDs  []string
	Nums [][]uint32
	// Chunks, when not nil, are the rows' fields of IDs, side by side;
	// when nil, Input.Chunk is asked for each.
	Chunks []Chunk
}

// Chunk is what a row holds of a chunk besides its ID, document and terms.
type Chunk struct {
	Gen    int64        // the generation that committed it
	Line   storage.Span // its line in its batch file
	Hash   [32]byte     // its content hash's digest (the 64 hex digits after evidence.HashPrefix)
	Tenant string       // one of Head.Tenants' names
	Purged bool
	// AnchorDay, From and To are its anchor day and validity start and end
	// as day numbers (asof.Date.Days), NoDay for none.
	AnchorDay, From, To int32
}

// Input is what Encode writes: a state built from batches.
type Input struct {
	Head Head
	// Identity names the analyzers the state's figures were made by; a
	// checkpoint of another identity is passed over by Decode.
	Identity string
	// Names are the caller's reranker terms by its numbers (Docs' Nums).
	// The checkpoint numbers them anew, in order of first use in the rows
	// (see Encode).
	Names []string
	// Seed, when set, are terms the checkpoint numbers first, in this
	// order, whether the rows use them or not: a delta level's are its
	// base's terms (storage.Manifest.Delta), so that the rows of both
	// number every term alike.
	Seed []string
	// Docs are the document versions in ascending order of their key.
	Docs []Doc
	// Placed is the number of chunks the caller placed in documents: Docs
	// must hold every one of them.
	Placed int
	// Chunk returns a row's fields of chunk id. It is called on every core
	// at once.
	Chunk func(id string) Chunk
	// Catalog returns the lexical partitions' catalog; Encode calls it once
	// the rest is encoded, so that the caller can compute it beside.
	Catalog func() ([]byte, error)
	// Stop, when set, is asked between tenants of the head, runs of
	// documents, passes of the ID sort and runs of blocks:
	// once it says true, Encode gives up with ErrStopped (a checkpoint
	// written ahead that no commit will name: its engine is closing). Once
	// true it must stay true: a run of blocks it skipped is not hashed.
	Stop func() bool
	// Scratch, when set, makes the body's sections (the File's parts
	// after the head); the File lives until its Free. Nil: the Go heap.
	Scratch *Scratch
}

// ErrStopped is Encode's error when Input.Stop said to give up.
var ErrStopped = errors.New("evpack: checkpoint: encoding stopped")

// Encode returns the sealed checkpoint of in.
func Encode(in Input) (File, error) {
	h := &in.Head
	w := &writer{b: make([]byte, 0, 1<<16)} // the head after the identity and the catalog
	w.int(h.Gen)
	w.uint(uint64(len(h.Commits)))
	for _, t := range h.Commits {
		w.int(t.Unix())
	}
	w.int(h.Docs)
	w.int(h.Tokens)
	b := h.Bounds
	w.int(b.MaxAnchorDay)
	w.bool(b.Undated)
	w.int(b.MaxFrom)
	w.int(b.MinTo)
	w.int(b.MinRetired)
	tenants := evidence.SortedKeys(b.Tenants)
	w.uint(uint64(len(tenants)))
	for _, t := range tenants {
		w.str(t)
		w.int(int64(b.Tenants[t]))
	}
	// Terms are numbered anew, in order of first use in the rows: the
	// state's numbers come from its history (a term of a purged text keeps
	// its number, though no chunk has it any longer), a checkpoint's only
	// from what it holds, so that the state the log gives at Open writes
	// the same bytes (Check compares them) and no purged term is written.
	canon, names := canonicalTerms(in.Names, in.Seed, in.Docs)
	w.uint(uint64(len(names)))
	for _, n := range names {
		w.str(n)
	}
	w.uint(uint64(len(h.Entities)))
	for _, e := range h.Entities {
		w.str(e.Key)
		w.uint(uint64(len(e.Names)))
		for _, en := range e.Names {
			w.str(en.Name)
			w.int(en.Gen)
		}
	}
	w.uint(uint64(len(h.Facts)))
	for _, fa := range h.Facts {
		f := fa.F
		w.int(fa.Gen)
		w.str(string(f.Kind))
		w.str(f.ChunkID)
		w.date(f.End)
		w.int(f.Anchor.Unix())
		w.str(f.By)
	}
	w.uint(uint64(len(h.Purges)))
	for _, p := range h.Purges {
		w.str(p.ID)
		w.int(p.Gen)
		w.str(p.Reason)
		w.str(p.Hash)
		w.int(p.Redaction.Generation)
		w.int(int64(p.Redaction.Tokens))
		w.int(int64(p.Redaction.Terms))
	}
	stop := in.Stop
	if stop == nil {
		stop = func() bool { return false }
	}
	tenantNames := make([]string, len(h.Tenants))
	w.uint(uint64(len(h.Tenants)))
	for i, ts := range h.Tenants {
		if stop() { // a tenant's term series: milliseconds each at a million chunks
			return nil, ErrStopped
		}
		tenantNames[i] = ts.Name
		w.str(ts.Name)
		for _, s := range []Series{ts.Docs, ts.Tokens, ts.Facts, ts.Purges, ts.RRTerms} {
			w.series(s)
		}
		w.uint(uint64(len(ts.Digest)))
		for _, lp := range ts.Digest {
			w.int(lp.Gen)
			for _, l := range lp.L {
				w.u64(l)
			}
		}
		for _, df := range [][]TermCounts{ts.LexDF, ts.RRDF} {
			w.uint(uint64(len(df)))
			for _, t := range df {
				w.str(t.Term)
				w.series(t.Counts)
			}
		}
	}
	body, err := w.rows(&in, tenantNames, canon, stop)
	if err != nil {
		return nil, err
	}
	cat, err := in.Catalog()
	if err != nil {
		return nil, err
	}
	hw := &writer{b: make([]byte, 0, len(in.Identity)+len(cat)+len(w.b)+2*binary.MaxVarintLen64)}
	hw.str(in.Identity)
	hw.str(string(cat))
	hw.b = append(hw.b, w.b...)
	return assemble(hw.b, body, stop)
}

// The file: Format, the head's length (8 bytes), the head (the figures,
// then each body section's place, block size and the BLAKE3-256 of each of
// its blocks), the head's seal (BLAKE3-256 of everything before it: the
// checksum the manifest records), zeros up to a page, and the body. Open
// reads and checks the head alone and maps the body; a query checks each
// block of the body the first time it reads it.
const (
	page = 4096
	// block is a page: a query's first read of a block hashes it whole
	// and faults in each of its pages, and the first queries after Open
	// read many blocks for a row or an ID each. (16 KiB blocks measured no
	// worse at a million chunks, within the noise; a page is what a read
	// needs, and the head's checksums, 32 bytes a page, are read once.)
	block = 4 << 10
	// A block of the rows and of the ID order holds whole entries, so that
	// no entry straddles two (each is validated with its block).
	rowsPerBlock  = block / rowSize
	orderPerBlock = block / orderSize
	docsPerBlock  = block / docSize
	// sections is the number of the body's sections: rows, ID order, ID
	// arena, document table, key arena, number arena.
	sections = 6
	// orderSize is the width of an entry of the ID order: the row, and
	// its chunk ID's key (idKey).
	orderSize = 12
	// fenceEvery is how many entries of the ID order the head holds one
	// fence for (the key of the first of each run of this many): a lookup
	// searches the fences in memory, then the keys of a run (in one block
	// of the order, at times two), then reads the ID of the one entry
	// whose key matches.
	// The fences of a million chunks are 254 KiB of the head.
	fenceEvery = 32
)

// File is a checkpoint file in parts, written one after the other: the
// head (with its seal and the zeros up to a page), then each body section
// and its padding. The body is never copied into one buffer the size of the
// file (319 MB at a million chunks, on every commit).
type File [][]byte

// Head returns the part Sum reads.
func (f File) Head() []byte { return f[0] }

// Bytes returns the whole file.
func (f File) Bytes() []byte { return bytes.Join(f, nil) }

// assemble returns the checkpoint file of head and the body sections
// (rows, ID order, ID arena, document table, key arena, number arena).
func assemble(head []byte, body [sections][]byte, stop func() bool) (File, error) {
	sizes := [sections]int{rowsPerBlock * rowSize, orderPerBlock * orderSize, block, docsPerBlock * docSize, block, block}
	sums := blockSums(body, sizes, stop)
	if stop() {
		return nil, ErrStopped
	}
	w := &writer{b: head}
	off := 0
	for i, sec := range body {
		w.uint(uint64(off))
		w.uint(uint64(len(sec)))
		w.uint(uint64(sizes[i]))
		for _, sum := range sums[i] {
			w.b = append(w.b, sum[:]...)
		}
		off += (len(sec) + 7) &^ 7
	}
	n := len(Format) + 8 + len(w.b) + 32
	start := (n + page - 1) &^ (page - 1)
	out := make([]byte, 0, start)
	out = append(out, Format...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(w.b)))
	out = append(out, w.b...)
	seal := blake3.Sum256(out)
	out = append(out, seal[:]...)
	out = append(out, make([]byte, start-len(out))...)
	f := File{out}
	var zeros [8]byte
	for _, sec := range body {
		f = append(f, sec)
		if pad := ((len(sec) + 7) &^ 7) - len(sec); pad > 0 {
			f = append(f, zeros[:pad])
		}
	}
	return f, nil
}

// blockSums returns the BLAKE3-256 of each block of each section of body,
// section i cut into blocks of sizes[i] bytes, hashed on every core: a
// block's sum is a function of its bytes alone, so the sums do not depend
// on which goroutine computed them.
// blocksBetweenStops is how many blocks a worker of blockSums sums between
// questions to stop: half a megabyte of rows or less, a millisecond's
// worth or so. (At 1,024, 4 MB and more, a worker ran 12 to 19 ms between
// them while a commit waited for a core.)
const blocksBetweenStops = 128

func blockSums(body [sections][]byte, sizes [sections]int, stop func() bool) [sections][][32]byte {
	var sums [sections][][32]byte
	type job struct{ sec, lo, hi int } // blocks [lo, hi) of section sec
	var jobs []job
	for i, sec := range body {
		n := (len(sec) + sizes[i] - 1) / sizes[i]
		sums[i] = make([][32]byte, n)
		for lo := 0; lo < n; lo += blocksBetweenStops {
			jobs = append(jobs, job{i, lo, min(lo+blocksBetweenStops, n)})
		}
	}
	onEveryCore(len(jobs), func(k int) {
		if stop() {
			return // the caller asks stop again and gives up
		}
		j, size := jobs[k], sizes[jobs[k].sec]
		sec := body[j.sec]
		for b := j.lo; b < j.hi; b++ {
			sums[j.sec][b] = blake3.Sum256(sec[b*size : min((b+1)*size, len(sec))])
		}
	})
	return sums
}

// onEveryCore calls do(k) once for every k in [0, n), on GOMAXPROCS
// goroutines at most, each taking the next k not yet taken, and returns
// when every call has. do must write only what k alone owns.
func onEveryCore(n int, do func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				do(k)
			}
		}()
	}
	wg.Wait()
}

// Sum returns the checksum the manifest records of checkpoint raw (at
// least its head): its head's seal.
func Sum(raw []byte) (string, error) {
	if len(raw) < len(Format)+8 || string(raw[:len(Format)]) != Format {
		return "", fmt.Errorf("%w: not a checkpoint", storage.ErrCorrupt)
	}
	n := len(Format) + 8 + int(binary.LittleEndian.Uint64(raw[len(Format):]))
	if n < 0 || n+32 > len(raw) {
		return "", fmt.Errorf("%w: a checkpoint's head past its end", storage.ErrCorrupt)
	}
	return evidence.HashPrefix + hex.EncodeToString(raw[n:n+32]), nil
}

// canonicalTerms returns the checkpoint's number of each of the caller's
// term numbers (NoNumber for a term no chunk holds) and the terms by
// checkpoint number: seed's first, then in order of first use, chunk by
// chunk in row order.
func canonicalTerms(names, seed []string, docs []Doc) ([]uint32, []string) {
	canon := make([]uint32, len(names))
	for i := range canon {
		canon[i] = NoNumber
	}
	out := slices.Clone(seed)
	if len(seed) > 0 {
		at := make(map[string]uint32, len(seed))
		for i, n := range seed {
			at[n] = uint32(i)
		}
		for i, n := range names {
			if k, ok := at[n]; ok {
				canon[i] = k
			}
		}
	}
	for _, d := range docs {
		for _, ns := range d.Nums {
			for _, n := range ns {
				if canon[n] == NoNumber {
					canon[n] = uint32(len(out))
					out = append(out, names[n])
				}
			}
		}
	}
	return canon, out
}

// rows appends the number of rows and of documents to the head and returns
// the body: the chunks' rows (see rowSize), the ID order (see orderSize),
// the ID arena, the document table (see docSize), the key arena and the
// number arena (the terms numbered by canon).
//
// The sections are sized first, then filled document by document on every
// core, each document at the place the sizing gave it, while the ID order
// is sorted: the bytes depend on the input alone, never on the workers.
func (w *writer) rows(in *Input, tenants []string, canon []uint32, stop func() bool) ([sections][]byte, error) {
	var body [sections][]byte
	docs := in.Docs
	// Where each document's rows, IDs, term numbers and key start, and the
	// IDs in row order. (At a million chunks the arenas are hundreds of
	// megabytes: sized ahead, none of them is ever copied to grow.)
	type place struct{ row, idByte, num, keyByte int }
	at := make([]place, len(docs)+1)
	ids := make([]string, 0, in.Placed)
	for k, d := range docs {
		if k%keysBetweenStops == 0 && stop() {
			return body, ErrStopped
		}
		switch {
		case k > 0 && docs[k-1].Key >= d.Key:
			return body, fmt.Errorf("evpack: checkpoint: document %q after %q: documents out of order", d.Key, docs[k-1].Key)
		case len(d.IDs) == 0 || len(d.Nums) != len(d.IDs) || (d.Chunks != nil && len(d.Chunks) != len(d.IDs)):
			return body, fmt.Errorf("evpack: checkpoint: document %q: %d IDs, %d term lists, %d rows", d.Key, len(d.IDs), len(d.Nums), len(d.Chunks))
		}
		p := at[k]
		ids = append(ids, d.IDs...)
		p.row += len(d.IDs)
		p.keyByte += len(d.Key)
		for i, id := range d.IDs {
			p.idByte, p.num = p.idByte+len(id), p.num+len(d.Nums[i])
		}
		at[k+1] = p
	}
	total := at[len(docs)]
	switch {
	case len(ids) != in.Placed:
		return body, fmt.Errorf("evpack: checkpoint: %d chunks in documents, %d placed", len(ids), in.Placed)
	case total.idByte > 1<<31 || total.keyByte > 1<<31 || total.num > 1<<32-1 || in.Head.Gen > 1<<32-1:
		return body, fmt.Errorf("evpack: checkpoint: %d bytes of chunk IDs, %d of document keys, %d reranker terms, generation %d: more than a checkpoint holds",
			total.idByte, total.keyByte, total.num, in.Head.Gen)
	}
	// Each up to a hundred megabytes at a million chunks, zeroed as it is
	// made (10 to 20 ms): stop is asked before each.
	var rows, arena, nums, docTable, keys []byte
	for _, s := range []struct {
		b *[]byte
		n int
	}{
		{&rows, len(ids) * rowSize},
		{&arena, total.idByte},
		{&nums, 4 * total.num}, // little-endian term numbers
		{&docTable, len(docs) * docSize},
		{&keys, total.keyByte},
	} {
		if stop() {
			return body, ErrStopped
		}
		*s.b = in.Scratch.make(s.n)
	}
	// fill writes documents [lo, hi), and returns the first error among
	// them in document order.
	fill := func(lo, hi int) error {
		if stop() {
			return ErrStopped
		}
		le := binary.LittleEndian
		for k := lo; k < hi; k++ {
			d, p := docs[k], at[k]
			e := docTable[k*docSize : (k+1)*docSize]
			le.PutUint32(e[0:], uint32(p.row))
			le.PutUint32(e[4:], uint32(len(d.IDs)))
			le.PutUint32(e[8:], uint32(p.keyByte))
			le.PutUint32(e[12:], uint32(len(d.Key)))
			copy(keys[p.keyByte:], d.Key)
			for i, id := range d.IDs {
				var c Chunk
				if d.Chunks != nil {
					c = d.Chunks[i]
				} else {
					c = in.Chunk(id)
				}
				r := rows[(p.row+i)*rowSize : (p.row+i+1)*rowSize]
				copy(r[28:60], c.Hash[:])
				t, found := slices.BinarySearch(tenants, c.Tenant)
				if !found {
					return fmt.Errorf("evpack: checkpoint: chunk %q: tenant %q has no figures", id, c.Tenant)
				}
				var flags uint32
				if c.Purged {
					flags |= NoTerms
				}
				// The fields in rowSize's order: ID (offset, length),
				// generation, tenant, line (offset, length), content hash
				// (above), term numbers (offset, count), document (first
				// row, count), flags, days.
				le.PutUint32(r[0:], uint32(p.idByte))
				le.PutUint32(r[4:], uint32(len(id)))
				le.PutUint32(r[8:], uint32(c.Gen))
				le.PutUint32(r[12:], uint32(t))
				le.PutUint64(r[16:], uint64(c.Line.Off))
				le.PutUint32(r[24:], uint32(c.Line.Len))
				le.PutUint32(r[60:], uint32(p.num))
				le.PutUint32(r[64:], uint32(len(d.Nums[i])))
				le.PutUint32(r[68:], uint32(at[k].row))
				le.PutUint32(r[72:], uint32(len(d.IDs)))
				le.PutUint32(r[76:], flags)
				le.PutUint32(r[80:], uint32(c.AnchorDay))
				le.PutUint32(r[84:], uint32(c.From))
				le.PutUint32(r[88:], uint32(c.To))
				p.idByte += copy(arena[p.idByte:], id)
				for _, n := range d.Nums[i] {
					le.PutUint32(nums[4*p.num:], canon[n])
					p.num++
				}
			}
		}
		return nil
	}
	// The lookup is ordered by key (idKey), then ID: a lookup compares
	// the keys in the order's entries and reads one chunk's ID to confirm
	// it, so the arena holds each ID once, in row order, where a document
	// view reads its rows' IDs together. (Ordered by ID, a lookup read the
	// IDs of the entries it passed: a second copy of the arena in ID order,
	// and a block of it checked for each cold lookup.)
	idKeys := make([]uint64, len(ids))
	byID := make([]uint32, len(ids))
	sorted := make(chan struct{})
	go func() {
		defer close(sorted)
		for i, id := range ids {
			if i%keysBetweenStops == 0 && stop() {
				return // the caller asks stop again and gives up
			}
			byID[i], idKeys[i] = uint32(i), idKey(id)
		}
		sortIDOrder(byID, idKeys, ids, stop)
	}()
	// Documents in runs of about a 512th of the rows, each filled by
	// whichever worker takes it; the first error in document order wins.
	// Input.Stop is asked before each: a checkpoint written ahead gives way
	// there to the commits in flight, so a run is kept to a millisecond or
	// two at a million chunks.
	var runs []int // first document of each run, then len(docs)
	for k := range docs {
		if len(runs) == 0 || at[k].row-at[runs[len(runs)-1]].row >= max(1, len(ids)/512) {
			runs = append(runs, k)
		}
	}
	runs = append(runs, len(docs))
	errs := make([]error, len(runs)-1)
	onEveryCore(len(errs), func(r int) { errs[r] = fill(runs[r], runs[r+1]) })
	<-sorted
	for _, err := range errs {
		if err != nil {
			return body, err
		}
	}
	if stop() { // the sort may have stopped part-way: its order is not the ID order
		return body, ErrStopped
	}
	order := in.Scratch.make(orderSize * len(byID))
	for i, r := range byID {
		binary.LittleEndian.PutUint32(order[i*orderSize:], r)
		binary.LittleEndian.PutUint64(order[i*orderSize+4:], idKeys[r])
	}
	w.uint(uint64(len(ids)))
	for k := 0; k < len(byID); k += fenceEvery {
		w.u64(idKeys[byID[k]])
	}
	w.uint(uint64(len(docs)))
	return [sections][]byte{rows, order, arena, docTable, keys, nums}, nil
}

// keysBetweenStops is how many IDs the ID order hashes (idKey), and how
// many documents rows places, between questions to Input.Stop: a
// millisecond's worth or so.
const keysBetweenStops = 8192

// writer appends a checkpoint's fields.
type writer struct{ b []byte }

func (w *writer) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) u64(v uint64)  { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) str(s string)  { w.uint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) bool(v bool) {
	if v {
		w.uint(1)
	} else {
		w.uint(0)
	}
}

// date writes d as its day number plus one, 0 for no date.
func (w *writer) date(d asof.Date) {
	if d.IsZero() {
		w.uint(0)
		return
	}
	w.uint(1)
	w.int(d.Days())
}

func (w *writer) series(s Series) {
	w.uint(uint64(len(s)))
	for _, p := range s {
		w.int(p.Gen)
		w.int(p.N)
	}
}

// reader reads a checkpoint's fields; the first malformed one sets err,
// and every later read returns zero values.
type reader struct {
	b   []byte
	off int
	err error
	// pts is where series take their points from, a slab at a time: a
	// million chunks' head holds about 94,000 series of 11 points, and
	// one allocation each was a third of Decode.
	pts []Point
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, len(Format)+8+r.off) // the head starts after its length
	}
	r.off = len(r.b)
}

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad number")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) int() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad number")
		return 0
	}
	r.off += n
	return v
}

// count reads a length of items each at least min bytes long: bounded by
// what is left, so that a corrupt length cannot make a huge allocation.
func (r *reader) count(min int) int {
	v := r.uint()
	if v > uint64((len(r.b)-r.off)/max(min, 1)) {
		r.fail("bad count")
		return 0
	}
	return int(v)
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail("truncated")
		return nil
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *reader) str() string { return string(r.bytes(r.count(1))) }

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *reader) bool() bool { return r.uint() != 0 }

func (r *reader) date() asof.Date {
	if r.uint() == 0 {
		return asof.Date{}
	}
	return asof.DateFromDays(r.int())
}

// seriesSlab is how many points reader.series allocates at once.
const seriesSlab = 1 << 14

func (r *reader) series() Series {
	n := r.count(2)
	if n > len(r.pts) {
		r.pts = make([]Point, max(n, seriesSlab))
	}
	// Capped at its length: an append to it copies, never writes into
	// the next series.
	s := Series(r.pts[:n:n])
	r.pts = r.pts[n:]
	for i := range s {
		s[i] = Point{Gen: r.int(), N: r.int()}
	}
	return s
}
