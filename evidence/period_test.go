package evidence

import (
	"bytes"
	"testing"

	"github.com/evpack/evpack/asof"
)

// A pack ranked for a period says so in its header; one without a period has
// exactly the bytes it had before periods existed (no key at all).
func TestPackPeriodRenderedOnlyWhenSet(t *testing.T) {
	h := Header{Question: "q", AsOf: asof.MustDate("2025-06-01"), K: 1, Generation: 3}
	plain := Assemble(h, nil, func(string) (Entry, bool) { return Entry{}, false }, []string{"pool 0"}, nil).Bytes()
	const want = `{"as_of":"2025-06-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/2","generation":3,"k":1,"question":"q","tenant":"","trace":{"dropped":[],"steps":["pool 0","dropped 0","cited 0"]}}`
	if string(plain) != want {
		t.Fatalf("without a period:\n%s\nwant\n%s", plain, want)
	}
	h.Period, h.PeriodFrom = "FY2018", "question"
	p := Assemble(h, nil, func(string) (Entry, bool) { return Entry{}, false }, []string{"pool 0"}, nil)
	b := p.Bytes()
	const withPeriod = `{"as_of":"2025-06-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/2","generation":3,"k":1,"period":"FY2018","period_from":"question","question":"q","tenant":"","trace":{"dropped":[],"steps":["pool 0","dropped 0","cited 0"]}}`
	if string(b) != withPeriod {
		t.Fatalf("with a period:\n%s\nwant\n%s", b, withPeriod)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Period != "FY2018" || back.PeriodFrom != "question" || !bytes.Equal(back.Bytes(), b) {
		t.Fatalf("parsed back: %q %q", back.Period, back.PeriodFrom)
	}
}
