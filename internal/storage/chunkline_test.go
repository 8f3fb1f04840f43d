package storage

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
)

// canonicalLine returns the line EncodeBatchLines writes for c.
func canonicalLine(t testing.TB, c *evidence.Chunk, redacted map[string]Redaction) []byte {
	t.Helper()
	raw, lines, err := EncodeBatchLines(testHeader(), Contents{Chunks: []*evidence.Chunk{c}, Redacted: redacted})
	if err != nil {
		t.Fatal(err)
	}
	return raw[lines[0].Off : lines[0].Off+int64(lines[0].Len)]
}

// sameAsEncodingJSON fails t unless line decodes by decodeChunkFast as
// strictJSON decodes it, when decodeChunkFast reads it at all; it reports
// whether decodeChunkFast read it.
func sameAsEncodingJSON(t testing.TB, line []byte) bool {
	t.Helper()
	var fast, slow storedChunk
	if !decodeChunkFast(line, &fast) {
		return false
	}
	if err := strictJSON(line, &slow); err != nil {
		t.Fatalf("decodeChunkFast reads %q, encoding/json refuses it: %v", line, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: decodeChunkFast reads %+v, encoding/json %+v", line, fast, slow)
	}
	return true
}

// TestDecodeChunkFastAsEncodingJSON: every line the encoder writes is read
// by decodeChunkFast, as encoding/json reads it, whatever bytes its fields
// hold; the lines it leaves to encoding/json are those it cannot read as
// encoding/json does, or that the encoder never writes.
func TestDecodeChunkFastAsEncodingJSON(t *testing.T) {
	written := []struct {
		name, text string
	}{
		{"ASCII", "Records are kept for ten years."},
		{"quotes and backslashes, escaped", `a "quoted" C:\path\ and \n as two characters`},
		{"control characters, escaped", "tab\tnewline\ncarriage\rnul\x00bell\x07esc\x1bunit\x1f"},
		{"HTML characters, written raw", "<b>a & b</b> -> c"},
		{"line and paragraph separators, escaped", "one\u2028two\u2029three"},
		{"two-, three- and four-byte UTF-8", "Umlaute äöü, € 20, 😀 and a combining e\u0301"},
		{"DEL and the replacement character", "\x7f\ufffd"},
		{"a long text", strings.Repeat("word \"quoted\"\n", 5000)},
	}
	for _, w := range written {
		c := testChunk(t, "c-"+w.name, w.text)
		c.Meta = map[string]string{w.text: w.text, "": "", "z": "last"}
		if !sameAsEncodingJSON(t, canonicalLine(t, c, nil)) {
			t.Errorf("%s: a line the encoder wrote is left to encoding/json", w.name)
		}
	}
	bare := &evidence.Chunk{ID: "bare", DocID: "d", Text: "no dates, no meta, no tenant", ContentHash: "blake3:" + strings.Repeat("0", 64)}
	if !sameAsEncodingJSON(t, canonicalLine(t, bare, nil)) {
		t.Errorf("a chunk without dates, meta or tenant is left to encoding/json")
	}

	x := testChunk(t, "x", "plain text")
	x.Meta = nil // the line ends at its content hash: the cases below add to it
	line := string(canonicalLine(t, x, nil))
	purged := &evidence.Chunk{ID: "p", DocID: "d", ContentHash: "blake3:" + strings.Repeat("1", 64)}
	others := []struct {
		name, line string
		read       bool // decodeChunkFast reads it (as encoding/json does)
	}{
		{"escapes the encoder never writes, read as encoding/json reads them",
			strings.Replace(line, `"plain text"`, `"\/\b\f\u0041\u00e9\u20ac"`, 1), true},
		{"a meta object with a repeated key: the last wins",
			strings.Replace(line, `}`, `,"meta":{"k":"1","k":"2"}}`, 1), true},
		{"an empty meta object: an empty map", strings.Replace(line, `}`, `,"meta":{}}`, 1), true},
		{"a redacted chunk", string(canonicalLine(t, purged, map[string]Redaction{"p": {Generation: 9, Tokens: 3, Terms: 2}})), false},
		{"a surrogate pair escaped (encoding/json joins it)", strings.Replace(line, `"plain text"`, `"\ud83d\ude00"`, 1), false},
		{"a lone surrogate escaped (encoding/json replaces it)", strings.Replace(line, `"plain text"`, `"\ud800"`, 1), false},
		{"invalid UTF-8 (encoding/json replaces it)", strings.Replace(line, `"plain text"`, "\"\xff\xfe\"", 1), false},
		{"invalid UTF-8 beside an escape", strings.Replace(line, `"plain text"`, "\"\xc3\\u00a9\"", 1), false},
		{"a space after a colon", strings.Replace(line, `"id":"x"`, `"id": "x"`, 1), false},
		{"keys out of order", strings.Replace(line, `{"id":"x","doc_id":"doc-x"`, `{"doc_id":"doc-x","id":"x"`, 1), false},
		{"a key in capitals (encoding/json matches it)", strings.Replace(line, `"id":`, `"ID":`, 1), false},
		{"an unknown field", strings.Replace(line, `}`, `,"zz":1}`, 1), false},
		{"a raw control character", strings.Replace(line, `plain text`, "plain\ttext", 1), false},
		{"a bad escape", strings.Replace(line, `plain text`, `plain\qtext`, 1), false},
		{"a short \\u escape", strings.Replace(line, `plain text`, `plain\u12`, 1), false},
		{"unterminated", line[:len(line)-10], false},
		{"data after the value", line + "{}", false},
		{"a trailing space", line + " ", false},
		{"a number for a string", strings.Replace(line, `"tenant":"acme"`, `"tenant":5`, 1), false},
	}
	for _, o := range others {
		if !strings.Contains(o.name, "redacted") && o.line == line {
			t.Fatalf("%s: the case changes nothing", o.name)
		}
		if got := sameAsEncodingJSON(t, []byte(o.line)); got != o.read {
			t.Errorf("%s: decodeChunkFast reads it: %v, want %v", o.name, got, o.read)
		}
	}
}

// FuzzDecodeChunkFast: whatever the line, decodeChunkFast reads it only as
// encoding/json reads it.
func FuzzDecodeChunkFast(f *testing.F) {
	c := testChunk(f, "fuzz", "Zeilen mit Umlauten: äöü, ein Tab\tund\nzwei Zeilen, <html> & \"quotes\" \u2028.")
	f.Add(canonicalLine(f, c, nil))
	f.Add([]byte(`{"id":"a","doc_id":"","version":"","text":"\u00e9\/","source_url":"","connector":"","retrieved_at":"","anchor":"","anchor_field":"","valid_from":"","valid_to":"","tenant":"","content_hash":"","meta":{"k":"v","k":"w"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsEncodingJSON(t, line)
	})
}

// BenchmarkDecodeChunkLines: a batch's chunk lines (5,000 chunks of about
// 1 KiB of text with escapes and non-ASCII letters, written by the encoder)
// decoded line by line by decodeChunkFast and by encoding/json as
// strictJSON decodes them, the two taking turns batch by batch. It reports
// each one's nanoseconds a line and their ratio.
func BenchmarkDecodeChunkLines(b *testing.B) {
	var lines [][]byte
	for i := range 5000 {
		text := strings.Repeat(fmt.Sprintf("Article %d: records \"shall\" be kept; für Kunden — five years.\n", i), 14)
		lines = append(lines, canonicalLine(b, testChunk(b, fmt.Sprintf("c-%05d", i), text), nil))
	}
	var fast, slow time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, l := range lines {
			var s storedChunk
			if !decodeChunkFast(l, &s) {
				b.Fatal("a line the encoder wrote is left to encoding/json")
			}
		}
		t1 := time.Now()
		for _, l := range lines {
			var s storedChunk
			if err := strictJSON(l, &s); err != nil {
				b.Fatal(err)
			}
		}
		fast, slow = fast+t1.Sub(t0), slow+time.Since(t1)
	}
	n := float64(b.N * len(lines))
	b.ReportMetric(float64(fast.Nanoseconds())/n, "fast-ns/line")
	b.ReportMetric(float64(slow.Nanoseconds())/n, "encoding-json-ns/line")
	b.ReportMetric(float64(slow)/float64(fast), "speedup")
}

// TestDecodeChunkLineNamesOnlyAFailure: DecodeChunkLine asks where the line
// is only to name it in an error (a query reads a line for each chunk it
// cites), and every error names it.
func TestDecodeChunkLineNamesOnlyAFailure(t *testing.T) {
	c := testChunk(t, "a", "text")
	good := canonicalLine(t, c, nil)
	for _, tc := range []struct {
		name, reason string
		line         []byte
		asked        int
		says         string
	}{
		{"a chunk line", "reading the chunk formats nothing", good, 0, ""},
		{"a fact line", "a line of another kind is no chunk", []byte(`{"fact":{}}`), 1, "not a chunk line"},
		{"not JSON", "a torn or edited line", good[:len(good)/2], 1, "chunks/x.jsonl at byte 7"},
		{"a bad field", "a chunk the engine would refuse", []byte(`{"id":"a","anchor":"yesterday"}`), 1, `chunk "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			where := func() string { asked++; return "chunks/x.jsonl at byte 7" }
			got, _, err := DecodeChunkLine(where, tc.line)
			require.Equal(t, tc.asked, asked, tc.reason)
			if tc.asked == 0 {
				require.NoError(t, err)
				require.Equal(t, c.ID, got.ID)
				return
			}
			require.ErrorIs(t, err, ErrCorrupt, tc.reason)
			require.ErrorContains(t, err, "chunks/x.jsonl at byte 7")
			require.ErrorContains(t, err, tc.says, tc.reason)
		})
	}
}
