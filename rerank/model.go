package rerank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// Model file format, sealed with fsutil.Seal (magic, payload, BLAKE3-256):
//
//	magic   "evpack-rerank-model/1\n"
//	string  feature set (FeatureSet of the build that trained it)
//	uvarint features per row (NumFeatures)
//	string  training record (trainer, settings, seed, data digest)
//	uvarint trees
//	per tree: uvarint nodes, then per node:
//	  uvarint 0 and varint value              a leaf
//	  uvarint feature+1, varint threshold,     a split: rows with
//	  uvarint left, uvarint right              row[feature] <= threshold go left
//
// A string is a uvarint length and its bytes. Children come after their
// parent (so every walk ends) and inside the tree. Leaf values are fixed point
// (evidence.ScoreScale); a row's score is the integer sum of one leaf per tree.
const (
	modelMagic       = "evpack-rerank-model/1\n"
	modelMagicPrefix = "evpack-rerank-model/"
)

// Limits a model file must respect.
const (
	maxTrees     = 10_000
	maxNodes     = 1 << 16
	maxLeafValue = 1 << 40
	maxString    = 1 << 12
	// maxThreshold bounds thresholds (and FeatureRows clamps features to
	// it), so that ScoreRows' threshold − value cannot overflow.
	maxThreshold = 1 << 61
)

// Node is one node of a regression tree: a leaf when Feature is -1.
type Node struct {
	Feature     int32 // index into a Row, or -1 for a leaf
	Threshold   int64 // a row goes Left when row[Feature] <= Threshold
	Left, Right int32 // child indices within the tree, after this node
	Value       int64 // the leaf's value (evidence.ScoreScale fixed point)
}

// Model is a sealed ensemble of regression trees over FeatureSet rows with
// integer thresholds and integer leaves: its scores are integer sums, the
// same on every CPU. A Model is immutable and safe for concurrent use.
type Model struct {
	features string
	record   string
	trees    [][]Node
	sum      string // BLAKE3 of the encoded file
	raw      []byte
	flat     []flatNode // every tree, children side by side, for ScoreRows
	vals     []int64    // leaf values by flat node
	roots    []int32
	depth    []int32 // steps from each root to its deepest leaf
}

// flatNode is a node laid out for evaluation: a split's right child is
// right after its left one. A leaf loops to itself (feature 0, threshold
// maxThreshold: every clamped row goes "left", to the leaf again), so that
// walking exactly its tree's depth from the root ends on the row's leaf
// whatever the path, and several rows can walk in lockstep without branches.
type flatNode struct {
	thr  int64
	feat int32
	left int32
}

// compile lays the trees out as flat nodes, breadth first, each split's
// children in adjacent slots, with leaf values and tree depths beside.
func (m *Model) compile() {
	m.flat, m.roots, m.depth, m.vals = nil, nil, nil, nil
	type item struct{ src, dst, depth int32 }
	for _, nodes := range m.trees {
		root := int32(len(m.flat))
		m.roots = append(m.roots, root)
		m.flat = append(m.flat, flatNode{})
		m.vals = append(m.vals, 0)
		depth := int32(0)
		queue := []item{{0, root, 0}}
		for len(queue) > 0 {
			q := queue[0]
			queue = queue[1:]
			n := nodes[q.src]
			if n.Feature < 0 {
				m.flat[q.dst] = flatNode{thr: maxThreshold, feat: 0, left: q.dst}
				m.vals[q.dst] = n.Value
				depth = max(depth, q.depth)
				continue
			}
			l := int32(len(m.flat))
			m.flat = append(m.flat, flatNode{}, flatNode{})
			m.vals = append(m.vals, 0, 0)
			m.flat[q.dst] = flatNode{thr: n.Threshold, feat: n.Feature, left: l}
			queue = append(queue, item{n.Left, l, q.depth + 1}, item{n.Right, l + 1, q.depth + 1})
		}
		m.depth = append(m.depth, depth)
	}
}

