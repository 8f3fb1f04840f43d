package connectors

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestJSONLRefusesDuplicateAndMisspeltKeys: encoding/json keeps the last of
// two equal keys and matches keys regardless of case, so a line could say
// valid_to twice (the second extending the first) or give "TEXT" beside
// "text", and one of them was dropped without a word. Each is ErrSyntax
// naming the line and the key.
func TestJSONLRefusesDuplicateAndMisspeltKeys(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"id":"a","id":"b","doc_id":"d","text":"t"}`, `key "id" appears twice`},
		{`{"id":"a","doc_id":"d","text":"t","valid_to":"2020-01-01","valid_to":"2030-01-01"}`, `key "valid_to" appears twice`},
		{`{"id":"a","doc_id":"d","text":"t","TEXT":"u"}`, `key "TEXT": the field is spelt "text"`},
		{`{"ID":"a","doc_id":"d","text":"t"}`, `key "ID": the field is spelt "id"`},
		{`{"id":"a","doc_id":"d","text":"t","meta":{"k":"1","k":"2"}}`, `meta key "k" appears twice`},
		{`{"fact":"retracted","fact":"ended","id":"a","end":"2020-01-01","anchor":"2020-01-01"}`, `key "fact" appears twice`},
		{`{"fact":"ended","id":"a","End":"2020-01-01","anchor":"2020-01-01"}`, `key "End": the field is spelt "end"`},
	} {
		_, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader("\n"+tc.line))
		if !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), "x.jsonl:2: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrSyntax at x.jsonl:2 saying %s", tc.line, err, tc.want)
		}
	}
	// The same key in meta and at the top, and escaped spellings of other
	// keys, are not duplicates.
	recs, err := NewJSONL().ReadFrom(context.Background(), "x.jsonl", strings.NewReader(
		`{"id":"a","doc_id":"d","text":"t","meta":{"id":"1","text":"2"},"\u0074enant":"acme"}`))
	if err != nil || len(recs) != 1 || recs[0].Chunk.Tenant != "acme" || recs[0].Chunk.Meta["text"] != "2" {
		t.Fatalf("got %+v, %v", recs, err)
	}
}
