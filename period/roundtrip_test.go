package period

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestParsedPeriodsRoundTrip: whatever a question names, the period Parse
// finds is one ParseCanonical reads back from its String (a pack stores
// the String and ranks for what it parses back: a period that did not round
// trip would be shown and never ranked for), and Parse gives the same
// period on every call. Questions are drawn from the phrasings' pieces and
// hostile ones (years 0, 10000, quarter 5, 31 February, NUL, bytes that are
// not UTF-8, other digits).
func TestParsedPeriodsRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	pieces := []string{"FY", "fy ", "fiscal ", "fiscal year ", "Q", "q", "in ", "as of ", "for ", "from ", "to ", "December ", "Feb. ", "1st ", "31st ", "of ",
		"2018", "2021", "1999", "2049", "2099", "1900", "0", "00", "99", "49", "50", "10000", "0999", "-1", "5", "1", "4", "29", "30", "31", "02", "12", "13",
		"-", "-Q", ", ", " ", "'", "\x00", "\xff", "\u0661\u0669", "\uff12\uff10\uff12\uff11", "quarter ", "third ", "second fiscal ", "the ", "vs ", "/"}
	parsed := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(9) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		q := b.String()
		p, ok := Parse(q)
		if !ok {
			if !p.IsZero() {
				t.Fatalf("seed %d: %q: no period, yet %+v", seed, q, p)
			}
			continue
		}
		parsed++
		back, err := ParseCanonical(p.String())
		if err != nil || back != p {
			t.Fatalf("seed %d: %q: parsed %+v, its form %q reads back as %+v (%v)", seed, q, p, p.String(), back, err)
		}
		if again, _ := Parse(q); again != p {
			t.Fatalf("seed %d: %q: %+v, then %+v", seed, q, p, again)
		}
	}
	t.Logf("%d of 20000 questions named a period", parsed)
	if parsed < 300 {
		t.Fatalf("seed %d: the draw named too few periods (%d)", seed, parsed)
	}
}