// ScoreRows adds the model's score of each row to out[i] (len(out) ==
// len(rows)); rows must be as FeatureRows returns them (clamped to
// ±maxThreshold). It walks tree by tree, four rows in lockstep, each step
// branch-free: the right child when threshold − value is negative (its sign
// bit; thresholds and values lie within ±2⁶¹, so it cannot overflow). The
// sums are those of Score: integer addition does not depend on order.
func (m *Model) ScoreRows(rows []Row, out []int64) {
	flat, vals := m.flat, m.vals
	for t, root := range m.roots {
		d := m.depth[t]
		r := 0
		for ; r+4 <= len(rows); r += 4 {
			r0, r1, r2, r3 := &rows[r], &rows[r+1], &rows[r+2], &rows[r+3]
			a, b, c, e := root, root, root, root
			for k := int32(0); k < d; k++ {
				na, nb, nc, ne := &flat[a], &flat[b], &flat[c], &flat[e]
				a = na.left + int32(uint64(na.thr-r0[na.feat])>>63)
				b = nb.left + int32(uint64(nb.thr-r1[nb.feat])>>63)
				c = nc.left + int32(uint64(nc.thr-r2[nc.feat])>>63)
				e = ne.left + int32(uint64(ne.thr-r3[ne.feat])>>63)
			}
			out[r] += vals[a]
			out[r+1] += vals[b]
			out[r+2] += vals[c]
			out[r+3] += vals[e]
		}
		for ; r < len(rows); r++ {
			row, a := &rows[r], root
			for k := int32(0); k < d; k++ {
				n := &flat[a]
				a = n.left + int32(uint64(n.thr-row[n.feat])>>63)
			}
			out[r] += vals[a]
		}
	}
}

// NewModel checks trees and returns the model with its training record
// (free text: trainer, settings, seed, data digest).
func NewModel(record string, trees [][]Node) (*Model, error) {
	m := &Model{features: FeatureSet, record: record, trees: trees}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.raw = m.encode()
	m.sum = evidence.Sum(m.raw)
	m.compile()
	return m, nil
}

func (m *Model) check() error {
	if len(m.record) > maxString {
		return fmt.Errorf("%w: training record of %d bytes, at most %d", ErrModel, len(m.record), maxString)
	}
	if len(m.trees) == 0 || len(m.trees) > maxTrees {
		return fmt.Errorf("%w: %d trees, want 1 to %d", ErrModel, len(m.trees), maxTrees)
	}
	for t, nodes := range m.trees {
		if len(nodes) == 0 || len(nodes) > maxNodes {
			return fmt.Errorf("%w: tree %d has %d nodes, want 1 to %d", ErrModel, t, len(nodes), maxNodes)
		}
		for i, n := range nodes {
			switch {
			case n.Feature == -1:
				if n.Value < -maxLeafValue || n.Value > maxLeafValue {
					return fmt.Errorf("%w: tree %d node %d: leaf value %d out of range", ErrModel, t, i, n.Value)
				}
			case n.Feature < 0 || n.Feature >= NumFeatures:
				return fmt.Errorf("%w: tree %d node %d: feature %d not in [0, %d)", ErrModel, t, i, n.Feature, NumFeatures)
			case n.Threshold < -maxThreshold || n.Threshold > maxThreshold:
				return fmt.Errorf("%w: tree %d node %d: threshold %d out of range", ErrModel, t, i, n.Threshold)
			case int(n.Left) <= i || int(n.Right) <= i || int(n.Left) >= len(nodes) || int(n.Right) >= len(nodes):
				return fmt.Errorf("%w: tree %d node %d: children %d and %d must lie after it, inside %d nodes", ErrModel, t, i, n.Left, n.Right, len(nodes))
			}
		}
	}
	return nil
}

// Score returns the model's score of a row: the sum of one leaf per tree.
func (m *Model) Score(r *Row) int64 {
	var s int64
	for _, nodes := range m.trees {
		i := int32(0)
		for nodes[i].Feature >= 0 {
			n := &nodes[i]
			if r[n.Feature] <= n.Threshold {
				i = n.Left
			} else {
				i = n.Right
			}
		}
		s += nodes[i].Value
	}
	return s
}

// Sum is the BLAKE3 hash of the model file: the model's identity.
func (m *Model) Sum() string { return m.sum }

// Record returns the training record the model was sealed with.
func (m *Model) Record() string { return m.record }

// Trees returns how many trees the model holds.
func (m *Model) Trees() int { return len(m.trees) }

// Encode returns the sealed model file.
func (m *Model) Encode() []byte { return append([]byte(nil), m.raw...) }

// Save writes the sealed model file atomically.
func (m *Model) Save(path string) error {
	if err := fsutil.WriteAtomic(path, m.raw); err != nil {
		return fmt.Errorf("rerank: save model %s: %w", path, err)
	}
	return nil
}

