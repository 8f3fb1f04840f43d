package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/retrieve/vectors"
)

// Embedder makes the dense leg's vectors. Vectors are int8 of unit length
// scaled to 127, so that a similarity is an exact integer dot product: the
// same on every CPU, whatever the compiler fuses. A model that outputs
// float32 vectors converts each with [Quantize].
//
// The engine calls an Embedder in two steps, so that a text is tokenized
// once and never again:
//
//   - Analyze(text) turns a text into features: a []int32 whose meaning is
//     the embedder's own business. It runs once per chunk when the chunk is
//     ingested (and once per chunk when an on-disk index is opened), and
//     once per question. The engine keeps every chunk's features and counts
//     them over the corpus into [Counts].
//   - Embed(features) turns features into vectors, in batches: the new
//     chunks of a commit, every chunk when the vectors depend on the corpus
//     (see [CorpusFree]), or one question.
//
// What the features are depends on the embedder:
//
//   - word vectors ([SIF]): the table rows of the text's known words, whose
//     corpus frequencies (counts) weight them;
//   - a local model (package bert): the tokenizer's WordPiece IDs;
//   - a text model behind an API ([HTTPEmbedder]): the text itself, as
//     runes. Analyze returns []int32(text) and Embed recovers the text with
//     string(features[i]). Any model that takes text fits this way without
//     knowing anything else about the engine.
//
// Contract: Analyze and Embed are deterministic and pure for a given
// Identity (a model that is not bit-stable across CPUs says so in its
// Identity); Embed returns exactly one entry per input, each a vector of
// Dims() components or nil for a text it cannot embed (no known words), or
// an error (a model that failed to run); the engine checks this with
// [CheckVectors]. A model whose vectors do not depend on counts should
// implement [CorpusFree]: a commit then embeds only its new chunks, and an
// on-disk index stores the vectors instead of embedding its corpus again at
// every Open.
type Embedder interface {
	// Identity names the embedder, its settings and a hash of its model
	// files; it is written into every pack's fingerprint and is part of
	// the cache key. It must change whenever the vectors could change.
	Identity() string
	// Dims is the number of components of every vector Embed returns.
	Dims() int
	// Analyze returns the features of text that Embed needs (see above):
	// word-vector rows, token IDs, or the text's runes. nil or empty means
	// the text has no features: Embed still receives the empty entry and
	// should return a nil vector for it (the chunk is kept, without one).
	Analyze(text string) []int32
	// Embed turns analyzed texts into vectors, one per entry of features,
	// in order. counts are the corpus's feature counts (SIF weighting needs
	// word frequencies; a model ignores them); query is true when the
	// single input is a question, for models that embed questions
	// differently (an instruction prefix, another pooling). A remote or
	// slow embedder stops when ctx is done.
	Embed(ctx context.Context, features [][]int32, counts *Counts, query bool) ([][]int8, error)
}

// CorpusFree is implemented by embedders whose vectors do not depend on
// corpus counts (models, unlike SIF): a commit then embeds only its new
// chunks and keeps the vectors of the others, and an on-disk index stores
// them with the generation.
type CorpusFree interface {
	CorpusFree() bool
}

// Counts are corpus feature frequencies.
type Counts struct {
	N     map[int32]int64
	Total int64
}

// NewCounts returns empty counts.
func NewCounts() *Counts { return &Counts{N: map[int32]int64{}} }

// Sub uncounts every feature of f (counted before with Add).
func (c *Counts) Sub(f []int32) {
	for _, x := range f {
		if c.N[x]--; c.N[x] == 0 {
			delete(c.N, x)
		}
	}
	c.Total -= int64(len(f))
}

// Add counts every feature of f.
func (c *Counts) Add(f []int32) {
	for _, x := range f {
		c.N[x]++
	}
	c.Total += int64(len(f))
}

