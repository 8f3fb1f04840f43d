package rerank

import (
	"context"
	"errors"
	"fmt"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/terms"
)

// ErrBadWeights is returned by NewArithmetic for negative or all-zero weights.
var ErrBadWeights = errors.New("rerank: bad weights")

// Weights are the integer weights of the Arithmetic reranker's features.
// Each feature lies in [0, evidence.ScoreScale].
type Weights struct {
	Coverage  int64 // IDF-weighted share of the question's terms the chunk contains
	Density   int64 // question-term occurrences per chunk token
	Proximity int64 // how close together different question terms occur
	Phrase    int64 // share of the question's adjacent term pairs found adjacent
	Prior     int64 // the fused rank, 60/(60+rank)
}

// DefaultWeights were tuned on the ObliQA dev split (see docs/benchmarks.md).
// Proximity earned weight 0 there: every top configuration of the grid left it
// out. It stays a feature so that other corpora can weigh it.
var DefaultWeights = Weights{Coverage: 1, Density: 2, Proximity: 0, Phrase: 4, Prior: 4}

// Arithmetic is the reranker of integer features of the candidate alone
// (no document context): bit-stable because it uses integers only. The
// engine's default is the learned reranker; Arithmetic is its fallback. It
// is safe for concurrent use.
type Arithmetic struct {
	w Weights
}

// NewArithmetic validates w and returns the reranker.
func NewArithmetic(w Weights) (*Arithmetic, error) {
	ws := []int64{w.Coverage, w.Density, w.Proximity, w.Phrase, w.Prior}
	var sum int64
	for _, x := range ws {
		if x < 0 || x > 1000 {
			return nil, fmt.Errorf("%w: each weight must be in [0, 1000], got %+v", ErrBadWeights, w)
		}
		sum += x
	}
	if sum == 0 {
		return nil, fmt.Errorf("%w: all weights are zero", ErrBadWeights)
	}
	return &Arithmetic{w: w}, nil
}

// Name implements Reranker.
func (a *Arithmetic) Name() string {
	return fmt.Sprintf("arithmetic/1 coverage=%d density=%d proximity=%d phrase=%d prior=%d %s",
		a.w.Coverage, a.w.Density, a.w.Proximity, a.w.Phrase, a.w.Prior, terms.Version)
}

// DefaultArithmetic returns the Arithmetic reranker with DefaultWeights
// (tuned on ObliQA dev): the engine's default before the learned reranker,
// now one option away from it (evpack.Options.Reranker), and the fallback
// when a learned model cannot be loaded.
func DefaultArithmetic() *Arithmetic { return &Arithmetic{w: DefaultWeights} }

// Features are one candidate's feature values, for explanations and tuning.
type Features struct {
	Coverage, Density, Proximity, Phrase, Prior int64
}

// Rerank implements Reranker.
func (a *Arithmetic) Rerank(ctx context.Context, question string, cands []Candidate, stats Stats) ([]evidence.Scored, error) {
	q := newQuery(question, stats)
	out := make([]evidence.Scored, len(cands))
	for i, c := range cands {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		f := q.features(c)
		out[i] = evidence.Scored{ChunkID: c.ID, Score: a.combine(f)}
	}
	sortScored(out)
	return out, nil
}

// Explain returns the features of one candidate: debugging data, never part of
// a pack.
func (a *Arithmetic) Explain(question string, c Candidate, stats Stats) Features {
	return newQuery(question, stats).features(c)
}

func (a *Arithmetic) combine(f Features) int64 {
	sum := a.w.Coverage + a.w.Density + a.w.Proximity + a.w.Phrase + a.w.Prior
	return (a.w.Coverage*f.Coverage + a.w.Density*f.Density + a.w.Proximity*f.Proximity +
		a.w.Phrase*f.Phrase + a.w.Prior*f.Prior) / sum
}

type query struct {
	idf      map[string]int64 // Q16 log2 IDF per distinct term
	total    int64            // sum of idf
	bigrams  map[[2]string]bool
	nBigrams int64
}

func newQuery(question string, stats Stats) *query {
	q := &query{idf: map[string]int64{}, bigrams: map[[2]string]bool{}}
	toks := terms.Split(question)
	for i, t := range toks {
		if _, ok := q.idf[t]; !ok {
			v := idf(stats, t)
			q.idf[t] = v
			q.total += v
		}
		if i > 0 && toks[i-1] != t {
			bg := [2]string{toks[i-1], t}
			if !q.bigrams[bg] {
				q.bigrams[bg] = true
				q.nBigrams++
			}
		}
	}
	return q
}

// idf is log2((N+1)/(df+1)) in Q16, at least 1/16 so a term in every chunk
// still counts for coverage.
func idf(stats Stats, term string) int64 {
	n, df := 0, 0
	if stats != nil {
		n, df = stats.DocCount(), stats.DocFreq(term)
	}
	if df > n {
		df = n
	}
	v := log2Q16(uint64(n)+1, uint64(df)+1)
	if v < 1<<12 {
		v = 1 << 12
	}
	return v
}

const s = evidence.ScoreScale

func (q *query) features(c Candidate) Features {
	f := Features{Prior: prior(c.Rank)}
	if q.total == 0 {
		return f
	}
	toks := c.Terms
	if toks == nil {
		toks = terms.Split(c.Text)
	}
	present := map[string]bool{}
	var matched int64
	type hit struct {
		pos  int
		term string
	}
	var hits []hit
	for pos, t := range toks {
		if _, ok := q.idf[t]; ok {
			present[t] = true
			matched++
			hits = append(hits, hit{pos, t})
		}
	}
	var covered int64
	for t := range present { // summing integers: order cannot matter
		covered += q.idf[t]
	}
	f.Coverage = s * covered / q.total
	f.Density = min(s, s*matched/int64(len(toks)+8))

	// Proximity: adjacent hits on different terms, closer is better.
	var prox int64
	for i := 1; i < len(hits); i++ {
		a, b := hits[i-1], hits[i]
		gap := int64(b.pos - a.pos)
		if a.term == b.term || gap > 10 {
			continue
		}
		prox += (q.idf[a.term] + q.idf[b.term]) * s / (2 * gap * q.total)
	}
	f.Proximity = min(s, prox)

	// Phrase: the question's adjacent pairs found adjacent in the chunk.
	if q.nBigrams > 0 {
		found := map[[2]string]bool{}
		for i := 1; i < len(hits); i++ {
			bg := [2]string{hits[i-1].term, hits[i].term}
			if hits[i].pos-hits[i-1].pos == 1 && q.bigrams[bg] {
				found[bg] = true
			}
		}
		f.Phrase = s * int64(len(found)) / q.nBigrams
	}
	return f
}

// log2Q16 returns floor(log2(num/den) * 65536) for num >= den > 0, computed
// with integers only (the squaring method), and 0 for num < den.
func log2Q16(num, den uint64) int64 {
	if den == 0 || num < den {
		return 0
	}
	var k uint
	for num >= den<<(k+1) {
		k++
	}
	// y = num / (den * 2^k) in Q30, y in [1, 2).
	const one = uint64(1) << 30
	y := (num << 30) / (den << k)
	res := int64(k) << 16
	for bit := int64(1) << 15; bit > 0; bit >>= 1 {
		y = y * y >> 30
		if y >= 2*one {
			y >>= 1
			res |= bit
		}
	}
	return res
}
