package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/bert"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/internal/asofbench"
	"github.com/evpack/evpack/internal/fsutil"
	"github.com/evpack/evpack/internal/learn"
	"github.com/evpack/evpack/internal/obliqa"
	"github.com/evpack/evpack/rerank"
)

// Bootstrap settings for every verdict the CLI prints.
const (
	bootstrapResamples = 10_000
	bootstrapSeed      = 1
)

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("eval needs obliqa, ablate, shapes, asof or financebench")
	}
	switch args[0] {
	case "obliqa":
		return cmdEvalObliQA(ctx, args[1:], stdout, stderr)
	case "ablate":
		return cmdEvalAblate(ctx, args[1:], stdout, stderr)
	case "shapes":
		return cmdEvalShapes(ctx, args[1:], stdout, stderr)
	case "asof":
		return cmdEvalAsOf(ctx, args[1:], stdout, stderr)
	case "financebench":
		return cmdEvalFinanceBench(ctx, args[1:], stdout, stderr)
	}
	return usageErr("eval %q: want obliqa, ablate, shapes, asof or financebench", args[0])
}

func rerankerNamed(name string) (rerank.Reranker, error) {
	switch name {
	case "arithmetic":
		return rerank.DefaultArithmetic(), nil
	case "none":
		return rerank.None{}, nil
	case "smoothed":
		return rerank.Smoothed{}, nil
	case "bm25-int":
		return rerank.IntBM25{}, nil
	case "learned":
		return learnedReranker("")
	}
	if path, ok := strings.CutPrefix(name, "learned:"); ok && path != "" {
		return learnedReranker(path)
	}
	if dir, ok := strings.CutPrefix(name, "cross-encoder:"); ok && dir != "" { // "": the working directory, unasked
		ce, err := bert.NewCrossEncoder(filepath.Base(dir), bert.Options{Dir: dir})
		if err != nil {
			return nil, fmt.Errorf("--reranker %s: %w", name, err)
		}
		return ce, nil
	}
	return nil, usageErr("--reranker %q: want arithmetic, none, smoothed, bm25-int, learned[:MODEL] or cross-encoder:MODEL_DIR", name)
}

// learnedReranker loads the model at path ("" for the embedded one). A model
// that cannot be loaded is an error here: the CLI names what the user asked
// for. (rerank.LearnedOrFallback is the library's fallback.)
func learnedReranker(path string) (rerank.Reranker, error) {
	m, err := rerank.DefaultModel()
	if path != "" {
		m, err = rerank.LoadModel(path)
	}
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return rerank.NewLearned(m)
}

func loadObliQA(docs, questions string) (*eval.ObliQA, error) {
	if docs == "" || questions == "" {
		return nil, usageErr("need --docs DIR and --questions FILE (the ObliQA documents/ folder and ObliQA_dev.json)")
	}
	return eval.LoadObliQA(docs, questions)
}