// SIF embeds text as the smooth-inverse-frequency weighted sum of its word
// vectors (Arora, Liang and Ma, ICLR 2017): a word w of corpus frequency
// p(w) weighs a/(a+p(w)), so frequent words count little. The paper's second
// step, removing the corpus's first principal component, is on by default
// (KeepingFirstComponent skips it); the dense index carries it out.
// Arithmetic is integer up to one correctly rounded normalization, so the
// vectors are bit-identical on every CPU.
type SIF struct {
	t  *vectors.Table
	a  int64 // SIF a, in millionths
	pc bool  // remove the corpus's first principal component
}

// DefaultSIFA is Arora et al.'s recommended a = 1e-3, in millionths.
const DefaultSIFA = 1000

// NewSIF returns a SIF embedder over the word vectors t that removes the
// corpus's first principal component (Arora et al.'s second step; see
// ComponentRemover): on ObliQA it gains 0.026 recall@10 for the dense leg
// alone (docs/benchmarks.md).
func NewSIF(t *vectors.Table) *SIF { return &SIF{t: t, a: DefaultSIFA, pc: true} }

// KeepingFirstComponent returns a SIF embedder that skips the second step:
// the weighted average of word vectors alone.
func (s *SIF) KeepingFirstComponent() *SIF { c := *s; c.pc = false; return &c }

// RemovesFirstComponent implements ComponentRemover.
func (s *SIF) RemovesFirstComponent() bool { return s.pc }

// Identity implements Embedder.
func (s *SIF) Identity() string {
	pc := "kept"
	if s.pc {
		pc = "removed"
	}
	return fmt.Sprintf("static sif a=%g first_component=%s dims=%d words=%d vectors=%s", float64(s.a)/1e6, pc, s.t.Dims, len(s.t.Words), s.t.Sum)
}

// Dims implements Embedder.
func (s *SIF) Dims() int { return s.t.Dims }

// Analyze implements Embedder: the vocabulary rows of the text's lower-cased
// letter-and-digit words, in order; unknown words are left out.
func (s *SIF) Analyze(text string) []int32 {
	var out []int32
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if i := s.t.Lookup(w); i >= 0 {
			out = append(out, int32(i))
		}
	}
	return out
}

