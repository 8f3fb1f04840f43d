package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEnded: a value followed by white space has ended; one followed by a
// stray '}' or ']', which json.Decoder.More misses, or by more data has not.
func TestEnded(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     bool
	}{
		{"white space after", "{\"a\":1} \n\t", true},
		{"a stray brace", `{"a":1}}`, false},
		{"a stray bracket", `{"a":1}]`, false},
		{"a second value", `{"a":1} {"a":2}`, false},
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(c.in)))
		var v map[string]int
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := Ended(dec); got != c.want {
			t.Errorf("%s: Ended %t, want %t", c.name, got, c.want)
		}
	}
}

// TestTrailing: the offset of the first byte after the value and its
// white space, or -1.
func TestTrailing(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{`{"a":1}  `, -1}, {`{"a":1} }`, 8}, {`[1]x`, 3}} {
		in, want := c.in, c.want
		dec := json.NewDecoder(bytes.NewReader([]byte(in)))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := Trailing([]byte(in), dec); got != want {
			t.Errorf("%q: Trailing %d, want %d", in, got, want)
		}
	}
}

// TestDuplicateKey: a key given twice in any object, compared regardless
// of case as encoding/json matches fields, at the offset of its second
// appearance; none in distinct objects.
func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		name, in, err string
		off           int64
	}{
		{"none", `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, "", -1},
		{"top level", `{"a":1,"a":2}`, `key "a" appears twice in one object`, 7},
		{"another case", `{"gold":1, "Gold":2}`, `key "gold" appears twice in one object (as "Gold")`, 11},
		{"nested in an array", `[{"x":1},{"y":1,"y":2}]`, `key "y" appears twice in one object`, 16},
	} {
		off, err := DuplicateKey([]byte(c.in))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		case off != c.off:
			t.Errorf("%s: offset %d, want %d", c.name, off, c.off)
		}
	}
}
