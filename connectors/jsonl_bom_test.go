package connectors

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestJSONLReadsAfterAByteOrderMark: a file saved with a UTF-8 byte order
// mark (as Windows editors do) reads as without it. Its first line was
// refused as "invalid character 'ï' looking for beginning of value", which
// names no cause a person can see; a mark on a later line is still refused.
func TestJSONLReadsAfterAByteOrderMark(t *testing.T) {
	line := `{"id":"a","doc_id":"d","text":"t","source_url":"https://x","retrieved_at":"2026-01-10T00:00:00Z"}`
	recs, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader("\ufeff"+line+"\r\n"))
	if err != nil || len(recs) != 1 || recs[0].Chunk.ID != "a" || recs[0].Chunk.MissingCitation() != "" {
		t.Fatalf("got %+v, %v", recs, err)
	}
	_, err = NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader(line+"\n\ufeff"+line))
	if !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), "x.jsonl:2: ") {
		t.Fatalf("a mark on line 2: got %v", err)
	}
}

// TestStatuteReadsAfterAByteOrderMark: a statute file saved with a UTF-8
// byte order mark reads as without it; it was refused as "invalid
// character 'ï'".
func TestStatuteReadsAfterAByteOrderMark(t *testing.T) {
	want, err := NewStatute().Parse("s.json", []byte(statuteOne))
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewStatute().Parse("s.json", []byte("\ufeff"+statuteOne))
	if err != nil || len(got) != len(want) || got[0].Chunk.ID != want[0].Chunk.ID || got[0].Chunk.Text != want[0].Chunk.Text {
		t.Fatalf("got %+v, %v", got, err)
	}
}
