package terms

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	porter "github.com/blevesearch/go-porterstemmer"
)

// splitReference is Split as first written (strings.FieldsFunc, then
// lowercase, stop words, stem): the definition the faster code must keep.
func splitReference(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if stop[w] {
			continue
		}
		out = append(out, porter.StemString(w))
	}
	return out
}

func TestSplitMatchesReference(t *testing.T) {
	texts := []string{
		"",
		"   ",
		"The Regulator SHALL require firms' reporting, of the 2024 returns.",
		"Running runs ran; runner's RUNNING-runs (a, an, the) x1 ÆON Straße İstanbul ǅemal",
		"naïve café façade 日本語のテキスト ١٢٣ Ⅻ ¼",
		"bad \xff\xfe bytes\x80in the middle\xc3",
		"tail word",
		"word.",
		"\u2028sep\u00a0nbsp\ttab\nline",
	}
	var sp Splitter
	for round := range 2 { // the second round reads the splitter's memory
		for _, s := range texts {
			want := splitReference(s)
			if got := Split(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("Split(%q) = %q, want %q", s, got, want)
			}
			if got := sp.Split(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("round %d: Splitter.Split(%q) = %q, want %q", round, s, got, want)
			}
		}
	}
}

func TestSplitterResultsAreTheCallers(t *testing.T) {
	var sp Splitter
	a := sp.Split("alpha beta gamma")
	want := slices.Clone(a)
	sp.Split("delta epsilon zeta eta theta")
	if !slices.Equal(a, want) {
		t.Fatalf("a later Split changed an earlier result: %q, want %q", a, want)
	}
}
