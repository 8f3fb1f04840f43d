package rerank

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/evpack/evpack/evidence"
)

func TestLog2Q16(t *testing.T) {
	cases := []struct {
		num, den uint64
		want     int64
		why      string
	}{
		{1, 1, 0, "log2(1)"},
		{2, 1, 65536, "log2(2) exactly"},
		{1024, 1, 10 << 16, "a power of two"},
		{1, 2, 0, "below 1 clamps to 0"},
		{5, 0, 0, "no denominator"},
	}
	for _, c := range cases {
		if got := log2Q16(c.num, c.den); got != c.want {
			t.Errorf("%s: log2Q16(%d,%d) = %d, want %d", c.why, c.num, c.den, got, c.want)
		}
	}
	for _, c := range [][2]uint64{{3, 1}, {13013, 1}, {13013, 417}, {1000001, 3}} {
		exact := math.Log2(float64(c[0])/float64(c[1])) * 65536
		if got := float64(log2Q16(c[0], c[1])); got > exact || exact-got > 2 {
			t.Errorf("log2Q16(%d,%d) = %v, want floor of %v within 2", c[0], c[1], got, exact)
		}
	}
}

type fixedStats map[string]int

func (f fixedStats) DocCount() int           { return 100 }
func (f fixedStats) DocFreq(term string) int { return f[term] }

func TestArithmeticFeaturesHandComputed(t *testing.T) {
	a, err := NewArithmetic(DefaultWeights)
	if err != nil {
		t.Fatal(err)
	}
	// Terms: "capital buffer requirement" -> capit buffer requir; the chunk
	// "The capital buffer requirement applies." -> capit buffer requir appli.
	f := a.Explain("capital buffer requirement", Candidate{ID: "c", Text: "The capital buffer requirement applies.", Rank: 1}, fixedStats{})
	want := Features{
		Coverage:  1_000_000,           // every question term present
		Density:   1_000_000 * 3 / 12,  // 3 matches / (4 tokens + 8)
		Proximity: 2 * (1_000_000 / 3), // two adjacent pairs, each (idf+idf)/(2*1*3 idf) = 1/3
		Phrase:    1_000_000,           // both question bigrams adjacent
		Prior:     1_000_000 * 60 / 61, // rank 1
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Fatal(diff)
	}
	// A rare term weighs more than a common one in coverage.
	stats := fixedStats{"capit": 99, "buffer": 1}
	rare := a.Explain("capital buffer", Candidate{Text: "buffer", Rank: 1}, stats)
	common := a.Explain("capital buffer", Candidate{Text: "capital", Rank: 1}, stats)
	if rare.Coverage <= common.Coverage {
		t.Fatalf("coverage: rare %d <= common %d", rare.Coverage, common.Coverage)
	}
}

func TestArithmeticTotalOrderAndCachedTerms(t *testing.T) {
	a, _ := NewArithmetic(DefaultWeights)
	cands := []Candidate{
		{ID: "b", Text: "same text", Rank: 1},
		{ID: "a", Text: "same text", Rank: 1},
		{ID: "c", Text: "capital buffer", Rank: 2},
	}
	got, err := a.Rerank(context.Background(), "capital buffer", cands, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ChunkID != "c" || got[1].ChunkID != "a" || got[2].ChunkID != "b" {
		t.Fatalf("want c, then the tie a before b: %+v", got)
	}
	for i := range cands {
		cands[i].Terms = Terms(cands[i].Text)
	}
	again, _ := a.Rerank(context.Background(), "capital buffer", cands, nil)
	if diff := cmp.Diff(got, again); diff != "" {
		t.Fatalf("cached terms must give the same scores: %s", diff)
	}
}

func TestNewArithmeticRejects(t *testing.T) {
	for name, w := range map[string]Weights{
		"all zero":  {},
		"negative":  {Coverage: -1, Prior: 1},
		"too large": {Coverage: 1001},
	} {
		if _, err := NewArithmetic(w); !errors.Is(err, ErrBadWeights) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRerankHonoursCancellation(t *testing.T) {
	a, _ := NewArithmetic(DefaultWeights)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Rerank(ctx, "q", []Candidate{{ID: "x", Text: "q"}}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	var _ []evidence.Scored
}

// TestPriorOfARankBelowOne: a caller's candidate at rank 0 or below (the
// engine's start at 1) ranks as rank 1; at -60 None and Arithmetic divided
// by zero.
func TestPriorOfARankBelowOne(t *testing.T) {
	for _, rank := range []int{0, -1, -60, -61} {
		out, err := None{}.Rerank(context.Background(), "q", []Candidate{{ID: "a", Text: "q", Rank: rank}}, nil)
		if err != nil || len(out) != 1 || out[0].Score != prior(1) {
			t.Fatalf("rank %d: %+v %v, want rank 1's prior %d", rank, out, err, prior(1))
		}
	}
}
