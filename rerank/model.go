package rerank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"

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

// Limits a model file must respect. Each is checked against the counts a
// file declares before anything is allocated for them, so a file at the
// format's limits (or claiming more than its bytes hold) costs no more
// memory than its own size: ErrModelTooLarge.
const (
	// MaxModelBytes bounds a sealed model file (LoadModel checks the
	// file's size before reading it). The embedded ObliQA model is 44 KB.
	MaxModelBytes = 64 << 20
	// MaxModelTrees bounds the trees of a model.
	MaxModelTrees = maxTrees
	// MaxTreeNodes bounds the nodes of one tree.
	MaxTreeNodes = maxNodes
	// MaxModelNodes bounds the nodes of all trees together: at about 40
	// bytes a node decoded and compiled, a model at the limit takes some
	// 170 MB. The trainer refuses settings that could exceed it.
	MaxModelNodes = 1 << 22
	// MaxModelFeatures is the feature count a model row has: exactly
	// NumFeatures, which this build computes.
	MaxModelFeatures = NumFeatures

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
// same on every CPU. A Model is immutable but for the scratch ScoreRows
// keeps between calls, and safe for concurrent use.
type Model struct {
	features string
	record   string
	trees    [][]Node
	sum      string // BLAKE3 of the encoded file
	raw      []byte
	// The trees compiled for ScoreRows (see compile).
	cuts       [NumFeatures][]int64 // per feature, the distinct thresholds its splits use, ascending
	cutStart   [NumFeatures + 1]int32
	splits     []maskSplit // every tree's splits, parents before children, tree after tree
	leaves     []maskLeaf  // every tree's leaves, tree after tree
	splitStart []int32     // tree t's splits are splits[splitStart[t]:splitStart[t+1]]
	leafStart  []int32     // and its leaves leaves[leafStart[t]:leafStart[t+1]]
	widest     int         // nodes of the largest tree
	// scratch holds *treeScratch: ScoreRows's masks, kept between calls
	// (about 14 KiB for the default model, which every request scored).
	scratch sync.Pool
}

// treeScratch is what one ScoreRows call works in.
type treeScratch struct {
	left, reach []uint64
}

// maskSplit is a split compiled for ScoreRows: its threshold's place
// among all features' cuts, and its own and its children's node indices
// within the tree.
type maskSplit struct {
	cut, self, left, right int32
}

// maskLeaf is a leaf compiled for ScoreRows: its node index within the
// tree and its value.
type maskLeaf struct {
	node int32
	val  int64
}

// compile gathers each feature's distinct thresholds (ascending) and lays
// the trees out tree after tree, splits apart from leaves, each split
// naming its threshold's slot.
func (m *Model) compile() {
	for f := range m.cuts {
		m.cuts[f] = nil
	}
	for _, nodes := range m.trees {
		for _, n := range nodes {
			if n.Feature >= 0 {
				m.cuts[n.Feature] = append(m.cuts[n.Feature], n.Threshold)
			}
		}
	}
	var at int32
	for f := range m.cuts {
		slices.Sort(m.cuts[f])
		m.cuts[f] = slices.Compact(m.cuts[f])
		m.cutStart[f] = at
		at += int32(len(m.cuts[f])) + 1 // one more slot: rows right of every cut
	}
	m.cutStart[NumFeatures] = at
	m.splits, m.leaves, m.widest = nil, nil, 0
	m.splitStart, m.leafStart = []int32{0}, []int32{0}
	for _, nodes := range m.trees {
		m.widest = max(m.widest, len(nodes))
		for i, n := range nodes { // file order: children after their parent (check)
			if n.Feature < 0 {
				m.leaves = append(m.leaves, maskLeaf{node: int32(i), val: n.Value})
				continue
			}
			k, _ := slices.BinarySearch(m.cuts[n.Feature], n.Threshold)
			m.splits = append(m.splits, maskSplit{cut: m.cutStart[n.Feature] + int32(k), self: int32(i), left: n.Left, right: n.Right})
		}
		m.splitStart = append(m.splitStart, int32(len(m.splits)))
		m.leafStart = append(m.leafStart, int32(len(m.leaves)))
	}
}

// ScoreRows adds the model's score of each row to out[i] (len(out) ==
// len(rows)); rows must be as FeatureRows returns them (clamped to
// ±maxThreshold), and the sums are those of Score. It takes the rows 64 at a time
// as the bits of a word. For each feature it finds, once, the set of rows
// at or below each of the model's thresholds on it (each row's place among
// the sorted thresholds by a branch-free binary search, then prefix
// unions). Then every tree sends the set of rows reaching each split down
// both sides with one AND each (parents before children, no branch), and
// adds each leaf's value to the rows reaching it. Integer addition does
// not depend on order, so the sums are exact.
func (m *Model) ScoreRows(rows []Row, out []int64) {
	sc, _ := m.scratch.Get().(*treeScratch)
	if sc == nil {
		sc = &treeScratch{left: make([]uint64, m.cutStart[NumFeatures]), reach: make([]uint64, m.widest)}
	}
	defer m.scratch.Put(sc)
	left := sc.left // per cut: rows going left at it
	reach := sc.reach
	for base := 0; base < len(rows); base += 64 {
		batch := rows[base:min(base+64, len(rows))]
		clear(left) // a batch's bits only: the last call's, or the last batch's, are in it
		for f := range NumFeatures {
			cuts, slots := m.cuts[f], left[m.cutStart[f]:m.cutStart[f+1]]
			if len(cuts) == 0 {
				continue
			}
			lastV, lastK := int64(0), -1
			for r := range batch {
				// k: how many cuts lie below the value; the row goes
				// left at cut k and every cut after it. Rows of a pool
				// often share a value (the question's, the document's).
				v := batch[r][f]
				if lastK >= 0 && v == lastV {
					slots[lastK] |= 1 << r
					continue
				}
				// Lower bound without branches to mispredict: the
				// window [k, k+n) holds the last cut below v, if any.
				// cut − v is negative exactly when cut < v (both lie
				// within ±2⁶¹), so its sign, shifted down, is the step.
				k, n := 0, len(cuts)
				for n > 1 {
					half := n / 2
					k += half & int((cuts[k+half]-v)>>63)
					n -= half
				}
				k += int(uint64(cuts[k]-v) >> 63)
				slots[k] |= 1 << r
				lastV, lastK = v, k
			}
			for k := 1; k < len(slots); k++ {
				slots[k] |= slots[k-1]
			}
		}
		all := uint64(1)<<len(batch) - 1
		if len(batch) == 64 {
			all = ^uint64(0)
		}
		// acc[64] takes the adds of rows that are not there, so that a
		// leaf's first two rows are added without a branch.
		var acc [65]int64
		for t := range len(m.splitStart) - 1 {
			reach[0] = all
			for _, sp := range m.splits[m.splitStart[t]:m.splitStart[t+1]] {
				set, l := reach[sp.self], left[sp.cut]
				reach[sp.left] = set & l
				reach[sp.right] = set &^ l
			}
			for _, lf := range m.leaves[m.leafStart[t]:m.leafStart[t+1]] {
				set, v := reach[lf.node], lf.val
				acc[bits.TrailingZeros64(set)] += v // 64 when set is empty
				set &= set - 1
				acc[bits.TrailingZeros64(set)] += v
				for set &= set - 1; set != 0; set &= set - 1 {
					acc[bits.TrailingZeros64(set)] += v
				}
			}
		}
		for r := range batch {
			out[base+r] += acc[r]
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
	if fi, err := os.Stat(path); err == nil && fi.Size() > MaxModelBytes { // before reading it
		return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrModelTooLarge, path, fi.Size(), MaxModelBytes)
	}
	raw, err := fsutil.ReadRegular(path)
	if err != nil { // its errors name the path ("rerank: bad model: m: m: not a regular file")
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	return DecodeModel(raw, path)
}

// DecodeModel checks a sealed model file; where names it in errors.
func DecodeModel(raw []byte, where string) (*Model, error) {
	if len(raw) > MaxModelBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrModelTooLarge, where, len(raw), MaxModelBytes)
	}
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
	// Every tree takes at least three bytes (its count, a leaf's two), and
	// every node two: counts the bytes left cannot hold are refused before
	// any slice is made for them.
	if d.err == nil && nt > len(d.rest())/3 {
		return nil, fmt.Errorf("%w: %s: byte %d: %d trees declared, %d bytes left", ErrModelTooLarge, where, d.off, nt, len(d.rest()))
	}
	m.trees = make([][]Node, 0, nt)
	total := 0
	for t := 0; t < nt && d.err == nil; t++ {
		nn := d.count(maxNodes, "nodes")
		if total += nn; d.err == nil && (total > MaxModelNodes || nn > len(d.rest())/2) {
			return nil, fmt.Errorf("%w: %s: byte %d: tree %d declares %d nodes (%d in all, at most %d; %d bytes left)",
				ErrModelTooLarge, where, d.off, t, nn, total, MaxModelNodes, len(d.rest()))
		}
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
