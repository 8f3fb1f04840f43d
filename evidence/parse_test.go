package evidence

import (
	"errors"
	"testing"

	"github.com/evpack/evpack/asof"
)

// Parse refuses header values no index writes, with ErrBadPack naming the
// field (issue 31, item 12: "generation": -1 parsed on b3bfa5e, and the
// service answered 409 "does not hold" instead of 400).
func TestParseRefusesImpossibleHeaders(t *testing.T) {
	cite := func(i int) Citation {
		return Citation{Index: i, ChunkID: "c", DocID: "d", Text: "t", SourceURL: "u", ContentHash: "blake3:00"}
	}
	for _, tc := range []struct {
		name, want string
		p          Pack
	}{
		{"negative generation", "evidence: malformed pack: generation -1 is negative", Pack{Question: "q", K: 1, Generation: -1}},
		{"k zero", "evidence: malformed pack: k 0 is below 1", Pack{Question: "q", K: 0}},
		{"more citations than k", "evidence: malformed pack: citations: 2, more than k 1", Pack{Question: "q", K: 1, Citations: []Citation{cite(1), cite(2)}}},
		{"index out of order", "evidence: malformed pack: citations[1].index is 3, want 2", Pack{Question: "q", K: 3, Citations: []Citation{cite(1), cite(3)}}},
	} {
		tc.p.AsOf = asof.MustDate("2020-01-01")
		_, err := Parse(tc.p.Bytes())
		if !errors.Is(err, ErrBadPack) || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	ok := Pack{Question: "q", AsOf: asof.MustDate("2020-01-01"), K: 2, Citations: []Citation{cite(1)}}
	if _, err := Parse(ok.Bytes()); err != nil {
		t.Fatalf("a pack with sound header values: %v", err)
	}
}

// The first form has no generation and the current one needs it: a pack of
// either renders back in its own form, and one mixing them is refused.
func TestParseFormatV1(t *testing.T) {
	p := Pack{Format: FormatV1, Question: "q", AsOf: asof.MustDate("2020-01-01"), K: 1}
	raw := p.Bytes()
	if got := string(raw); got != `{"as_of":"2020-01-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/1","k":1,"question":"q","tenant":"","trace":{"dropped":[],"steps":[]}}` {
		t.Fatalf("FormatV1 bytes: %s", got)
	}
	back, err := Parse(raw)
	if err != nil || back.Format != FormatV1 {
		t.Fatalf("Parse: %v, format %q", err, back.Format)
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"as_of":"2020-01-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/1","generation":0,"k":1,"question":"q","tenant":"","trace":{"dropped":[],"steps":[]}}`,
			`evidence: malformed pack: format "evpack-pack/1" has no generation`},
		{`{"as_of":"2020-01-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/2","k":1,"question":"q","tenant":"","trace":{"dropped":[],"steps":[]}}`,
			`evidence: malformed pack: format "evpack-pack/2" needs a generation`},
		{`{"as_of":"2020-01-01","citations":[],"filters":[],"fingerprint":{},"format":"evpack-pack/9","generation":0,"k":1,"question":"q","tenant":"","trace":{"dropped":[],"steps":[]}}`,
			`evidence: malformed pack: format "evpack-pack/9", this build reads "evpack-pack/2" and "evpack-pack/1"`},
	} {
		if _, err := Parse([]byte(tc.raw)); !errors.Is(err, ErrBadPack) || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