func (m *Model) encode() []byte {
	b := []byte(modelMagic)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(m.features)
	b = binary.AppendUvarint(b, NumFeatures)
	str(m.record)
	b = binary.AppendUvarint(b, uint64(len(m.trees)))
	for _, nodes := range m.trees {
		b = binary.AppendUvarint(b, uint64(len(nodes)))
		for _, n := range nodes {
			if n.Feature < 0 {
				b = binary.AppendUvarint(b, 0)
				b = binary.AppendVarint(b, n.Value)
				continue
			}
			b = binary.AppendUvarint(b, uint64(n.Feature)+1)
			b = binary.AppendVarint(b, n.Threshold)
			b = binary.AppendUvarint(b, uint64(n.Left))
			b = binary.AppendUvarint(b, uint64(n.Right))
		}
	}
	return fsutil.Seal(b)
}

// LoadModel reads and checks a model file: all of it or nothing.
func LoadModel(path string) (*Model, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, path, err)
	}
	return DecodeModel(raw, path)
}

// DecodeModel checks a sealed model file; where names it in errors.
func DecodeModel(raw []byte, where string) (*Model, error) {
	body, err := fsutil.Unseal(raw, modelMagic, 1)
	if err != nil {
		line, _, _ := strings.Cut(string(raw[:min(len(raw), 64)]), "\n")
		if errors.Is(err, fsutil.ErrNotThisFormat) && strings.HasPrefix(line, modelMagicPrefix) && line+"\n" != modelMagic {
			return nil, fmt.Errorf("%w: %s: format %q, this build reads %q", ErrModelVersion, where, line, strings.TrimSpace(modelMagic))
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrModel, where, err)
	}
	d := &decoder{b: body, off: len(modelMagic), where: where}
	m := &Model{features: d.str()}
	if d.err == nil && m.features != FeatureSet {
		return nil, fmt.Errorf("%w: %s: trained on features %q, this build computes %q", ErrModelVersion, where, m.features, FeatureSet)
	}
	if nf := d.uvarint(); d.err == nil && nf != NumFeatures {
		return nil, fmt.Errorf("%w: %s: rows of %d features, this build computes %d", ErrModelVersion, where, nf, NumFeatures)
	}
	m.record = d.str()
	nt := d.count(maxTrees, "trees")
	for t := 0; t < nt && d.err == nil; t++ {
		nn := d.count(maxNodes, "nodes")
		nodes := make([]Node, 0, nn)
		for i := 0; i < nn && d.err == nil; i++ {
			f := d.uvarint()
			if f == 0 {
				nodes = append(nodes, Node{Feature: -1, Value: d.varint()})
				continue
			}
			if f > NumFeatures {
				d.fail(fmt.Sprintf("tree %d node %d: feature %d", t, i, f-1))
				break
			}
			n := Node{Feature: int32(f - 1), Threshold: d.varint()}
			l, r := d.uvarint(), d.uvarint()
			if l > maxNodes || r > maxNodes {
				d.fail(fmt.Sprintf("tree %d node %d: child index", t, i))
				break
			}
			n.Left, n.Right = int32(l), int32(r)
			nodes = append(nodes, n)
		}
		m.trees = append(m.trees, nodes)
	}
	if d.err == nil && d.off-len(modelMagic) != len(body) {
		d.fail(fmt.Sprintf("%d bytes after the last tree", len(body)-(d.off-len(modelMagic))))
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	m.raw = append([]byte(nil), raw...)
	m.sum = evidence.Sum(m.raw)
	m.compile()
	return m, nil
}

// decoder reads the payload; off counts from the start of the file.
type decoder struct {
	b     []byte
	off   int
	where string
	err   error
}

func (d *decoder) rest() []byte { return d.b[d.off-len(modelMagic):] }

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: byte %d: %s", ErrModel, d.where, d.off, what)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.rest())
	if n <= 0 {
		d.fail("bad or truncated number")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.rest())
	if n <= 0 {
		d.fail("bad or truncated number")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) count(limit int, what string) int {
	v := d.uvarint()
	if d.err == nil && (v == 0 || v > uint64(limit)) {
		d.fail(fmt.Sprintf("%d %s, want 1 to %d", v, what, limit))
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxString || n > uint64(len(d.rest())) {
		d.fail(fmt.Sprintf("string of %d bytes", n))
		return ""
	}
	s := string(d.rest()[:n])
	d.off += int(n)
	return s
}