// Embed implements Embedder.
func (s *SIF) Embed(ctx context.Context, features [][]int32, counts *Counts, _ bool) ([][]int8, error) {
	out := make([][]int8, len(features))
	acc := make([]int64, s.t.Dims)
	for k, f := range features {
		clear(acc)
		for _, row := range f {
			// weight = a/(a+p), p = n/T, in millionths: 1e6*a*T/(a*T + 1e6*n).
			var n int64
			var total int64 = 1
			if counts != nil {
				n, total = counts.N[row], max(counts.Total, 1)
			}
			w := 1_000_000 * s.a * total / (s.a*total + 1_000_000*n)
			// One product, one rounding: no operation here can be fused.
			factor := int64(math.Round(float64(w) * float64(s.t.Scales[row]) * 1024))
			for i, q := range s.t.Row(int(row)) {
				acc[i] += factor * int64(q)
			}
		}
		out[k] = normalize(acc)
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Quantize turns a float vector into the int8 unit vector ×127 the dense leg
// stores, or nil for a zero or non-finite vector.
func Quantize(v []float32) []int8 {
	var n2 float64
	for _, x := range v {
		n2 += float64(x) * float64(x)
	}
	if n2 == 0 || math.IsNaN(n2) || math.IsInf(n2, 0) {
		return nil
	}
	norm := math.Sqrt(n2)
	out := make([]int8, len(v))
	for i, x := range v {
		out[i] = int8(math.Round(float64(x) / norm * 127))
	}
	return out
}

// normalize scales acc to unit length ×127 as int8, or nil for a zero
// vector.
func normalize(acc []int64) []int8 {
	u := scaleTo(acc, 127)
	if u == nil {
		return nil
	}
	out := make([]int8, len(u))
	for i, x := range u {
		out[i] = int8(x)
	}
	return out
}

// scaleTo scales acc to length scale, rounded to integers, or nil for a
// zero vector. The norm is summed in integers after a shift that keeps the
// sum of squares in range; the only float operations are single, correctly
// rounded ones, so every CPU gets the same integers.
func scaleTo(acc []int64, scale float64) []int64 {
	var m int64
	for _, x := range acc {
		m = max(m, x, -x)
	}
	if m == 0 {
		return nil
	}
	shift := 0
	for m>>shift >= 1<<28 || (m>>shift)*(m>>shift) > math.MaxInt64/int64(len(acc)) {
		shift++
	}
	var norm2 int64
	for _, x := range acc {
		y := x >> shift
		norm2 += y * y
	}
	norm := math.Sqrt(float64(norm2))
	out := make([]int64, len(acc))
	for i, x := range acc {
		out[i] = int64(math.Round(float64(x>>shift) * scale / norm))
	}
	return out
}

// ErrDims reports vectors of the wrong dimension.
var ErrDims = errors.New("retrieve: dimension mismatch")

// CheckVectors checks what an embedder returned for n inputs: n vectors,
// each nil or of dims components. The error names the input by name(i).
func CheckVectors(vecs [][]int8, n, dims int, name func(i int) string) error {
	if len(vecs) != n {
		return fmt.Errorf("%w: %d vectors for %d inputs", ErrDims, len(vecs), n)
	}
	for i, v := range vecs {
		if v != nil && len(v) != dims {
			return fmt.Errorf("%s: %w: %d dimensions, the embedder says %d", name(i), ErrDims, len(v), dims)
		}
	}
	return nil
}

// Admits reports whether chunk c is in the eligible set: evidence.Header's
// predicate (the one definition, which the citation gate re-checks), and the
// same one the lexical leg compiles into its index query (see Eligibility).
func (e Eligibility) Admits(c *evidence.Chunk) bool {
	return evidence.Header{AsOf: e.AsOf, Tenant: e.Tenant, Filters: e.Filters}.Admits(c)
}

// DenseHit is one dense result. Hits are ordered by the exact cosine of the
// stored int8 vectors, Score/sqrt(Norm2) (the query's norm is common to all),
// compared with integer arithmetic.
type DenseHit struct {
	ID    string
	Score int64 // int8 dot product with the query
	Norm2 int64 // the chunk vector's squared norm
}

// moreSimilar reports whether a's cosine exceeds b's, exactly: for dots of
// equal sign it compares a.Score²·b.Norm2 with b.Score²·a.Norm2 in 128 bits.
func moreSimilar(a, b DenseHit) int {
	sa, sb := sign(a.Score), sign(b.Score)
	if sa != sb {
		return cmpInt(sa, sb)
	}
	if sa == 0 {
		return 0
	}
	ahi, alo := mul128(a.Score*a.Score, b.Norm2) // |dot| <= dims·127², so dot² fits for dims <= 4096
	bhi, blo := mul128(b.Score*b.Score, a.Norm2)
	c := cmpInt(ahi, bhi)
	if c == 0 {
		c = cmpUint(alo, blo)
	}
	return c * sa // negative cosines: a larger magnitude is less similar
}

func sign(x int64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func cmpInt[T int | uint64](a, b T) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

func cmpUint(a, b uint64) int { return cmpInt(a, b) }

func mul128(a, b int64) (uint64, uint64) { return bits.Mul64(uint64(a), uint64(b)) }

// Dense is an exact-scan vector index: immutable, safe for concurrent use.
type Dense struct {
	ids   []string // ascending
	vecs  [][]int8 // nil where a chunk has no vector
	norm2 []int64
	// rows holds every vector in one block, row r's at r·dims (zeros for a
	// row without one), and vecs slices it; nil when the vectors differ in
	// length. See pack.
	rows []int8
	dims int
	// indexed counts the rows with a vector.
	indexed int
	// sum is the checksum of the stored form, computed at most once.
	sumOnce sync.Once
	sum     [32]byte
	// pc is the component removed from every vector (scaled to norm
	// componentScale), which Project removes from questions; nil for none.
	pc []int64
}

// ComponentRemover is implemented by embedders whose passage and question
// vectors lose the corpus's first principal component, as SIF's second step
// does: the engine has the dense index find and remove it (see
// Dense.WithoutFirstComponent). It applies to corpus-dependent embedders
// only.
type ComponentRemover interface {
	RemovesFirstComponent() bool
}

// componentScale is the norm of a stored principal component: large
// enough for a fine direction, small enough that sums over a million 384-d
// vectors stay in int64.
const componentScale = 1 << 16

// componentRounds of power iteration find the first component; the start is
// the vectors' sum, which for embeddings with a common direction is already
// close to it.
const componentRounds = 30

// WithoutFirstComponent returns an index over d's vectors with their first
// principal component removed (the uncentred one, as Arora et al. take it):
// v - (v·u)u for the unit direction u that carries most of the vectors'
// energy, found by power iteration in integers, so every CPU finds the same
// u. Questions must go through Project. A vector left with nothing becomes
// nil (no vector).
func (d *Dense) WithoutFirstComponent() *Dense {
	dims := 0
	sum := []int64(nil)
	for _, v := range d.vecs {
		if v == nil {
			continue
		}
		if sum == nil {
			dims = len(v)
			sum = make([]int64, dims)
		}
		for j, x := range v {
			sum[j] += int64(x)
		}
	}
	u := scaleTo(sum, componentScale)
	if u == nil {
		return d
	}
	w := make([]int64, dims)
	for range componentRounds {
		clear(w)
		for _, v := range d.vecs {
			if v == nil {
				continue
			}
			var p int64
			for j, x := range v {
				p += int64(x) * u[j]
			}
			for j, x := range v {
				w[j] += int64(x) * p
			}
		}
		if u = scaleTo(w, componentScale); u == nil {
			return d
		}
	}
	out := &Dense{ids: d.ids, vecs: make([][]int8, len(d.vecs)), norm2: make([]int64, len(d.vecs)), pc: u}
	for i, v := range d.vecs {
		out.vecs[i] = removeComponent(v, u)
		out.norm2[i] = Dot(out.vecs[i], out.vecs[i])
		if out.vecs[i] != nil {
			out.indexed++
		}
	}
	out.pack()
	return out
}

// removeComponent returns v - (v·u)u renormalized, u of norm componentScale.
func removeComponent(v []int8, u []int64) []int8 {
	if v == nil {
		return nil
	}
	var p int64
	for j, x := range v {
		p += int64(x) * u[j]
	}
	acc := make([]int64, len(v))
	for j, x := range v {
		acc[j] = int64(x)*componentScale*componentScale - p*u[j]
	}
	return normalize(acc)
}

// Project prepares a question vector for this index: it removes the
// component the passages lost (WithoutFirstComponent), or returns q as it is.
func (d *Dense) Project(q []int8) []int8 {
	if d.pc == nil || q == nil {
		return q
	}
	if len(q) != len(d.pc) {
		return nil
	}
	return removeComponent(q, d.pc)
}

// NewDense builds the index; ids need not be sorted and vecs[i] may be nil.
func NewDense(ids []string, vecs [][]int8) *Dense {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	d := &Dense{ids: make([]string, len(ids)), vecs: make([][]int8, len(ids)), norm2: make([]int64, len(ids))}
	for k, i := range order {
		d.ids[k], d.vecs[k], d.norm2[k] = ids[i], vecs[i], Dot(vecs[i], vecs[i])
		if vecs[i] != nil {
			d.indexed++
		}
	}
	d.pack()
	return d
}

// pack copies the vectors into one block, rows, when they all have the same
// length. A graph walk then finds a vector's address by arithmetic
// (vecAt), where vecs[r] is first a load of the slice's header from a table
// as large as the index: at scale both are cache misses, one after the
// other, on every vector a walk compares.
func (d *Dense) pack() {
	dims := -1
	for _, v := range d.vecs {
		switch {
		case v == nil:
		case dims == -1:
			dims = len(v)
		case len(v) != dims:
			return
		}
	}
	if dims <= 0 {
		return
	}
	d.rows, d.dims = make([]int8, len(d.vecs)*dims), dims
	for r, v := range d.vecs {
		if v != nil {
			o := r * dims
			d.vecs[r] = d.rows[o : o+dims : o+dims]
			copy(d.vecs[r], v)
		}
	}
}

// vecAt returns row r's vector, which r must have: from rows when the
// vectors are packed (see pack).
func (d *Dense) vecAt(r int32) []int8 {
	if d.rows == nil {
		return d.vecs[r]
	}
	o := int(r) * d.dims
	return d.rows[o : o+d.dims : o+d.dims]
}

// Vector returns the stored vector of id, or nil.
func (d *Dense) Vector(id string) ([]int8, bool) {
	i, ok := slices.BinarySearch(d.ids, id)
	if !ok {
		return nil, false
	}
	return d.vecs[i], true
}

// Dims returns the dimensions of the index's vectors: 0 when it holds none,
// -1 when they differ in length.
func (d *Dense) Dims() int {
	switch {
	case d.rows != nil:
		return d.dims
	case d.indexed == 0:
		return 0
	}
	return -1 // pack leaves the rows apart only when lengths differ (or are 0)
}

// Len returns the number of indexed chunks.
func (d *Dense) Len() int { return len(d.ids) }

// Search scans every row admit accepts and returns the n most similar to q,
// by exact cosine descending then ID ascending, and how many rows it scanned.
// It never post-filters: ineligible chunks are never scored. admit gets the
// row (see ID), so a caller can keep its per-chunk facts in a slice aligned
// with the rows instead of looking each up by ID on every query.
func (d *Dense) Search(ctx context.Context, q []int8, admit func(row int) bool, n int) ([]DenseHit, int, error) {
	if q == nil || n <= 0 {
		return nil, 0, nil
	}
	for _, v := range d.vecs {
		if v != nil && len(v) != len(q) {
			return nil, 0, fmt.Errorf("%w: question has %d dimensions, the index %d", ErrDims, len(q), len(v))
		}
		if v != nil {
			break
		}
	}
	// Keep the best n in a sorted buffer: most chunks fall below the n-th
	// best and cost one comparison.
	better := func(a, b DenseHit) bool {
		c := moreSimilar(a, b)
		return c > 0 || c == 0 && a.ID < b.ID
	}
	hits := make([]DenseHit, 0, n+1)
	scanned := 0
	for i, id := range d.ids {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		if d.vecs[i] == nil || !admit(i) {
			continue
		}
		scanned++
		h := DenseHit{ID: id, Score: Dot(q, d.vecs[i]), Norm2: d.norm2[i]}
		if len(hits) == n && !better(h, hits[n-1]) {
			continue
		}
		j := len(hits)
		hits = append(hits, h)
		for ; j > 0 && better(h, hits[j-1]); j-- {
			hits[j] = hits[j-1]
		}
		hits[j] = h
		if len(hits) > n {
			hits = hits[:n]
		}
	}
	return hits, scanned, nil
}

// denseMagic starts a stored dense index ("evpack-dense/1").
const denseMagic = "EVPDNS1\n"

// Sum is the checksum of the index's stored form: it names the vectors (a
// stored graph records the Sum of the index it was built over).
func (d *Dense) Sum() [32]byte {
	d.sumOnce.Do(func() { _, d.sum = d.encode() })
	return d.sum
}

// Encode writes the index in its stored form: magic, dims, count, then per
// chunk (ID length, ID, has-vector flag, int8 components), then a BLAKE3-256
// checksum of all of it.
func (d *Dense) Encode() []byte {
	raw, sum := d.encode()
	d.sumOnce.Do(func() { d.sum = sum }) // the index is immutable: one sum
	return raw
}

func (d *Dense) encode() ([]byte, [32]byte) {
	dims := 0
	for _, v := range d.vecs {
		if v != nil {
			dims = len(v)
			break
		}
	}
	var b bytes.Buffer
	b.WriteString(denseMagic)
	binary.Write(&b, binary.LittleEndian, uint32(dims))
	binary.Write(&b, binary.LittleEndian, uint32(len(d.ids)))
	for i, id := range d.ids {
		binary.Write(&b, binary.LittleEndian, uint16(len(id)))
		b.WriteString(id)
		if d.vecs[i] == nil {
			b.WriteByte(0)
			continue
		}
		b.WriteByte(1)
		for _, x := range d.vecs[i] {
			b.WriteByte(byte(x))
		}
	}
	raw := fsutil.Seal(b.Bytes())
	return raw, [32]byte(raw[len(raw)-32:])
}

// ErrDenseFormat reports a stored dense index that is truncated, corrupted
// or not in this format.
var ErrDenseFormat = errors.New("retrieve: bad dense index file")

// DecodeDense reads a stored index; path names it in errors.
func DecodeDense(path string, raw []byte) (*Dense, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrDenseFormat, path, fmt.Sprintf(format, args...))
	}
	payload, err := fsutil.Unseal(raw, denseMagic, 8)
	if err != nil {
		return nil, bad("evpack dense index: %v", err)
	}
	r := bytes.NewReader(payload)
	var dims, count uint32
	binary.Read(r, binary.LittleEndian, &dims)
	binary.Read(r, binary.LittleEndian, &count)
	if uint64(count) > uint64(len(payload)) {
		return nil, bad("%d entries do not fit", count)
	}
	ids := make([]string, count)
	vecs := make([][]int8, count)
	for i := range ids {
		var n uint16
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		id := make([]byte, n)
		if _, err := io.ReadFull(r, id); err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		ids[i] = string(id)
		has, err := r.ReadByte()
		if err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		if has > 1 {
			return nil, bad("entry %d: has-vector flag %d", i, has)
		}
		if has == 1 {
			if uint64(dims) > uint64(r.Len()) { // before allocating the row
				return nil, bad("entry %d: %d dimensions, %d bytes left", i, dims, r.Len())
			}
			row := make([]byte, dims)
			if _, err := io.ReadFull(r, row); err != nil {
				return nil, bad("entry %d: %v", i, err)
			}
			vecs[i] = make([]int8, dims)
			for j, x := range row {
				vecs[i][j] = int8(x)
			}
		}
		if i > 0 && ids[i] <= ids[i-1] {
			return nil, bad("entry %d out of order", i)
		}
	}
	if r.Len() != 0 {
		return nil, bad("%d bytes after the last entry", r.Len())
	}
	d := NewDense(ids, vecs)
	d.sumOnce.Do(func() { d.sum = [32]byte(raw[len(raw)-32:]) }) // checked above: no need to encode again
	return d, nil
}

// CountUpTo counts the rows with a vector that admit accepts, in row order,
// stopping once it reaches limit: enough to decide a threshold without a
// pass over every row.
func (d *Dense) CountUpTo(admit func(row int) bool, limit int) int {
	n := 0
	for i, v := range d.vecs {
		if n >= limit {
			break
		}
		if v != nil && admit(i) {
			n++
		}
	}
	return n
}

// Indexed returns the number of rows that have a vector.
func (d *Dense) Indexed() int { return d.indexed }

// ID returns the chunk ID of a row; rows are in ascending ID order.
func (d *Dense) ID(row int) string { return d.ids[row] }

// IDs returns the indexed chunk IDs in ascending order.
func (d *Dense) IDs() []string { return slices.Clone(d.ids) }

// Without returns d with the rows of ids (sorted) holding no vector: what a
// purge leaves of the rows of the chunks it takes. d is not changed.
func (d *Dense) Without(ids []string) *Dense {
	all := d.IDs()
	vecs := make([][]int8, len(all))
	for i, id := range all {
		if _, gone := slices.BinarySearch(ids, id); !gone {
			vecs[i], _ = d.Vector(id)
		}
	}
	return NewDense(all, vecs)
}
