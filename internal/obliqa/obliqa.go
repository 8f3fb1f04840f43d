// Package obliqa runs evpack over the ObliQA regulatory QA dataset: it turns
// the corpus into chunk records and answers every question, for the eval
// command, the pinned-metrics test and the benchmarks.
package obliqa

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
)

// EnvDir names the environment variable that points at the ObliQA directory
// (holding documents/ and ObliQA_dev.json). The data set is RegNLP's, from
// https://github.com/RegNLP/ObliQADataset: its ObliQA_dev.json, and its
// StructuredRegulatoryDocuments/ folder as documents/ (README.md, "Tests
// that need data").
const EnvDir = "EVPACK_OBLIQA_DIR"

// EnvRequire, when set to 1, turns a missing dataset from a skip into a test
// failure: .ci/run sets it, so CI cannot pass by skipping.
const EnvRequire = "EVPACK_REQUIRE_DATA"

// Retrieved is the retrieval time stamped on every ObliQA chunk, and AsOf the
// day every question is asked: ObliQA has no dates, it measures recall.
var (
	Retrieved = time.Date(2024, 9, 1, 0, 0, 0, 0, time.UTC)
	AsOf      = asof.MustDate("2025-01-01")
)

// Paths returns the documents directory and dev questions file under dir.
func Paths(dir string) (docs, questions string) {
	return filepath.Join(dir, "documents"), filepath.Join(dir, "ObliQA_dev.json")
}

// Dir returns the dataset directory from EnvDir, and whether it is usable.
func Dir() (string, bool) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return "", false
	}
	docs, qs := Paths(dir)
	if _, err := os.Stat(docs); err != nil {
		return dir, false
	}
	if _, err := os.Stat(qs); err != nil {
		return dir, false
	}
	return dir, true
}

// Load reads the dataset under dir.
func Load(dir string) (*eval.ObliQA, error) {
	docs, qs := Paths(dir)
	return eval.LoadObliQA(docs, qs)
}

// Records turns the corpus into chunk records, each with its place in its
// document file as evpack.MetaPosition, skipping empty passages (they
// cannot be cited; the official scoring still counts gold that points at
// them as missed). It returns how many it skipped.
func Records(o *eval.ObliQA) ([]connectors.Record, int) {
	var recs []connectors.Record
	skipped := 0
	pos, doc := 0, -1
	for _, p := range o.Passages {
		if p.DocumentID != doc {
			pos, doc = 0, p.DocumentID
		}
		pos++
		if evidence.Normalize(p.Text) == "" {
			skipped++
			continue
		}
		recs = append(recs, connectors.Record{
			Where: fmt.Sprintf("documents/%d.json: %s", p.DocumentID, p.ID),
			Chunk: evidence.Chunk{
				ID: p.ID, DocID: fmt.Sprint(p.DocumentID), Version: "1", Text: p.Text,
				SourceURL:   fmt.Sprintf("obliqa://%d/%s", p.DocumentID, p.PassageID),
				Connector:   "obliqa",
				RetrievedAt: Retrieved,
				Anchor:      asof.ResolveAnchor("", time.Time{}, Retrieved),
				// position: the passage's place in its document file, so
				// that rerankers see document order (UUIDs do not sort in it).
				Meta: map[string]string{"document": fmt.Sprint(p.DocumentID), evpack.MetaPosition: fmt.Sprint(pos - 1)},
			},
		})
	}
	return recs, skipped
}

// Result is one question's answer.
type Result struct {
	Ranked  []string
	Latency time.Duration
}

// Build makes an in-memory engine holding the corpus of o.
func Build(ctx context.Context, o *eval.ObliQA, opts evpack.Options) (*evpack.Engine, error) {
	eng, err := evpack.OpenMemory(opts)
	if err != nil {
		return nil, err
	}
	recs, _ := Records(o)
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

// Report is an evaluation of one configuration.
type Report struct {
	Summary     eval.Summary
	Per         []eval.Scores // per question, at k = 10
	Results     []Result
	P50, P99    time.Duration
	Fingerprint evidence.Fingerprint
}

// Evaluate answers every question with 10 citations and scores the answers
// by the official ObliQA rules (recall@10, MAP@10; all questions count).
func Evaluate(ctx context.Context, eng *evpack.Engine, qs []eval.Question, progress func()) (*Report, error) {
	res, fp, err := Run(ctx, eng, qs, 10, progress)
	if err != nil {
		return nil, err
	}
	r := &Report{Results: res, Fingerprint: fp}
	lat := make([]time.Duration, len(res))
	for i, q := range qs {
		r.Per = append(r.Per, eval.Score(res[i].Ranked, q.Gold, 10))
		lat[i] = res[i].Latency
	}
	r.Summary = eval.Summarize(r.Per)
	r.P50, r.P99 = Percentile(lat, 0.50), Percentile(lat, 0.99)
	return r, nil
}

// Run asks every question as of AsOf with k citations, one at a time (so
// latencies are not disturbed by each other), calling progress after each.
// It also returns the fingerprint of the packs (the same for all of them).
func Run(ctx context.Context, eng *evpack.Engine, qs []eval.Question, k int, progress func()) ([]Result, evidence.Fingerprint, error) {
	out := make([]Result, len(qs))
	var fp evidence.Fingerprint
	for i, q := range qs {
		start := time.Now()
		p, err := eng.Query(ctx, evpack.Request{Question: q.Text, AsOf: AsOf, K: k})
		if err != nil {
			return nil, nil, fmt.Errorf("question %s: %w", q.ID, err)
		}
		fp = p.Fingerprint
		out[i].Latency = time.Since(start)
		for _, c := range p.Citations {
			out[i].Ranked = append(out[i].Ranked, c.ChunkID)
		}
		if progress != nil {
			progress()
		}
	}
	return out, fp, nil
}

// Percentile returns the p-quantile (0..1) of ds by nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
