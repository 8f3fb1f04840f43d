package connectors

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/evpack/evpack/evidence"
)

// TestJSONLRefusesInvalidUTF8: encoding/json replaces each invalid byte
// with U+FFFD, so the IDs "a\xff" and "a\xfe" both became "a\uFFFD" (one
// chunk where the source has two) and the text was not the source's. A line
// that is not UTF-8 is ErrSyntax and evidence.ErrNotUTF8 naming it and the
// column, as Prepare refuses such an ID from any other connector.
func TestJSONLRefusesInvalidUTF8(t *testing.T) {
	in := `{"id":"a1","doc_id":"d","text":"t"}` + "\n" + `{"id":"a` + "\xff" + `","doc_id":"d","text":"t"}` + "\n"
	_, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader(in))
	if !errors.Is(err, ErrSyntax) || !errors.Is(err, evidence.ErrNotUTF8) || !strings.HasPrefix(err.Error(), "x.jsonl:2: ") || !strings.Contains(err.Error(), "column 9") {
		t.Fatalf("got %v", err)
	}
}

// TestStatuteRefusesInvalidUTF8: as for JSONL, a statute file that is not
// UTF-8 is refused at its place, not read with U+FFFD in its text and IDs.
func TestStatuteRefusesInvalidUTF8(t *testing.T) {
	raw := strings.Replace(statuteOne, "Records", "Rec\xffords", 1)
	_, err := NewStatute().Parse("s.json", []byte(raw))
	if !errors.Is(err, ErrSyntax) || !errors.Is(err, evidence.ErrNotUTF8) || !strings.HasPrefix(err.Error(), "s.json:1:") {
		t.Fatalf("got %v", err)
	}
}
