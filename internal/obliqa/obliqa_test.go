package obliqa

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/eval"
)

var update = flag.Bool("update", false, "rewrite testdata/rank_stats.txt")

// dataset loads ObliQA from EnvDir, skipping when it is absent, or failing
// when EnvRequire=1 (as .ci/run sets it).
func dataset(tb testing.TB) *eval.ObliQA {
	tb.Helper()
	dir, ok := Dir()
	if !ok {
		msg := fmt.Sprintf("ObliQA not found: set %s to the directory holding documents/ and ObliQA_dev.json "+
			"(for example %s=../shared/data/obliqa)", EnvDir, EnvDir)
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	o, err := Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// TestRankStats guards the number: the default configuration on the full
// ObliQA dev split must reproduce the recorded metrics exactly. The pipeline
// is deterministic, so any ranking change shows up here; record it with
// -update, and say why in the same commit.
func TestRankStats(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 2,788 questions")
	}
	o := dataset(t)
	ctx := context.Background()
	eng, err := Build(ctx, o, evpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rep, err := Evaluate(ctx, eng, o.Questions, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var b strings.Builder
	b.WriteString("# ObliQA dev split, default configuration: go run ./cmd/evpack eval obliqa --docs DIR/documents --questions DIR/ObliQA_dev.json\n")
	b.WriteString("# Update only deliberately (go test ./internal/obliqa -run TestRankStats -update), with the reason in the commit.\n")
	fmt.Fprintf(&b, "questions %d\nrecall@10 %s\nmap@10 %s\nndcg@10 %s\nmrr@10 %s\nhit@10 %s\n",
		s.Questions, f(s.Recall), f(s.MAP), f(s.NDCG), f(s.MRR), f(s.HitRate))
	for _, st := range rep.Fingerprint {
		if st.Key != "corpus" {
			fmt.Fprintf(&b, "config %s: %s\n", st.Key, st.Value)
		}
	}
	got := b.String()
	path := filepath.Join("testdata", "rank_stats.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Fatalf("ObliQA dev rank stats changed:\n--- recorded\n%s--- now\n%s", want, got)
	}
}

func TestGoldMapping(t *testing.T) {
	o := dataset(t)
	if len(o.Passages) != 13732 || len(o.Questions) != 2788 || o.Unmapped != 0 {
		t.Fatalf("passages %d questions %d unmapped %d", len(o.Passages), len(o.Questions), o.Unmapped)
	}
	recs, skipped := Records(o)
	if skipped != 720 || len(recs) != 13012 {
		t.Fatalf("records %d skipped %d", len(recs), skipped)
	}
}
