package eval

import (
	"errors"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestScoreHandComputed(t *testing.T) {
	l2 := func(i float64) float64 { return 1 / math.Log2(i+1) }
	cases := []struct {
		name   string
		ranked []string
		gold   []string
		k      int
		want   Scores
	}{
		{"two of three gold, at ranks 1 and 3", []string{"a", "x", "b", "y", "c"}, []string{"a", "b", "d"}, 5,
			Scores{Recall: 2.0 / 3, AP: (1 + 2.0/3) / 3, NDCG: (l2(1) + l2(3)) / (l2(1) + l2(2) + l2(3)), RR: 1, Hit: true}},
		{"cutoff 2 keeps one gold", []string{"a", "x", "b"}, []string{"a", "b", "d"}, 2,
			Scores{Recall: 1.0 / 3, AP: 1.0 / 3, NDCG: l2(1) / (l2(1) + l2(2)), RR: 1, Hit: true}},
		{"gold absent", []string{"x", "y"}, []string{"a"}, 10, Scores{}},
		{"repeated id counts once, at its first rank", []string{"x", "x", "a"}, []string{"a"}, 2,
			Scores{Recall: 1, AP: 0.5, NDCG: l2(2) / l2(1), RR: 0.5, Hit: true}},
		{"first gold at rank 4", []string{"w", "x", "y", "a"}, []string{"a", "b"}, 10,
			Scores{Recall: 0.5, AP: 0.25 / 2, NDCG: l2(4) / (l2(1) + l2(2)), RR: 0.25, Hit: true}},
		{"no gold scores zero", []string{"a"}, nil, 10, Scores{}},
	}
	for _, c := range cases {
		got := Score(c.ranked, c.gold, c.k)
		if !near(got.Recall, c.want.Recall) || !near(got.AP, c.want.AP) || !near(got.NDCG, c.want.NDCG) ||
			!near(got.RR, c.want.RR) || got.Hit != c.want.Hit {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	s := Summarize([]Scores{{Recall: 1, AP: 1, Hit: true}, {Recall: 0, AP: 0.5}})
	if s.Questions != 2 || s.Recall != 0.5 || s.MAP != 0.75 || s.HitRate != 0.5 {
		t.Fatalf("summary %+v", s)
	}
}

func TestBootstrapKnownCases(t *testing.T) {
	zeros, ones := make([]float64, 50), make([]float64, 50)
	for i := range ones {
		ones[i] = 1
	}
	r, err := Bootstrap(zeros, ones, 1000, 7)
	if err != nil || r.Diff != 1 || r.Lo != 1 || r.Hi != 1 || r.Verdict != Won {
		t.Fatalf("a constant gain of 1: %+v %v", r, err)
	}
	r, _ = Bootstrap(ones, zeros, 1000, 7)
	if r.Verdict != Lost || r.Hi != -1 {
		t.Fatalf("a constant loss: %+v", r)
	}
	r, _ = Bootstrap(ones, ones, 1000, 7)
	if r.Verdict != Tied || r.Lo != 0 || r.Hi != 0 {
		t.Fatalf("no change: %+v", r)
	}
	// Half the questions gain 1, half lose 1: mean 0, interval about
	// +-1.96*sqrt(1/n) = +-0.277 for n = 50; the verdict is a tie.
	a, b := make([]float64, 50), make([]float64, 50)
	for i := range a {
		if i%2 == 0 {
			b[i] = 1
		} else {
			a[i] = 1
		}
	}
	r, _ = Bootstrap(a, b, 10000, 1)
	if r.Verdict != Tied || r.Diff != 0 || r.Lo > -0.2 || r.Lo < -0.36 || r.Hi < 0.2 || r.Hi > 0.36 {
		t.Fatalf("symmetric case: %+v", r)
	}
	again, _ := Bootstrap(a, b, 10000, 1)
	if again != r {
		t.Fatal("same seed must give the same interval")
	}
	if _, err := Bootstrap(a, b[:3], 10, 1); !errors.Is(err, ErrMismatch) {
		t.Fatalf("length mismatch: %v", err)
	}
}

func TestMcNemarExact(t *testing.T) {
	cases := []struct {
		name         string
		onlyA, onlyB int
		want         float64
	}{
		{"5 to 0: 2 * (1/2)^5", 5, 0, 0.0625},
		{"10 to 0: 2 / 1024", 0, 10, 2.0 / 1024},
		{"1 to 1: capped at 1", 1, 1, 1},
		{"3 to 1: 2 * (1+4)/16", 3, 1, 0.625},
		{"no discordant pairs", 0, 0, 1},
	}
	for _, c := range cases {
		var a, b []bool
		for range c.onlyA {
			a, b = append(a, true), append(b, false)
		}
		for range c.onlyB {
			a, b = append(a, false), append(b, true)
		}
		a, b = append(a, true, false), append(b, true, false) // concordant pairs do not count
		r, err := McNemar(a, b)
		if err != nil || r.OnlyA != c.onlyA || r.OnlyB != c.onlyB || math.Abs(r.P-c.want) > 1e-12 {
			t.Errorf("%s: %+v %v, want p=%v", c.name, r, err, c.want)
		}
	}
}
