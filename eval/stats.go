package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// ErrMismatch is returned when paired samples differ in length or are empty.
var ErrMismatch = errors.New("eval: paired samples differ in length or are empty")

// Verdict is the outcome of a paired comparison of B against A.
type Verdict string

// Verdicts.
const (
	Won  Verdict = "won"  // B better: the whole 95% interval of B-A is above 0
	Lost Verdict = "lost" // B worse: the whole interval is below 0
	Tied Verdict = "tied" // the interval contains 0
)

// BootstrapResult is a paired bootstrap of mean(B) - mean(A).
type BootstrapResult struct {
	Diff      float64 // observed mean(B) - mean(A)
	Lo, Hi    float64 // 95% percentile interval of the resampled difference
	Resamples int
	Seed      uint64
	Verdict   Verdict
}

// String writes the difference, its interval, the verdict and the settings.
func (r BootstrapResult) String() string {
	return fmt.Sprintf("%+.4f [%+.4f, %+.4f] %s (bootstrap n=%d seed=%d)", r.Diff, r.Lo, r.Hi, r.Verdict, r.Resamples, r.Seed)
}

// Bootstrap resamples questions with replacement (a PCG stream seeded with
// seed) and reports the 95% interval of the mean paired difference b[i]-a[i].
func Bootstrap(a, b []float64, resamples int, seed uint64) (BootstrapResult, error) {
	if len(a) != len(b) || len(a) == 0 || resamples < 1 {
		return BootstrapResult{}, ErrMismatch
	}
	n := len(a)
	d := make([]float64, n)
	var sum float64
	for i := range a {
		d[i] = b[i] - a[i]
		sum += d[i]
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for r := range means {
		var s float64
		for range n {
			s += d[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	slices.Sort(means)
	res := BootstrapResult{Diff: sum / float64(n), Resamples: resamples, Seed: seed,
		Lo: percentile(means, 0.025), Hi: percentile(means, 0.975)}
	switch {
	case res.Lo > 0:
		res.Verdict = Won
	case res.Hi < 0:
		res.Verdict = Lost
	default:
		res.Verdict = Tied
	}
	return res, nil
}

// percentile of sorted xs by the nearest-rank method.
func percentile(xs []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// McNemarResult is McNemar's exact test on paired binary outcomes.
type McNemarResult struct {
	OnlyA int     // questions A hit and B missed
	OnlyB int     // questions B hit and A missed
	P     float64 // two-sided exact binomial p-value
}

// McNemar runs the exact (binomial) McNemar test on per-question hits.
func McNemar(a, b []bool) (McNemarResult, error) {
	if len(a) != len(b) || len(a) == 0 {
		return McNemarResult{}, ErrMismatch
	}
	var r McNemarResult
	for i := range a {
		switch {
		case a[i] && !b[i]:
			r.OnlyA++
		case b[i] && !a[i]:
			r.OnlyB++
		}
	}
	n := r.OnlyA + r.OnlyB
	if n == 0 {
		r.P = 1
		return r, nil
	}
	// P = 2 * sum_{i<=min} C(n,i) / 2^n, summed in log space to avoid underflow.
	m := min(r.OnlyA, r.OnlyB)
	lgN, _ := math.Lgamma(float64(n + 1))
	var p float64
	for i := 0; i <= m; i++ {
		lgI, _ := math.Lgamma(float64(i + 1))
		lgNI, _ := math.Lgamma(float64(n - i + 1))
		p += math.Exp(lgN - lgI - lgNI - float64(n)*math.Ln2)
	}
	r.P = math.Min(1, 2*p)
	return r, nil
}
