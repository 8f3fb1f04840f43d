package rerank

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
)

// TrainQuery is one labelled question's pool, as the engine handed it to the
// reranker: candidate chunk IDs in pool order, their feature rows and
// whether each is gold.
type TrainQuery struct {
	ID   string // the question's ID, for errors
	IDs  []string
	Rows []Row
	Gold []bool
}

// TrainOptions are the trainer's settings; zero values take the defaults.
type TrainOptions struct {
	Trees        int     // boosting rounds (default 300)
	Leaves       int     // leaves per tree (default 16)
	LearningRate float64 // shrinkage of every leaf (default 0.05)
	MinLeafRows  int     // fewest rows in a leaf (default 100)
	L2           float64 // added to each leaf's hessian sum (default 1)
	Subsample    float64 // share of questions each tree is fitted on, in (0, 1] (default 0.8)
	Seed         uint64  // seeds the subsample (recorded in the model even when unused)
	Bins         int     // most thresholds tried per feature, 1 to 255 (default 255)
}

// WithDefaults returns the settings with the defaults filled in, or an
// error wrapping ErrTrain naming the first setting out of range: what Train
// checks first, for a caller (the CLI) that should refuse settings before it
// reads any data.
func (o TrainOptions) WithDefaults() (TrainOptions, error) {
	if o.Trees == 0 {
		o.Trees = 300
	}
	if o.Leaves == 0 {
		o.Leaves = 16
	}
	if o.LearningRate == 0 {
		o.LearningRate = 0.05
	}
	if o.MinLeafRows == 0 {
		o.MinLeafRows = 100
	}
	if o.L2 == 0 {
		o.L2 = 1
	}
	if o.Subsample == 0 {
		o.Subsample = 0.8
	}
	if o.Bins == 0 {
		o.Bins = 255
	}
	switch {
	case o.Trees < 1 || o.Trees > maxTrees:
		return o, fmt.Errorf("%w: trees %d not in [1, %d]", ErrTrain, o.Trees, maxTrees)
	case o.Leaves < 2 || o.Leaves > 1024:
		return o, fmt.Errorf("%w: leaves %d not in [2, 1024]", ErrTrain, o.Leaves)
	case o.Trees*(2*o.Leaves-1) > MaxModelNodes: // a tree of n leaves has 2n-1 nodes
		return o, fmt.Errorf("%w: %d trees of %d leaves could hold %d nodes, more than a model may (%d)", ErrTrain, o.Trees, o.Leaves, o.Trees*(2*o.Leaves-1), MaxModelNodes)
	case !(o.LearningRate > 0 && o.LearningRate <= 1):
		return o, fmt.Errorf("%w: learning rate %v not in (0, 1]", ErrTrain, o.LearningRate)
	case o.MinLeafRows < 1:
		return o, fmt.Errorf("%w: min leaf rows %d", ErrTrain, o.MinLeafRows)
	case !(o.L2 > 0):
		return o, fmt.Errorf("%w: l2 %v must be positive", ErrTrain, o.L2)
	case !(o.Subsample > 0 && o.Subsample <= 1):
		return o, fmt.Errorf("%w: subsample %v not in (0, 1]", ErrTrain, o.Subsample)
	case o.Bins < 1 || o.Bins > 255:
		return o, fmt.Errorf("%w: bins %d not in [1, 255]", ErrTrain, o.Bins)
	}
	return o, nil
}

// String is the settings, defaults filled in, as the model's training
// record writes them.
func (o TrainOptions) String() string {
	if d, err := o.WithDefaults(); err == nil {
		o = d
	}
	return fmt.Sprintf("trees=%d leaves=%d lr=%s min_leaf=%d l2=%s subsample=%s seed=%d bins=%d",
		o.Trees, o.Leaves, fmtFloat(o.LearningRate), o.MinLeafRows, fmtFloat(o.L2), fmtFloat(o.Subsample), o.Seed, o.Bins)
}

func fmtFloat(f float64) string { return fmt.Sprintf("%g", f) }

