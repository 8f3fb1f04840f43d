package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/internal/learn"
	"github.com/evpack/evpack/internal/obliqa"
	"github.com/evpack/evpack/rerank"
)

func cmdRerank(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "train" {
		return usageErr("rerank needs train")
	}
	return cmdRerankTrain(ctx, args[1:], stdout, stderr)
}

// trainFlags are the trainer's settings as flags.
func trainFlags(fs interface {
	Int(string, int, string) *int
	Float64(string, float64, string) *float64
	Uint64(string, uint64, string) *uint64
}) func() rerank.TrainOptions {
	trees := fs.Int("trees", 300, "boosting rounds")
	leaves := fs.Int("leaves", 16, "leaves per tree")
	lr := fs.Float64("lr", 0.05, "learning rate")
	minLeaf := fs.Int("min-leaf", 100, "fewest candidates in a leaf")
	l2 := fs.Float64("l2", 1, "L2 regularization of leaf values")
	sub := fs.Float64("subsample", 0.8, "share of questions each tree is fitted on")
	seed := fs.Uint64("seed", 1, "seed of the folds and the subsample")
	return func() rerank.TrainOptions {
		return rerank.TrainOptions{Trees: *trees, Leaves: *leaves, LearningRate: *lr, MinLeafRows: *minLeaf, L2: *l2, Subsample: *sub, Seed: *seed}
	}
}

// labelled loads a labelled set: the ObliQA form (--docs DIR --questions
// ObliQA_dev.json) or chunk JSONL files with question JSONL (--corpus FILE...
// --questions FILE.jsonl). In the ObliQA form a gold passage the corpus
// cannot cite (empty, or absent) stays gold and counts as missed, as the
// official scorer counts it; in the JSONL form it is an error.
func labelled(ctx context.Context, docs string, corpus []string, questions, asOf string, stderr io.Writer) ([]connectors.Record, []learn.Question, error) {
	if docs != "" {
		o, err := loadObliQA(docs, questions)
		if err != nil {
			return nil, nil, err
		}
		recs, skipped := obliqa.Records(o)
		qs := make([]learn.Question, len(o.Questions))
		indexed := map[string]bool{}
		for _, r := range recs {
			indexed[r.Chunk.ID] = true
		}
		missing := 0
		for i, q := range o.Questions {
			qs[i] = learn.Question{ID: q.ID, Where: questions, Text: q.Text, Gold: q.Gold, AsOf: obliqa.AsOf}
			for _, g := range q.Gold {
				if !indexed[g] {
					missing++
				}
			}
		}
		fmt.Fprintf(stderr, "obliqa: %d passages (%d empty, not indexed), %d questions, %d gold passages not citable (counted as missed)\n",
			len(recs), skipped, len(qs), missing)
		return recs, qs, nil
	}
	if len(corpus) == 0 || questions == "" {
		return nil, nil, usageErr("need --docs DIR --questions FILE (ObliQA form) or --corpus FILE.jsonl... --questions FILE.jsonl")
	}
	recs, err := connectors.NewJSONL(corpus...).Read(ctx)
	if err != nil {
		return nil, nil, err
	}
	var def asof.Date
	if asOf != "" {
		if def, err = asof.ParseDate(asOf); err != nil {
			return nil, nil, usageErr("--as-of: %v", err)
		}
	}
	qs, err := learn.LoadJSONL(questions, def)
	if err != nil {
		return nil, nil, err
	}
	indexed := map[string]bool{}
	for _, r := range recs {
		indexed[r.Chunk.ID] = true
	}
	if err := learn.CheckGold(qs, func(id string) bool { return indexed[id] }); err != nil {
		return nil, nil, err
	}
	return recs, qs, nil
}

func cmdRerankTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rerank train", stderr)
	docs := fs.String("docs", "", "ObliQA documents/ directory (ObliQA form)")
	var corpus multiFlag
	fs.Var(&corpus, "corpus", "chunk JSONL file (repeatable; JSONL form)")
	questions := fs.String("questions", "", "ObliQA_dev.json, or labelled questions JSONL: id, question, gold, as_of, tenant")
	asOf := fs.String("as-of", "", "as-of date of JSONL questions without one (YYYY-MM-DD)")
	out := fs.String("out", "", "model file to write (trained on every question)")
	folds := fs.Int("folds", 5, "cross-validation folds (0: none)")
	opts := trainFlags(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageErr("need --out MODEL")
	}
	to := opts()
	recs, qs, err := labelled(ctx, *docs, corpus, *questions, *asOf, stderr)
	if err != nil {
		return err
	}
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "collecting the pools of %d questions\n", len(qs))
	pools, err := learn.Collect(ctx, eng, qs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seed %d, trainer %s, data %s\n", to.Seed, to, rerank.TrainDigest(pools))
	if *folds > 0 {
		if err := crossValidate(ctx, eng, qs, pools, *folds, to, stdout, stderr); err != nil {
			return err
		}
	}
	m, err := rerank.Train(pools, to)
	if err != nil {
		return err
	}
	if err := m.Save(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "model %s: %s, %d trees\nrecord: %s\n", *out, m.Sum(), m.Trees(), m.Record())
	return nil
}

// crossValidate prints the k-fold figures of the learned reranker against
// the Arithmetic reranker, with the ablation ledger's verdict.
func crossValidate(ctx context.Context, eng *evpack.Engine, qs []learn.Question, pools []rerank.TrainQuery, k int, to rerank.TrainOptions, stdout, stderr io.Writer) error {
	cvRep, err := cvReport(ctx, eng, qs, pools, k, to, stderr)
	if err != nil {
		return err
	}
	arith, err := rerank.NewArithmetic(rerank.DefaultWeights)
	if err != nil {
		return err
	}
	ranked, err := learn.Ranked(ctx, eng, arith, qs)
	if err != nil {
		return err
	}
	aRep := reportOf(learn.Scores(qs, ranked))
	row := ledgerRow{Layer: fmt.Sprintf("learned (%d-fold cv, seed %d)", k, to.Seed), Recall: cvRep.Summary.Recall, MAP: cvRep.Summary.MAP, Against: "arithmetic"}
	v, err := judge(aRep, cvRep, &row)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "reranker\trecall@10\tmap@10\tΔrecall [95%]\tΔmap [95%]\tmcnemar hit@10\tverdict")
	fmt.Fprintf(tw, "arithmetic\t%.4f\t%.4f\t\t\t\tbaseline\n", aRep.Summary.Recall, aRep.Summary.MAP)
	fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%s\t%s\t%s\t%s\n", row.Layer, row.Recall, row.MAP, row.DRecall, row.DMAP, row.McNemar, v)
	fmt.Fprintf(tw, "paired bootstrap over %d questions, %d resamples, seed %d\n", len(qs), bootstrapResamples, bootstrapSeed)
	return tw.Flush()
}

// cvReport runs the cross-validation and returns its per-question report.
func cvReport(ctx context.Context, eng *evpack.Engine, qs []learn.Question, pools []rerank.TrainQuery, k int, to rerank.TrainOptions, stderr io.Writer) (*obliqa.Report, error) {
	cv, err := learn.CrossValidate(ctx, eng, qs, pools, k, to.Seed, to, func(f int) {
		fmt.Fprintf(stderr, "fold %d of %d trained and scored\n", f+1, k)
	})
	if err != nil {
		return nil, err
	}
	rep := reportOf(cv.Per)
	for _, r := range cv.Ranked {
		rep.Results = append(rep.Results, obliqa.Result{Ranked: r})
	}
	return rep, nil
}

func reportOf(per []eval.Scores) *obliqa.Report {
	return &obliqa.Report{Per: per, Summary: eval.Summarize(per)}
}
