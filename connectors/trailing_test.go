package connectors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// statuteOne is a valid statute file of one version with one article.
const statuteOne = `{"doc_id":"d","source_url":"https://example.org/d","retrieved_at":"2026-01-10T00:00:00Z",` +
	`"versions":[{"version":"v1","published":"2019-01-01","in_force":"2019-01-01","text":"Article 1 Records are kept."}]}`

// TestStatuteRefusesTrailingData: a statute file is one JSON object; what
// follows it (a second object from a botched concatenation, a stray brace,
// junk) is ErrSyntax naming the file and position, not silently dropped.
func TestStatuteRefusesTrailingData(t *testing.T) {
	if _, err := NewStatute().Parse("s.json", []byte(statuteOne+"\r\n\t ")); err != nil {
		t.Fatalf("trailing white space: %v", err)
	}
	n := len(statuteOne)
	for _, tc := range []struct {
		tail      string
		line, col int
	}{{` {"doc_id":"e"}`, 1, n + 2}, {`}`, 1, n + 1}, {`]`, 1, n + 1}, {`xx`, 1, n + 1}, {"\r\n\x00", 2, 1}} {
		_, err := NewStatute().Parse("s.json", []byte(statuteOne+tc.tail))
		want := fmt.Sprintf("s.json:%d:%d: connectors: syntax error: data after the statute's object", tc.line, tc.col)
		if !errors.Is(err, ErrSyntax) || err.Error() != want {
			t.Errorf("tail %q: got %v, want %s", tc.tail, err, want)
		}
	}
}

// TestJSONLRefusesTrailingCloser: a line is one JSON value; a stray closing
// bracket after it is ErrSyntax naming the line, as a second value is.
func TestJSONLRefusesTrailingCloser(t *testing.T) {
	for _, tail := range []string{`}`, `]`, ` {"id":"b"}`, `,`} {
		line := `{"id":"a","doc_id":"d","text":"t"}` + tail
		_, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader("\n"+line+"\n"))
		if !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), "x.jsonl:2:") {
			t.Errorf("line %q: got %v, want ErrSyntax at x.jsonl:2", line, err)
		}
	}
}

// TestStatuteMetaCannotOverrideArticle: the file's meta is copied onto
// every chunk, but "article" and "clause" are the connector's own per chunk
// (a filter article=1 finds Article 1); a file meta naming either is ErrField,
// where it silently replaced every chunk's article number.
func TestStatuteMetaCannotOverrideArticle(t *testing.T) {
	for _, key := range []string{"article", "clause"} {
		raw := strings.Replace(statuteOne, `"versions"`, `"meta":{"`+key+`":"9"},"versions"`, 1)
		recs, err := NewStatute().Parse("s.json", []byte(raw))
		if !errors.Is(err, ErrField) || !strings.Contains(err.Error(), `meta key "`+key+`"`) {
			t.Errorf("meta %s: got %d records (%v), want ErrField naming the key", key, len(recs), err)
		}
	}
	raw := strings.Replace(statuteOne, `"versions"`, `"meta":{"jurisdiction":"uk"},"versions"`, 1)
	recs, err := NewStatute().Parse("s.json", []byte(raw))
	if err != nil || len(recs) != 1 || recs[0].Chunk.Meta["article"] != "1" || recs[0].Chunk.Meta["jurisdiction"] != "uk" {
		t.Fatalf("other meta: got %v, %v", recs, err)
	}
}

// TestStatuteRefusesDuplicateKeys: encoding/json keeps the last of two
// equal keys (and matches keys regardless of case), so a version that gave
// in_force twice, or "text" and "TEXT", was read with one of them dropped
// without a word. Each is ErrSyntax naming the file and the key's place.
func TestStatuteRefusesDuplicateKeys(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"top level", strings.Replace(statuteOne, `"doc_id":"d",`, `"doc_id":"d","doc_id":"e",`, 1),
			`s.json:1:15: connectors: syntax error: key "doc_id" appears twice in one object`},
		{"in a version", strings.Replace(statuteOne, `"in_force":"2019-01-01",`, `"in_force":"2019-01-01","in_force":"2030-01-01",`, 1),
			`key "in_force" appears twice in one object`},
		{"in another case", strings.Replace(statuteOne, `"text":`, `"TEXT":"Article 9 x.","text":`, 1),
			`key "TEXT" appears twice in one object (as "text")`},
		{"in meta", strings.Replace(statuteOne, `"versions"`, `"meta":{"k":"1","k":"2"},"versions"`, 1),
			`key "k" appears twice in one object`},
	} {
		_, err := NewStatute().Parse("s.json", []byte(tc.raw))
		if !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), "s.json:1:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrSyntax saying %s", tc.name, err, tc.want)
		}
	}
}