// TrainDigest names training data: BLAKE3 over every question's ID and every
// candidate's ID, gold flag and feature row, in order.
func TrainDigest(qs []TrainQuery) string {
	h := blake3.New()
	var b []byte
	for _, q := range qs {
		b = append(b[:0], q.ID...)
		b = append(b, 0)
		for i, id := range q.IDs {
			b = append(b, id...)
			b = append(b, 0)
			if q.Gold[i] {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
			for _, v := range q.Rows[i] {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		}
		h.Write(b)
	}
	return evidence.HashPrefix + fmt.Sprintf("%x", h.Sum(nil))
}

// Train fits a LambdaMART model (gradient boosted regression trees on the
// LambdaRank gradients of NDCG, with Newton leaf values) to qs. It is
// deterministic: one goroutine, every sum in row order, every tie broken by
// the lowest feature, threshold and leaf, the subsample drawn from Seed; so
// the same input and options give a byte-identical model file whatever
// GOMAXPROCS. Floats are used only while training; the model keeps integer
// thresholds (values of the features) and integer leaves (fixed point).
func Train(qs []TrainQuery, opts TrainOptions) (*Model, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	t := &trainer{o: o}
	if err := t.load(qs); err != nil {
		return nil, err
	}
	t.makeBins()
	trees := make([][]Node, 0, o.Trees)
	split := false
	for k := 0; k < o.Trees; k++ {
		t.lambdas(k)
		tree := t.fitTree()
		for r := range t.rows {
			t.score[r] += scoreTree(tree, &t.rows[r])
		}
		trees = append(trees, tree)
		split = split || len(tree) > 1
	}
	if !split {
		// Every tree is one leaf, which adds one value (about zero: each
		// question's LambdaRank gradients sum to zero) to every candidate:
		// the model would score every candidate the same, and chunk IDs
		// alone would order the pool. Too few rows for MinLeafRows, or features that never
		// separate gold from the rest: refused, never saved as a model.
		return nil, fmt.Errorf("%w: no tree found a split: %d candidates in %d questions with both gold and non-gold, and a split needs %d rows a side (min leaf rows) and a gain",
			ErrTrain, len(t.rows), len(t.queries), o.MinLeafRows)
	}
	record := fmt.Sprintf("lambdamart/1 ndcg %s questions=%d rows=%d data=%s", o, len(t.queries), len(t.rows), TrainDigest(qs))
	return NewModel(record, trees)
}

func scoreTree(nodes []Node, r *Row) int64 {
	i := int32(0)
	for nodes[i].Feature >= 0 {
		if r[nodes[i].Feature] <= nodes[i].Threshold {
			i = nodes[i].Left
		} else {
			i = nodes[i].Right
		}
	}
	return nodes[i].Value
}

type trainQuery struct {
	start, end int // rows
	nGold      int
	idcg       float64
}

type trainer struct {
	o       TrainOptions
	queries []trainQuery
	rows    []Row
	ids     []string
	gold    []bool
	score   []int64
	thr     [NumFeatures][]int64
	bins    [][NumFeatures]uint8
	grad    []float64
	hess    []float64
	in      []bool // row is in this tree's subsample
	disc    []float64
	order   []int
	hg, hh  [NumFeatures][256]float64 // split histograms, reused
	hc      [NumFeatures][256]int
}

func (t *trainer) load(qs []TrainQuery) error {
	maxPool := 0
	for _, q := range qs {
		if len(q.IDs) != len(q.Rows) || len(q.IDs) != len(q.Gold) {
			return fmt.Errorf("%w: question %s: %d IDs, %d rows, %d labels", ErrTrain, q.ID, len(q.IDs), len(q.Rows), len(q.Gold))
		}
		nGold := 0
		for _, g := range q.Gold {
			if g {
				nGold++
			}
		}
		if nGold == 0 || nGold == len(q.IDs) {
			continue // no pair to learn from
		}
		tq := trainQuery{start: len(t.rows), nGold: nGold}
		t.rows = append(t.rows, q.Rows...)
		t.ids = append(t.ids, q.IDs...)
		t.gold = append(t.gold, q.Gold...)
		tq.end = len(t.rows)
		t.queries = append(t.queries, tq)
		maxPool = max(maxPool, len(q.IDs))
	}
	if len(t.queries) == 0 {
		return fmt.Errorf("%w: no question has both a gold and a non-gold chunk in its pool", ErrTrain)
	}
	t.disc = make([]float64, maxPool)
	for r := range t.disc {
		t.disc[r] = 1 / math.Log2(float64(r)+2)
	}
	for i := range t.queries {
		q := &t.queries[i]
		for r := 0; r < q.nGold; r++ {
			q.idcg += t.disc[r]
		}
	}
	n := len(t.rows)
	t.score, t.grad, t.hess, t.in = make([]int64, n), make([]float64, n), make([]float64, n), make([]bool, n)
	return nil
}

// makeBins chooses each feature's thresholds (values of the feature: a row
// goes left when its value is at most the threshold) and bins every row.
func (t *trainer) makeBins() {
	vals := make([]int64, len(t.rows))
	for f := range NumFeatures {
		for r := range t.rows {
			vals[r] = t.rows[r][f]
		}
		slices.Sort(vals)
		distinct := slices.Compact(slices.Clone(vals))
		var thr []int64
		if len(distinct)-1 <= t.o.Bins {
			thr = distinct[:len(distinct)-1]
		} else {
			for k := 1; k <= t.o.Bins; k++ {
				v := vals[k*len(vals)/(t.o.Bins+1)]
				if v < distinct[len(distinct)-1] && (len(thr) == 0 || v > thr[len(thr)-1]) {
					thr = append(thr, v)
				}
			}
		}
		t.thr[f] = thr
	}
	t.bins = make([][NumFeatures]uint8, len(t.rows))
	for r := range t.rows {
		for f := range NumFeatures {
			b, _ := slices.BinarySearch(t.thr[f], t.rows[r][f])
			t.bins[r][f] = uint8(b)
		}
	}
}

// lambdas computes the LambdaRank gradients and hessians for tree k and
// draws its subsample.
func (t *trainer) lambdas(k int) {
	clear(t.grad)
	clear(t.hess)
	var rng *rand.Rand
	if t.o.Subsample < 1 {
		rng = rand.New(rand.NewPCG(t.o.Seed, uint64(k)))
	}
	rank := make([]int, 0, len(t.disc))
	for _, q := range t.queries {
		in := rng == nil || rng.Float64() < t.o.Subsample
		for r := q.start; r < q.end; r++ {
			t.in[r] = in
		}
		if !in {
			continue
		}
		// The order inference gives: score descending, ties by chunk ID.
		t.order = t.order[:0]
		for r := q.start; r < q.end; r++ {
			t.order = append(t.order, r)
		}
		slices.SortFunc(t.order, func(a, b int) int {
			if t.score[a] != t.score[b] {
				if t.score[a] > t.score[b] {
					return -1
				}
				return 1
			}
			return strings.Compare(t.ids[a], t.ids[b])
		})
		rank = rank[:q.end-q.start]
		for pos, r := range t.order {
			rank[r-q.start] = pos
		}
		for i := q.start; i < q.end; i++ {
			if !t.gold[i] {
				continue
			}
			for j := q.start; j < q.end; j++ {
				if t.gold[j] {
					continue
				}
				delta := math.Abs(t.disc[rank[i-q.start]]-t.disc[rank[j-q.start]]) / q.idcg
				ds := float64(t.score[i]-t.score[j]) / evidence.ScoreScale
				rho := 1 / (1 + math.Exp(ds))
				g := float64(delta * rho)
				h := float64(delta * float64(rho*(1-rho)))
				t.grad[i] += g
				t.grad[j] -= g
				t.hess[i] += h
				t.hess[j] += h
			}
		}
	}
}

// leaf is a growing leaf: its rows (a range of part) and its best split.
type leaf struct {
	node       int
	lo, hi     int
	g, h       float64
	feature    int
	thrBin     int
	gain       float64
	gl, hl     float64
	splittable bool
}

// fitTree grows one tree leaf by leaf on the gradients: each step splits the
// leaf whose best split gains most (ties: the earliest leaf).
func (t *trainer) fitTree() []Node {
	part := make([]int, 0, len(t.rows))
	for r := range t.rows {
		if t.in[r] {
			part = append(part, r)
		}
	}
	nodes := []Node{{Feature: -1}}
	root := &leaf{node: 0, lo: 0, hi: len(part)}
	for _, r := range part {
		root.g += t.grad[r]
		root.h += t.hess[r]
	}
	leaves := []*leaf{root}
	t.findSplit(root, part)
	buf := make([]int, len(part))
	for len(leaves) < t.o.Leaves {
		best := -1
		for i, l := range leaves {
			if l.splittable && (best < 0 || l.gain > leaves[best].gain) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		l := leaves[best]
		// Stable partition: left rows, then right rows, each in row order.
		nl := 0
		for _, r := range part[l.lo:l.hi] {
			if int(t.bins[r][l.feature]) <= l.thrBin {
				buf[nl] = r
				nl++
			}
		}
		nr := nl
		for _, r := range part[l.lo:l.hi] {
			if int(t.bins[r][l.feature]) > l.thrBin {
				buf[nr] = r
				nr++
			}
		}
		copy(part[l.lo:l.hi], buf[:nr])
		li, ri := len(nodes), len(nodes)+1
		nodes[l.node] = Node{Feature: int32(l.feature), Threshold: t.thr[l.feature][l.thrBin], Left: int32(li), Right: int32(ri)}
		nodes = append(nodes, Node{Feature: -1}, Node{Feature: -1})
		left := &leaf{node: li, lo: l.lo, hi: l.lo + nl, g: l.gl, h: l.hl}
		right := &leaf{node: ri, lo: l.lo + nl, hi: l.hi, g: l.g - l.gl, h: l.h - l.hl}
		// Sums of the children recomputed in row order, not by subtraction,
		// so that each leaf's value depends on its rows alone.
		left.g, left.h = t.sums(part[left.lo:left.hi])
		right.g, right.h = t.sums(part[right.lo:right.hi])
		t.findSplit(left, part)
		t.findSplit(right, part)
		leaves[best] = left
		leaves = slices.Insert(leaves, best+1, right)
	}
	for _, l := range leaves {
		v := t.o.LearningRate * l.g / (l.h + t.o.L2) * evidence.ScoreScale
		v = math.Max(-maxLeafValue, math.Min(maxLeafValue, math.Round(v)))
		nodes[l.node].Value = int64(v)
	}
	return nodes
}

func (t *trainer) sums(rows []int) (g, h float64) {
	for _, r := range rows {
		g += t.grad[r]
		h += t.hess[r]
	}
	return g, h
}

// findSplit sets l's best split: the feature and threshold maximizing
// G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ), each side keeping MinLeafRows rows.
func (t *trainer) findSplit(l *leaf, part []int) {
	l.splittable = false
	n := l.hi - l.lo
	if n < 2*t.o.MinLeafRows {
		return
	}
	hg, hh, hc := &t.hg, &t.hh, &t.hc
	clear(hg[:])
	clear(hh[:])
	clear(hc[:])
	for _, r := range part[l.lo:l.hi] {
		g, h := t.grad[r], t.hess[r]
		b := &t.bins[r]
		for f := range NumFeatures {
			hg[f][b[f]] += g
			hh[f][b[f]] += h
			hc[f][b[f]]++
		}
	}
	lam := t.o.L2
	parent := l.g * l.g / (l.h + lam)
	bestGain := 1e-12
	for f := range NumFeatures {
		var gl, hl float64
		cl := 0
		for b := range t.thr[f] {
			gl += hg[f][b]
			hl += hh[f][b]
			cl += hc[f][b]
			if cl < t.o.MinLeafRows {
				continue
			}
			if n-cl < t.o.MinLeafRows {
				break
			}
			gr, hr := l.g-gl, l.h-hl
			gain := float64(gl*gl/(hl+lam)) + float64(gr*gr/(hr+lam)) - parent
			if gain > bestGain {
				bestGain = gain
				l.splittable, l.feature, l.thrBin, l.gain, l.gl, l.hl = true, f, b, gain, gl, hl
			}
		}
	}
}
