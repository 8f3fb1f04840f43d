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
