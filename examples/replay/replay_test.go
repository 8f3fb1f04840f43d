package main

// Copy this test into your service: list your own requests in
// testdata/requests.json, build the engine the way your service does, and run
//
//	go test -run TestReplayGolden -update
//
// once to record testdata/golden.json. From then on any change that moves a
// citation (a new analyzer, other weights, a dependency upgrade) fails here,
// naming the request and the citation that moved.

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

type request struct {
	Name     string `json:"name"`
	Question string `json:"question"`
	AsOf     string `json:"as_of"`
	Tenant   string `json:"tenant,omitempty"`
}

// golden records, per request, the pack hash and which chunk each citation
// number points at.
type golden struct {
	Hash      string   `json:"hash"`
	Citations []string `json:"citations"` // Citations[i] is the chunk of [i+1]
}

func TestReplayGolden(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []request
	if err := json.Unmarshal(raw, &reqs); err != nil {
		t.Fatal(err)
	}

	// Build the index on disk and reopen it, as a restarted service would.
	dir := t.TempDir()
	eng, err := evpack.Open(dir, evpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sources, err := corpus(filepath.Join("..", "..", "testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sources {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eng.Close()
	eng, err = evpack.Open(dir, evpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Check(); err != nil {
			t.Error(err)
		}
		eng.Close()
	})

	got := map[string]golden{}
	for _, r := range reqs {
		day, err := asof.ParseDate(r.AsOf)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		p, err := eng.Query(ctx, evpack.Request{Question: r.Question, AsOf: day, Tenant: r.Tenant})
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		g := golden{Hash: p.Hash()}
		for _, c := range p.Citations {
			g.Citations = append(g.Citations, c.ChunkID)
		}
		got[r.Name] = g
	}

	path := filepath.Join("testdata", "golden.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to record it)", err)
	}
	var want map[string]golden
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		w, g := want[r.Name], got[r.Name]
		for i := 0; i < len(w.Citations) || i < len(g.Citations); i++ {
			var wc, gc string
			if i < len(w.Citations) {
				wc = w.Citations[i]
			}
			if i < len(g.Citations) {
				gc = g.Citations[i]
			}
			if wc != gc {
				t.Errorf("%s: citation [%d] was %q, now %q", r.Name, i+1, wc, gc)
			}
		}
		if w.Hash != g.Hash {
			t.Errorf("%s: pack hash was %s, now %s", r.Name, w.Hash, g.Hash)
		}
	}
}
