package eval

import (
	"math"
)

// Scores are one question's metrics at a cutoff k.
type Scores struct {
	Recall float64 // gold found in the top k / number of gold
	AP     float64 // sum of precision at each rank <= k holding gold / number of gold
	NDCG   float64 // binary-relevance nDCG@k
	RR     float64 // 1 / rank of the first gold within k, else 0
	Hit    bool    // any gold within k
}

// Score computes the metrics of ranked (best first) against gold at cutoff
// k. A question with no gold scores 0 everywhere (trec_eval counts such a
// question only if asked to; the ObliQA rules count every question, and every
// ObliQA question has gold). Repeated IDs in ranked count once, at their first
// rank.
func Score(ranked []string, gold []string, k int) Scores {
	var s Scores
	g := map[string]bool{}
	for _, id := range gold {
		g[id] = true
	}
	if len(g) == 0 || k <= 0 {
		return s
	}
	seen := map[string]bool{}
	found := 0
	var dcg float64
	rank := 0
	for _, id := range ranked {
		if rank == k {
			break
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		rank++
		if !g[id] {
			continue
		}
		found++
		s.AP += float64(found) / float64(rank)
		dcg += 1 / math.Log2(float64(rank)+1)
		if s.RR == 0 {
			s.RR = 1 / float64(rank)
		}
	}
	var idcg float64
	for i := 1; i <= min(len(g), k); i++ {
		idcg += 1 / math.Log2(float64(i)+1)
	}
	s.Recall = float64(found) / float64(len(g))
	s.AP /= float64(len(g))
	s.NDCG = dcg / idcg
	s.Hit = found > 0
	return s
}

// Summary is the mean of per-question scores.
type Summary struct {
	Questions int
	Recall    float64
	MAP       float64
	NDCG      float64
	MRR       float64
	HitRate   float64
}

// Summarize averages per-question scores in order (so the float sum is the
// same on every run).
func Summarize(per []Scores) Summary {
	s := Summary{Questions: len(per)}
	if len(per) == 0 {
		return s
	}
	for _, p := range per {
		s.Recall += p.Recall
		s.MAP += p.AP
		s.NDCG += p.NDCG
		s.MRR += p.RR
		if p.Hit {
			s.HitRate++
		}
	}
	n := float64(len(per))
	s.Recall /= n
	s.MAP /= n
	s.NDCG /= n
	s.MRR /= n
	s.HitRate /= n
	return s
}
