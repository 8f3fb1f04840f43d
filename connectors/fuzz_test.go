package connectors

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

func FuzzJSONL(f *testing.F) {
	raw, _ := os.ReadFile(filepath.Join("..", "testdata", "corpus", "guidance.jsonl"))
	f.Add(raw)
	f.Add([]byte(`{"id":"a","doc_id":"d","text":"t","anchor":"2026-01-15T10:00:00+05:00","valid_from":"2026-01-01"}`))
	f.Add([]byte("{\"id\":1}\n\n{"))
	f.Add([]byte(`{"fact":"superseded","id":"a","end":"2025-07-01","anchor":"2025-06-16T10:30:00+02:00","by":"b"}` + "\n" +
		`{"id":"b","doc_id":"d","text":"a fact","meta":{"kind":"fact"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		recs, err := NewJSONL().ReadFrom(context.Background(), "f.jsonl", bytes.NewReader(raw))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Where == "" {
				t.Fatalf("record without a position %+v", r)
			}
			if r.Fact != nil {
				// A fact record is prepared already: preparing it again
				// must agree.
				if again := *r.Fact; again.Prepare() != nil || again.Key() != r.Fact.Key() {
					t.Fatalf("bad fact record %+v", r)
				}
			} else if r.Chunk.Connector != "jsonl" {
				t.Fatalf("bad record %+v", r)
			}
		}
	})
}

func FuzzStatute(f *testing.F) {
	raw, _ := os.ReadFile(filepath.Join("..", "testdata", "corpus", "records-act.json"))
	f.Add(raw)
	f.Add([]byte(`{"doc_id":"x","versions":[{"published":"2020-01-01","in_force":"2020-01-01","text":"§ 1 a\nSection 2b b"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		recs, err := NewStatute().Parse("s.json", raw)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if seen[r.Chunk.ID] {
				t.Fatalf("duplicate chunk id %s", r.Chunk.ID)
			}
			seen[r.Chunk.ID] = true
			if r.Chunk.Valid.Validate() != nil {
				t.Fatalf("%s: bad interval %s", r.Chunk.ID, r.Chunk.Valid)
			}
		}
	})
}