func newBar(n int, what string, stderr io.Writer) func() {
	bar := progressbar.NewOptions(n, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
	return func() { bar.Add(1) }
}

type evalJSON struct {
	Recall    float64           `json:"recall@10"`
	MAP       float64           `json:"map@10"`
	NDCG      float64           `json:"ndcg@10"`
	MRR       float64           `json:"mrr@10"`
	Questions int               `json:"questions"`
	Config    map[string]string `json:"config"`
	P50       float64           `json:"query_ms_p50"`
	P99       float64           `json:"query_ms_p99"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func cmdEvalObliQA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval obliqa", stderr)
	docs := fs.String("docs", "", "ObliQA documents/ directory")
	questions := fs.String("questions", "", "ObliQA questions file (ObliQA_dev.json)")
	pool := fs.Int("pool", evpack.DefaultPool, "candidates reranked")
	rr := fs.String("reranker", "learned", "learned[:MODEL] (the default: the embedded model), arithmetic, none, smoothed or cross-encoder:MODEL_DIR")
	asJSON := fs.Bool("json", false, "print one JSON object on the last line")
	perQ := fs.String("per-question", "", "write per-question results as JSONL to this file")
	dense := denseFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *perQ != "" {
		if err := checkOutput("--per-question", *perQ); err != nil {
			return err
		}
	}
	if *pool < 1 || *pool > evpack.MaxPool { // refused by Build, after the corpus was read
		return usageErr("--pool %d: want 1 to %d", *pool, evpack.MaxPool)
	}
	r, err := rerankerNamed(*rr)
	if err != nil {
		return err
	}
	opts, err := dense()
	if err != nil {
		return err
	}
	opts.Pool, opts.Reranker = *pool, r
	o, err := loadObliQA(*docs, *questions)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "indexing %d passages\n", len(o.Passages))
	eng, err := obliqa.Build(ctx, o, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := obliqa.Evaluate(ctx, eng, o.Questions, newBar(len(o.Questions), "questions", stderr))
	if err != nil {
		return err
	}
	if *perQ != "" {
		if err := writePerQuestion(*perQ, o.Questions, rep); err != nil {
			return err
		}
	}
	s := rep.Summary
	if *asJSON {
		cfg := map[string]string{}
		for _, st := range rep.Fingerprint {
			cfg[st.Key] = st.Value
		}
		return printJSONLine(stdout, evalJSON{Recall: s.Recall, MAP: s.MAP, NDCG: s.NDCG, MRR: s.MRR, Questions: s.Questions,
			Config: cfg, P50: ms(rep.P50), P99: ms(rep.P99)})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "questions\t%d\n", s.Questions)
	fmt.Fprintf(tw, "recall@10\t%.4f\n", s.Recall)
	fmt.Fprintf(tw, "map@10\t%.4f\n", s.MAP)
	fmt.Fprintf(tw, "ndcg@10\t%.4f\n", s.NDCG)
	fmt.Fprintf(tw, "mrr@10\t%.4f\n", s.MRR)
	fmt.Fprintf(tw, "query p50 / p99\t%.2f ms / %.2f ms\n", ms(rep.P50), ms(rep.P99))
	for _, st := range rep.Fingerprint {
		fmt.Fprintf(tw, "config %s\t%s\n", st.Key, st.Value)
	}
	return tw.Flush()
}

// writePerQuestion writes the per-question JSONL whole or not at all
// (fsutil.WriteAtomic): os.Create truncated the file first and left it
// half-written on an error.
func writePerQuestion(path string, qs []eval.Question, rep *obliqa.Report) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i, q := range qs {
		p := rep.Per[i]
		if err := enc.Encode(map[string]any{"question_id": q.ID, "recall@10": p.Recall, "ap@10": p.AP,
			"ndcg@10": p.NDCG, "rr@10": p.RR, "ranked": rep.Results[i].Ranked, "gold": q.Gold}); err != nil {
			return err
		}
	}
	if err := fsutil.WriteAtomic(path, b.Bytes()); err != nil {
		return fmt.Errorf("--per-question: %w", err)
	}
	return nil
}

// layer is one configuration of the ablation ledger.
type layer struct {
	name     string
	analyzer string
	opts     evpack.Options
	// run, when set, evaluates the layer instead of a view with opts (the
	// learned reranker's cross-validation).
	run func(ctx context.Context, base *evpack.Engine) (*obliqa.Report, error)
}

// ledgerRow is one judged layer.
type ledgerRow struct {
	Layer   string  `json:"layer"`
	Recall  float64 `json:"recall@10"`
	MAP     float64 `json:"map@10"`
	Against string  `json:"against"`
	DRecall string  `json:"delta_recall"`
	DMAP    string  `json:"delta_map"`
	McNemar string  `json:"mcnemar_hit@10"`
	Verdict string  `json:"verdict"`
}

func cmdEvalAblate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval ablate", stderr)
	docs := fs.String("docs", "", "ObliQA documents/ directory")
	questions := fs.String("questions", "", "ObliQA questions file")
	asJSON := fs.Bool("json", false, "print the ledger as one JSON object on the last line")
	crossEncoder := fs.String("cross-encoder", "", "MODEL_DIR of a cross-encoder to judge as a last layer (needs $EVPACK_ORT_LIB)")
	folds := fs.Int("folds", 5, "cross-validation folds of the learned reranker's layer (0: leave the layer out)")
	train := trainFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *folds < 0 || *folds == 1 {
		return usageErr("--folds %d: want 0 (no learned layer) or at least 2", *folds)
	}
	to := train()
	if *folds > 0 {
		if err := checkTrainer(to); err != nil {
			return err
		}
	}
	o, err := loadObliQA(*docs, *questions)
	if err != nil {
		return err
	}
	arith, err := rerank.NewArithmetic(rerank.DefaultWeights)
	if err != nil {
		return err
	}
	// Each layer is judged against whatever is winning when it arrives.
	layers := []layer{
		{"bm25 (en analyzer, corpus stats)", "en", evpack.Options{Reranker: rerank.None{}}, nil},
		{"bm25 (standard analyzer)", "standard", evpack.Options{Reranker: rerank.None{}}, nil},
		{"evpack integer bm25 (terms/1) over pool 50", "en", evpack.Options{Reranker: rerank.IntBM25{}, Pool: 50}, nil},
		{"integer bm25 + neighbour smoothing (s + 0.3 × mean of neighbours) over pool 50", "en", evpack.Options{Reranker: rerank.Smoothed{}, Pool: 50}, nil},
		{"+ arithmetic rerank, pool 50", "en", evpack.Options{Reranker: arith, Pool: 50}, nil},
		{"pool 20", "en", evpack.Options{Reranker: arith, Pool: 20}, nil},
		{"pool 100", "en", evpack.Options{Reranker: arith, Pool: 100}, nil},
	}
	if *folds > 0 && len(o.Questions) < 2**folds {
		fmt.Fprintf(stderr, "learned layer left out: %d questions are too few for %d folds\n", len(o.Questions), *folds)
	} else if *folds > 0 {
		qs := make([]learn.Question, len(o.Questions))
		for i, q := range o.Questions {
			qs[i] = learn.Question{ID: q.ID, Where: *questions, Text: q.Text, Gold: q.Gold, AsOf: obliqa.AsOf}
		}
		layers = append(layers, layer{fmt.Sprintf("learned rerank (LambdaMART, %d-fold cv on dev, seed %d), pool 50", *folds, to.Seed), "en", evpack.Options{},
			func(ctx context.Context, base *evpack.Engine) (*obliqa.Report, error) {
				fmt.Fprintf(stderr, "collecting the pools of %d questions\n", len(qs))
				pools, err := learn.Collect(ctx, base, qs)
				if err != nil {
					return nil, err
				}
				return cvReport(ctx, base, qs, pools, *folds, to, stderr)
			}})
	}
	if *crossEncoder != "" {
		ce, err := rerankerNamed("cross-encoder:" + *crossEncoder)
		if err != nil {
			return err
		}
		layers = append(layers, layer{"cross-encoder rerank, pool 50", "en", evpack.Options{Reranker: ce, Pool: 50}, nil})
	}
	engines := map[string]*evpack.Engine{}
	defer func() {
		for _, a := range []string{"en", "standard"} {
			if e := engines[a]; e != nil {
				e.Close()
			}
		}
	}()
	var rows []ledgerRow
	var best *obliqa.Report
	bestName := ""
	for _, l := range layers {
		base := engines[l.analyzer]
		if base == nil {
			fmt.Fprintf(stderr, "indexing %d passages (analyzer %s)\n", len(o.Passages), l.analyzer)
			if base, err = obliqa.Build(ctx, o, evpack.Options{Analyzer: evpack.Analyzer(l.analyzer)}); err != nil {
				return err
			}
			engines[l.analyzer] = base
		}
		var rep *obliqa.Report
		if l.run != nil {
			rep, err = l.run(ctx, base)
		} else {
			var eng *evpack.Engine
			if eng, err = base.View(l.opts); err == nil {
				rep, err = obliqa.Evaluate(ctx, eng, o.Questions, newBar(len(o.Questions), l.name, stderr))
			}
		}
		if err != nil {
			return err
		}
		row := ledgerRow{Layer: l.name, Recall: rep.Summary.Recall, MAP: rep.Summary.MAP, Verdict: "baseline"}
		if best != nil {
			v, err := judge(best, rep, &row)
			if err != nil {
				return err
			}
			row.Against = bestName
			row.Verdict = string(v)
		}
		if best == nil || row.Verdict == string(eval.Won) {
			best, bestName = rep, l.name
		}
		rows = append(rows, row)
	}
	if *asJSON {
		return printJSONLine(stdout, map[string]any{"ledger": rows, "winner": bestName, "questions": len(o.Questions),
			"bootstrap": map[string]int{"resamples": bootstrapResamples, "seed": bootstrapSeed}})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "layer\trecall@10\tmap@10\tΔrecall [95%]\tΔmap [95%]\tmcnemar hit@10\tverdict\tagainst")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%s\t%s\t%s\t%s\t%s\n", r.Layer, r.Recall, r.MAP, r.DRecall, r.DMAP, r.McNemar, r.Verdict, r.Against)
	}
	fmt.Fprintf(tw, "winner: %s (paired bootstrap over %d questions, %d resamples, seed %d)\n", bestName, len(o.Questions), bootstrapResamples, bootstrapSeed)
	return tw.Flush()
}

// judge compares a challenger with the winner. The challenger wins when its
// MAP@10 interval lies above zero and its recall@10 did not lose, or the
// other way round; it loses when either lost and neither won; else tied.
func judge(best, rep *obliqa.Report, row *ledgerRow) (eval.Verdict, error) {
	var ra, rb, ma, mb []float64
	var ha, hb []bool
	for i := range best.Per {
		ra, rb = append(ra, best.Per[i].Recall), append(rb, rep.Per[i].Recall)
		ma, mb = append(ma, best.Per[i].AP), append(mb, rep.Per[i].AP)
		ha, hb = append(ha, best.Per[i].Hit), append(hb, rep.Per[i].Hit)
	}
	r, err := eval.Bootstrap(ra, rb, bootstrapResamples, bootstrapSeed)
	if err != nil {
		return "", err
	}
	m, err := eval.Bootstrap(ma, mb, bootstrapResamples, bootstrapSeed)
	if err != nil {
		return "", err
	}
	mc, err := eval.McNemar(ha, hb)
	if err != nil {
		return "", err
	}
	row.DRecall = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", r.Diff, r.Lo, r.Hi)
	row.DMAP = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", m.Diff, m.Lo, m.Hi)
	row.McNemar = fmt.Sprintf("%d/%d p=%.3g", mc.OnlyA, mc.OnlyB, mc.P)
	switch {
	case (m.Verdict == eval.Won && r.Verdict != eval.Lost) || (r.Verdict == eval.Won && m.Verdict != eval.Lost):
		return eval.Won, nil
	case m.Verdict == eval.Lost || r.Verdict == eval.Lost:
		return eval.Lost, nil
	}
	return eval.Tied, nil
}

func cmdEvalAsOf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval asof", stderr)
	docs := fs.String("docs", "", "ObliQA documents/ directory")
	questions := fs.String("questions", "", "ObliQA questions file")
	n := fs.Int("histories", 500, "passages given an amendment history (one question each)")
	seed := fs.Uint64("seed", 1, "generator seed")
	asJSON := fs.Bool("json", false, "print one JSON object on the last line")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *n < 1 {
		// A negative count read as "every passage", 0 as none: a table of
		// zeros over no question, exit 0.
		return usageErr("--histories %d: want at least 1", *n)
	}
	o, err := loadObliQA(*docs, *questions)
	if err != nil {
		return err
	}
	b := asofbench.Generate(o, *n, *seed)
	if len(b.Questions) == 0 {
		return usageErr("--questions %s: no question has a gold passage with text to give a history", *questions)
	}
	fmt.Fprintf(stderr, "generated %d histories, %d questions (seed %d, %s)\n", len(b.Histories), len(b.Questions), *seed, b.Digest())
	rows, err := b.Run(ctx, newBar(4*len(b.Questions), "as-of", stderr))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLine(stdout, map[string]any{"seed": *seed, "digest": b.Digest(), "questions": len(b.Questions), "rows": rows})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tversion recall@10\tpassage recall@10\tcited outside eligibility")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%d of %d\n", r.Config, r.Recall, r.PassageHit, r.Ineligible, r.Citations)
	}
	fmt.Fprintf(tw, "%d questions, seed %d, corpus %s\n", len(b.Questions), *seed, b.Digest())
	return tw.Flush()
}

// printJSONLine writes v as one JSON object on its own line: the last line of
// an eval command's output with --json.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// cmdEvalShapes ranks ObliQA made into corpora of other shapes (one document,
// one passage per document, headings stripped, passages shuffled within
// their documents: obliqa.Shapes) with the default reranker, the arithmetic
// one and none (BM25 + RRF), and judges each reranker against none on each
// shape with the paired bootstrap.
func cmdEvalShapes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval shapes", stderr)
	docs := fs.String("docs", "", "ObliQA documents/ directory")
	var corpus multiFlag
	fs.Var(&corpus, "corpus", "chunk JSONL file (repeatable; JSONL form, with --folds)")
	questions := fs.String("questions", "", "ObliQA questions file, or labelled questions JSONL (with --folds)")
	asOf := fs.String("as-of", "", "as-of date of JSONL questions without one (YYYY-MM-DD; with --folds)")
	only := fs.String("shape", "", "one shape only (default: every shape)")
	seed := fs.Uint64("seed", 1, "seed of the shuffled shape and, with --folds, of the folds and the trainer's subsample")
	folds := fs.Int("folds", 0, "cross-validate the learned row in this many folds (0: the embedded model, in-sample on ObliQA dev)")
	groupBy := fs.String("group-by", "", "with --folds: fold by gold-document, gold-passage or field (default: random folds)")
	splitBy := fs.String("split-by", "", "with --folds: date, each fold's model answering only questions dated after every question it saw")
	train := trainFlags(sharedSeed{fs, seed})
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *only != "" && !slices.Contains(obliqa.Shapes, *only) {
		return usageErr("--shape %q: want one of %s", *only, strings.Join(obliqa.Shapes, ", "))
	}
	plan := foldPlan{k: *folds, groupBy: *groupBy, splitBy: *splitBy, seed: *seed}
	if err := plan.check(fs); err != nil {
		return err
	}
	if plan.k > 0 {
		if err := checkTrainer(train()); err != nil {
			return err
		}
		recs, qs, docOf, err := labelled(ctx, *docs, corpus, *questions, *asOf, stderr)
		if err != nil {
			return err
		}
		return shapesCV(ctx, recs, qs, documentKey(docOf), plan, train(), *only, stdout, stderr)
	}
	o, err := loadObliQA(*docs, *questions)
	if err != nil {
		return err
	}
	learned, err := rerankerNamed("learned")
	if err != nil {
		return err
	}
	rerankers := []struct {
		name string
		r    rerank.Reranker
	}{{"none", rerank.None{}}, {"arithmetic", rerank.DefaultArithmetic()}, {"learned (default)", learned}}
	gold := map[string]bool{}
	for _, q := range o.Questions {
		for _, g := range q.Gold {
			gold[g] = true
		}
	}
	recs, _ := obliqa.Records(o)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "shape\treranker\trecall@10\tmap@10\tΔrecall vs none [95%]\tΔmap vs none [95%]\tverdict")
	for _, shape := range obliqa.Shapes {
		if *only != "" && shape != *only {
			continue
		}
		shaped, err := obliqa.Shape(shape, recs, gold, *seed)
		if err != nil {
			return usageErr("%v", err)
		}
		fmt.Fprintf(stderr, "%s: indexing %d passages\n", shape, len(shaped))
		base, err := evpack.OpenMemory(evpack.Options{})
		if err != nil {
			return err
		}
		if _, err := base.Ingest(ctx, connectors.Records(shaped), evpack.IngestOptions{}); err != nil {
			base.Close()
			return err
		}
		var none *obliqa.Report
		for _, rr := range rerankers {
			view, err := base.View(evpack.Options{Reranker: rr.r})
			if err != nil {
				base.Close()
				return err
			}
			rep, err := obliqa.Evaluate(ctx, view, o.Questions, newBar(len(o.Questions), shape+" / "+rr.name, stderr))
			if err != nil {
				base.Close()
				return err
			}
			row := ledgerRow{Layer: rr.name, Recall: rep.Summary.Recall, MAP: rep.Summary.MAP, Verdict: "baseline"}
			if none == nil {
				none = rep
			} else {
				v, err := judge(none, rep, &row)
				if err != nil {
					base.Close()
					return err
				}
				row.Verdict = string(v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%s\t%s\t%s\n", shape, rr.name, row.Recall, row.MAP, row.DRecall, row.DMAP, row.Verdict)
		}
		base.Close()
	}
	fmt.Fprintf(tw, "paired bootstrap over %d questions, %d resamples, seed %d; shuffle seed %d\n", len(o.Questions), bootstrapResamples, bootstrapSeed, *seed)
	return tw.Flush()
}

// sharedSeed hands trainFlags the shapes command's --seed, so one seed
// orders the shuffled shape, the folds and the trainer's subsample.
type sharedSeed struct {
	*flag.FlagSet
	seed *uint64
}

func (s sharedSeed) Uint64(name string, value uint64, usage string) *uint64 {
	if name == "seed" {
		return s.seed
	}
	return s.FlagSet.Uint64(name, value, usage)
}

// check refuses, before any data is read, a fold scheme the shapes command
// cannot run: flags of the cross-validated mode without --folds, two
// schemes at once, or an unknown one.
func (p foldPlan) check(fs *flag.FlagSet) error {
	if p.k < 0 || (p.k == 1 && p.splitBy == "") {
		return usageErr("--folds %d: want 0 (the embedded model, in-sample) or at least 2 (1 only with --split-by date)", p.k)
	}
	if p.k == 0 {
		var cvOnly []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "corpus", "as-of", "group-by", "split-by", "trees", "leaves", "lr", "min-leaf", "l2", "subsample":
				cvOnly = append(cvOnly, "--"+f.Name)
			}
		})
		if len(cvOnly) > 0 {
			return usageErr("%s: only with --folds (the in-sample mode ranks with the embedded model)", strings.Join(cvOnly, ", "))
		}
		return nil
	}
	return p.checkScheme()
}

// checkScheme refuses a fold count or scheme no split can run, before any
// data is read: a negative --folds (rerank train read it as 0, no
// cross-validation), --folds 1 without --split-by date, two schemes at
// once, or an unknown one.
func (p foldPlan) checkScheme() error {
	if p.k < 0 || (p.k == 1 && p.splitBy == "") {
		return usageErr("--folds %d: want 0 (no cross-validation) or at least 2 (1 only with --split-by date)", p.k)
	}
	if p.groupBy != "" && p.splitBy != "" {
		return usageErr("--group-by and --split-by are two fold schemes: give one")
	}
	if p.splitBy != "" && p.splitBy != "date" {
		return usageErr("--split-by %q: want date", p.splitBy)
	}
	if g := p.groupBy; g != "" && g != learn.GroupGoldDocument && g != learn.GroupGoldPassage && g != learn.GroupField {
		return usageErr("--group-by %q: want %s, %s or %s", g, learn.GroupGoldDocument, learn.GroupGoldPassage, learn.GroupField)
	}
	return nil
}

// shapesCV is the shapes command with the learned row cross-validated: one
// model per fold, trained on the other folds' pools from the as-is corpus
// (the shape a model is trained on), ranks that fold's held-out questions
// on every shape. The rows of all folds are assembled in question order and
// each reranker is judged against none over the questions some fold held
// out, so no learned figure comes from a model that saw the question.
func shapesCV(ctx context.Context, recs []connectors.Record, qs []learn.Question, docOf func(string) string, plan foldPlan, to rerank.TrainOptions, only string, stdout, stderr io.Writer) error {
	gold := map[string]bool{}
	for _, q := range qs {
		for _, g := range q.Gold {
			gold[g] = true
		}
	}
	asIs, err := shapeEngine(ctx, "as-is", recs, gold, to.Seed, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "collecting the pools of %d questions\n", len(qs))
	pools, err := learn.Collect(ctx, asIs, qs)
	asIs.Close()
	if err != nil {
		return err
	}
	split, err := plan.split(qs, docOf)
	if err != nil {
		return err
	}
	// heldAt[i] is question i's place among the held-out questions (-1:
	// held by no fold, as a date split's first block).
	heldAt := make([]int, len(qs))
	for i := range heldAt {
		heldAt[i] = -1
	}
	for _, held := range split.Held {
		for _, i := range held {
			if heldAt[i] >= 0 {
				return fmt.Errorf("%w: question %s is held out by two folds", rerank.ErrTrain, qs[i].ID)
			}
			heldAt[i] = 0
		}
	}
	var heldQs []learn.Question
	for i, q := range qs {
		if heldAt[i] >= 0 {
			heldAt[i] = len(heldQs)
			heldQs = append(heldQs, q)
		}
	}
	models := make([]*rerank.Learned, len(split.Held))
	for f := range split.Held {
		train := make([]rerank.TrainQuery, 0, len(split.Train[f]))
		for _, i := range split.Train[f] {
			train = append(train, pools[i])
		}
		m, err := rerank.Train(train, to)
		if err != nil {
			return fmt.Errorf("eval shapes: fold %d: %w", f, err)
		}
		if models[f], err = rerank.NewLearned(m); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "fold %d of %d trained (%s)\n", f+1, len(split.Held), m.Sum())
	}
	fmt.Fprintf(stdout, "seed %d, trainer %s, data %s\n", to.Seed, to, rerank.TrainDigest(pools))
	fmt.Fprintf(stdout, "folds: %s; each fold's model is trained on the other folds' pools of the as-is corpus and ranks its held-out questions on every shape\n", split.Scheme)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "shape\treranker\trecall@10\tmap@10\tΔrecall vs none [95%]\tΔmap vs none [95%]\tverdict")
	var pairs []shapePair
	for _, shape := range obliqa.Shapes {
		if only != "" && shape != only {
			continue
		}
		eng, err := shapeEngine(ctx, shape, recs, gold, to.Seed, stderr)
		if err != nil {
			return err
		}
		arith, learned, err := shapeRowsCV(ctx, eng, shape, heldQs, heldAt, split, models, tw)
		eng.Close()
		if err != nil {
			return err
		}
		pairs = append(pairs, shapePair{shape, arith, learned})
	}
	fmt.Fprintf(tw, "paired bootstrap over the %d held-out questions, %d resamples, seed %d; shuffle seed %d\n", len(heldQs), bootstrapResamples, bootstrapSeed, to.Seed)
	// The same questions judged once more: the learned row against the
	// arithmetic reranker (the default's alternative), shape by shape.
	fmt.Fprintln(tw, "shape\tlearned vs arithmetic: Δrecall [95%]\tΔmap [95%]\tverdict")
	for _, p := range pairs {
		var row ledgerRow
		v, err := judge(p.arith, p.learned, &row)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.shape, row.DRecall, row.DMAP, v)
	}
	return tw.Flush()
}

// shapePair is one shape's arithmetic and cross-validated learned reports.
type shapePair struct {
	shape          string
	arith, learned *obliqa.Report
}

// shapeEngine indexes recs made into the named shape in memory.
func shapeEngine(ctx context.Context, shape string, recs []connectors.Record, gold map[string]bool, seed uint64, stderr io.Writer) (*evpack.Engine, error) {
	shaped, err := obliqa.Shape(shape, recs, gold, seed)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	fmt.Fprintf(stderr, "%s: indexing %d passages\n", shape, len(shaped))
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := eng.Ingest(ctx, connectors.Records(shaped), evpack.IngestOptions{}); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

// shapeRowsCV writes one shape's rows: none, the arithmetic reranker, and
// the fold models each ranking its own held-out questions. It returns the
// arithmetic and learned reports.
func shapeRowsCV(ctx context.Context, eng *evpack.Engine, shape string, heldQs []learn.Question, heldAt []int, split learn.Split, models []*rerank.Learned, tw io.Writer) (arith, learned *obliqa.Report, _ error) {
	var none *obliqa.Report
	for _, rr := range []struct {
		name string
		r    rerank.Reranker
	}{{"none", rerank.None{}}, {"arithmetic", rerank.DefaultArithmetic()}, {"learned (cross-validated)", nil}} {
		var ranked [][]string
		if rr.r != nil {
			var err error
			if ranked, err = learn.Ranked(ctx, eng, rr.r, heldQs); err != nil {
				return nil, nil, err
			}
		} else {
			ranked = make([][]string, len(heldQs))
			for f, held := range split.Held {
				fq := make([]learn.Question, len(held))
				for j, i := range held {
					fq[j] = heldQs[heldAt[i]]
				}
				got, err := learn.Ranked(ctx, eng, models[f], fq)
				if err != nil {
					return nil, nil, err
				}
				for j, i := range held {
					ranked[heldAt[i]] = got[j]
				}
			}
		}
		rep := reportOf(learn.Scores(heldQs, ranked))
		row := ledgerRow{Layer: rr.name, Recall: rep.Summary.Recall, MAP: rep.Summary.MAP, Verdict: "baseline"}
		if none == nil {
			none = rep
		} else {
			v, err := judge(none, rep, &row)
			if err != nil {
				return nil, nil, err
			}
			row.Verdict = string(v)
		}
		switch rr.name {
		case "arithmetic":
			arith = rep
		case "learned (cross-validated)":
			learned = rep
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%s\t%s\t%s\n", shape, rr.name, row.Recall, row.MAP, row.DRecall, row.DMAP, row.Verdict)
	}
	return arith, learned, nil
}
