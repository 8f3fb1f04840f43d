package obliqa

import (
	"fmt"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

func shapeInput() []connectors.Record {
	mk := func(id, doc, text string, pos int) connectors.Record {
		return connectors.Record{Chunk: evidence.Chunk{ID: id, DocID: doc, Text: text,
			Meta: map[string]string{"document": doc, evpack.MetaPosition: fmt.Sprint(pos)}}}
	}
	return []connectors.Record{
		mk("a", "1", "PART 1", 0), mk("b", "1", "The firm must keep records for six years after the trade.", 1),
		mk("c", "1", "Short gold heading", 2), mk("d", "2", "INTRODUCTION", 0), mk("e", "2", "A second document holds this longer passage of text.", 1),
	}
}

func layout(recs []connectors.Record) string {
	s := ""
	for _, r := range recs {
		s += fmt.Sprintf("%s:%s/%s ", r.Chunk.ID, r.Chunk.DocID, r.Chunk.Meta[evpack.MetaPosition])
	}
	return s
}

func TestShapesByHand(t *testing.T) {
	gold := map[string]bool{"c": true}
	cases := []struct{ shape, want string }{
		{"as-is", "a:1/0 b:1/1 c:1/2 d:2/0 e:2/1 "},
		{"one-document", "a:all/0 b:all/1 c:all/2 d:all/3 e:all/4 "},
		{"passage-per-document", "a:a/0 b:b/0 c:c/0 d:d/0 e:e/0 "},
		{"no-headings", "b:1/0 c:1/1 e:2/0 "}, // a and d are short and nobody's gold; c is short but gold
		// Seeded (PCG, seed 1): pinned so that a change of the draw shows;
		// each document's positions stay a permutation of 0..n-1.
		{"shuffled", "a:1/1 b:1/0 c:1/2 d:2/1 e:2/0 "},
	}
	for _, tc := range cases {
		in := shapeInput()
		got, err := Shape(tc.shape, in, gold, 1)
		if err != nil {
			t.Fatal(err)
		}
		if layout(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.shape, layout(got), tc.want)
		}
		if layout(in) != "a:1/0 b:1/1 c:1/2 d:2/0 e:2/1 " {
			t.Errorf("%s changed its input: %s", tc.shape, layout(in))
		}
	}
	if _, err := Shape("sideways", shapeInput(), gold, 1); err == nil {
		t.Error("an unknown shape is accepted")
	}
	// A record without metadata (a JSONL corpus's, say) gets its own.
	bare := shapeInput()
	bare[0].Chunk.Meta = nil
	got, err := Shape("one-document", bare, gold, 1)
	if err != nil || got[0].Chunk.Meta["document"] != "all" || bare[0].Chunk.Meta != nil {
		t.Errorf("a record without metadata: %v, %v (input %v)", got[0].Chunk.Meta, err, bare[0].Chunk.Meta)
	}
}
