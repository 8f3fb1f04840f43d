package evidence

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStrEscapes pins the canonical string form byte for byte: the pack
// bytes, and so every pack hash, are made of it.
func TestStrEscapes(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, why string
	}{
		{"empty", "", `""`, "an empty string is two quotes"},
		{"plain", "Article 4(2)", `"Article 4(2)"`, "printable ASCII is written as it is"},
		{"html", "<a & b>", `"<a & b>"`, "no HTML escapes: the form is not for browsers"},
		{"quote and backslash", `say "a\b"`, `"say \"a\\b\""`, "the two escapes JSON requires"},
		{"short controls", "\b\t\n\f\r", `"\b\t\n\f\r"`, "the five short forms"},
		{"other controls", "\x00\x1f", `"\u0000\u001f"`, "other controls as \\u00XX, lower-case hex"},
		{"delete", "\x7f", "\"\x7f\"", "DEL is not a control JSON must escape"},
		{"multi-byte", "Käse — 東京 🙂", `"Käse — 東京 🙂"`, "valid UTF-8 is written raw"},
		{"replacement char", "\uFFFD", "\"\uFFFD\"", "a real U+FFFD is valid UTF-8, written raw"},
		{"invalid byte", "a\xffb", `"a\ufffdb"`, "a byte that is not UTF-8 becomes the escape of U+FFFD"},
		{"truncated rune", "x\xe6\x9d", `"x\ufffd\ufffd"`, "each byte of a cut-off sequence is replaced on its own"},
		{"escape at the end", "end\n", `"end\n"`, "a run before the last escape is written"},
		{"escape at the start", "\"start", `"\"start"`, "and the run after the first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w canon
			w.str(tc.in)
			if got := w.b.String(); got != tc.want {
				t.Errorf("str(%q) = %s, want %s (%s)", tc.in, got, tc.want, tc.why)
			}
		})
	}
}

// strByRune is the canonical string form written one rune at a time, as
// render.go wrote it before it copied runs: the reference the faster form
// must equal.
func strByRune(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// TestStrMatchesRuneByRune: on random strings mixing printable ASCII,
// escapes, multi-byte runes and bytes that are not UTF-8, str writes what
// the rune-by-rune form writes.
func TestStrMatchesRuneByRune(t *testing.T) {
	seed := uint64(20261204)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	pieces := []string{"a", "Z", " ", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "東", "🙂",
		"\uFFFD", "\xff", "\xe6", "\x9d", "\xc3", "\xf0\x9f"}
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := rng.IntN(12); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		var w canon
		w.str(in)
		if got, want := w.b.String(), strByRune(in); got != want {
			t.Fatalf("seed %d, case %d: str(%q) = %s, the rune-by-rune form %s", seed, n, in, got, want)
		}
	}
}
