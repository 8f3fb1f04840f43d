package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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

// checkTrainer refuses trainer settings before any data is read: a bad
// --trees or --lr failed only in rerank.Train, after the corpus was indexed
// and every question asked (and, in eval ablate, after every other layer
// was run). Zero, which the library reads as "the default", is refused
// too: each flag has its default written out, so --lr 0 is a mistake, not
// a request for 0.05.
func checkTrainer(to rerank.TrainOptions) error {
	for _, z := range []struct {
		flag string
		zero bool
	}{{"--trees", to.Trees == 0}, {"--leaves", to.Leaves == 0}, {"--lr", to.LearningRate == 0}, {"--min-leaf", to.MinLeafRows == 0},
		{"--l2", to.L2 == 0}, {"--subsample", to.Subsample == 0}} {
		if z.zero {
			return usageErr("%s 0: leave the flag out for its default", z.flag)
		}
	}
	if _, err := to.WithDefaults(); err != nil {
		return usageErr("trainer flags: %w", err)
	}
	return nil
}

// checkOutput refuses, before the work that makes it, an output path that
// cannot be written: empty, a directory, or in a directory that does not
// exist. (The file itself is written with fsutil.WriteAtomic.)
func checkOutput(flagName, path string) error {
	if path == "" {
		return usageErr("%s: empty path", flagName)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usageErr("%s %s: is a directory", flagName, path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return usageErr("%s %s: %w", flagName, path, err)
	} else if !fi.IsDir() {
		return usageErr("%s %s: %s is not a directory", flagName, path, dir)
	}
	return nil
}

// labelled loads a labelled set: the ObliQA form (--docs DIR --questions
// ObliQA_dev.json) or chunk JSONL files with question JSONL (--corpus FILE...
// --questions FILE.jsonl). In the ObliQA form a gold passage the corpus
// cannot cite (empty, or absent) stays gold and counts as missed, as the
// official scorer counts it; in the JSONL form it is an error. docOf maps
// every chunk ID a question may name as gold to its document, the
// passages the corpus cannot cite included (--group-by gold-document).
func labelled(ctx context.Context, docs string, corpus []string, questions, asOf string, stderr io.Writer) (recs []connectors.Record, qs []learn.Question, docOf map[string]string, _ error) {
	if docs != "" {
		if len(corpus) > 0 || asOf != "" {
			return nil, nil, nil, usageErr("--docs (the ObliQA form) takes neither --corpus nor --as-of (the JSONL form): give one form")
		}
		o, err := loadObliQA(docs, questions)
		if err != nil {
			return nil, nil, nil, err
		}
		var skipped int
		recs, skipped = obliqa.Records(o)
		docOf = map[string]string{}
		for _, p := range o.Passages { // the empty ones too: not indexed, still gold
			docOf[p.ID] = strconv.Itoa(p.DocumentID)
		}
		qs = make([]learn.Question, len(o.Questions))
		indexed := map[string]bool{}
		for _, r := range recs {
			indexed[r.Chunk.ID] = true
		}
		missing := 0
		for i, q := range o.Questions {
			qs[i] = learn.Question{ID: q.ID, Where: questions, Text: q.Text, Gold: q.Gold, AsOf: obliqa.AsOf, Group: strconv.Itoa(q.Group)}
			for _, g := range q.Gold {
				if !indexed[g] {
					missing++
				}
			}
		}
		fmt.Fprintf(stderr, "obliqa: %d passages (%d empty, not indexed), %d questions, %d gold passages not citable (counted as missed)\n",
			len(recs), skipped, len(qs), missing)
		if len(qs) == 0 {
			return nil, nil, nil, usageErr("--questions %s: no questions", questions)
		}
		return recs, qs, docOf, nil
	}
	if len(corpus) == 0 || questions == "" {
		return nil, nil, nil, usageErr("need --docs DIR --questions FILE (ObliQA form) or --corpus FILE.jsonl... --questions FILE.jsonl")
	}
	var def asof.Date
	if asOf != "" {
		var err error
		if def, err = asof.ParseDate(asOf); err != nil {
			return nil, nil, nil, usageErr("--as-of: %v", err)
		}
	}
	recs, err := connectors.NewJSONL(corpus...).Read(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	qs, err = learn.LoadJSONL(questions, def)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(qs) == 0 {
		return nil, nil, nil, usageErr("--questions %s: no questions", questions)
	}
	docOf = map[string]string{}
	for _, r := range recs {
		docOf[r.Chunk.ID] = r.Chunk.DocID
	}
	if err := learn.CheckGold(qs, func(id string) bool { _, ok := docOf[id]; return ok }); err != nil {
		return nil, nil, nil, err
	}
	return recs, qs, docOf, nil
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
	groupBy := fs.String("group-by", "", "fold by group, so no group spans two folds: gold-document, gold-passage or field (the questions' group field); default: random folds")
	splitBy := fs.String("split-by", "", "date: split in time, each fold's model answering only questions dated after every question it saw")
	pool := fs.Int("pool", 0, "candidates the reranker sees per question, in training and evaluation (default 50)")
	opts := trainFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *out == "" {
		return usageErr("need --out MODEL")
	}
	if err := checkOutput("--out", *out); err != nil {
		return err
	}
	plan := foldPlan{k: *folds, groupBy: *groupBy, splitBy: *splitBy}
	if err := plan.checkScheme(); err != nil {
		return err
	}
	if plan.k == 0 && (plan.groupBy != "" || plan.splitBy != "") {
		return usageErr("--group-by and --split-by choose the folds: only with --folds N")
	}
	if *pool < 0 || *pool > evpack.MaxPool { // refused by Open, after the corpus was read
		return usageErr("--pool %d: want 1 to %d (0: the default, %d)", *pool, evpack.MaxPool, evpack.DefaultPool)
	}
	to := opts()
	plan.seed = to.Seed
	if err := checkTrainer(to); err != nil {
		return err
	}
	recs, qs, docOf, err := labelled(ctx, *docs, corpus, *questions, *asOf, stderr)
	if err != nil {
		return err
	}
	eng, err := evpack.OpenMemory(evpack.Options{Pool: *pool})
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
	if plan.k > 0 {
		split, err := plan.split(qs, documentKey(docOf))
		if err != nil {
			return err
		}
		if err := crossValidate(ctx, eng, qs, pools, split, to, stdout, stderr); err != nil {
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

// foldPlan is the fold scheme the flags ask for.
type foldPlan struct {
	k                int
	groupBy, splitBy string
	seed             uint64
}

// documentKey is the --group-by gold-document key of a gold chunk ID: its
// document in docOf (labelled's), else the ID itself (ObliQA's gold that
// names no passage of the corpus). Gold passages the corpus did not index
// (ObliQA's empty ones) were keyed "", one key that joined every question
// naming one, in whichever documents, into a single group.
func documentKey(docOf map[string]string) func(string) string {
	return func(id string) string {
		if d, ok := docOf[id]; ok {
			return "document\x00" + d
		}
		return "chunk\x00" + id
	}
}

func (p foldPlan) split(qs []learn.Question, docOf func(string) string) (learn.Split, error) {
	switch {
	case p.splitBy == "date":
		return learn.DateFolds(qs, p.k)
	case p.groupBy != "":
		keys, err := learn.GroupKeys(qs, p.groupBy, docOf)
		if err != nil {
			return learn.Split{}, err
		}
		return learn.GroupedFolds(keys, p.k, p.seed, p.groupBy)
	}
	return learn.RandomFolds(len(qs), p.k, p.seed)
}

// crossValidate prints the cross-validated figures of the learned reranker
// against the Arithmetic reranker on the questions the split holds out, with
// the ablation ledger's verdict and the fold scheme it holds for.
func crossValidate(ctx context.Context, eng *evpack.Engine, qs []learn.Question, pools []rerank.TrainQuery, split learn.Split, to rerank.TrainOptions, stdout, stderr io.Writer) error {
	cv, err := runCV(ctx, eng, qs, pools, split, to, stderr)
	if err != nil {
		return err
	}
	// Only held-out questions are compared: a date split's first block has
	// no cross-validated answer.
	var heldQs []learn.Question
	var heldPer []eval.Scores
	var heldRanked [][]string
	for i, q := range qs {
		if cv.Held[i] {
			heldQs, heldPer, heldRanked = append(heldQs, q), append(heldPer, cv.Per[i]), append(heldRanked, cv.Ranked[i])
		}
	}
	qs = heldQs
	cvRep := reportOf(heldPer)
	for _, r := range heldRanked {
		cvRep.Results = append(cvRep.Results, obliqa.Result{Ranked: r})
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
	row := ledgerRow{Layer: "learned (" + split.Scheme + ")", Recall: cvRep.Summary.Recall, MAP: cvRep.Summary.MAP, Against: "arithmetic"}
	v, err := judge(aRep, cvRep, &row)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "reranker\trecall@10\tmap@10\tΔrecall [95%]\tΔmap [95%]\tmcnemar hit@10\tverdict")
	fmt.Fprintf(tw, "arithmetic\t%.4f\t%.4f\t\t\t\tbaseline\n", aRep.Summary.Recall, aRep.Summary.MAP)
	fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%s\t%s\t%s\t%s\n", row.Layer, row.Recall, row.MAP, row.DRecall, row.DMAP, row.McNemar, v)
	fmt.Fprintf(tw, "folds: %s; paired bootstrap over the %d held-out questions, %d resamples, seed %d\n", split.Scheme, len(qs), bootstrapResamples, bootstrapSeed)
	return tw.Flush()
}

func runCV(ctx context.Context, eng *evpack.Engine, qs []learn.Question, pools []rerank.TrainQuery, split learn.Split, to rerank.TrainOptions, stderr io.Writer) (*learn.CV, error) {
	return learn.CrossValidate(ctx, eng, qs, pools, split, to, func(f int) {
		fmt.Fprintf(stderr, "fold %d of %d trained and scored\n", f+1, len(split.Held))
	})
}

// cvReport runs a cross-validation in k random folds and returns its
// per-question report.
func cvReport(ctx context.Context, eng *evpack.Engine, qs []learn.Question, pools []rerank.TrainQuery, k int, to rerank.TrainOptions, stderr io.Writer) (*obliqa.Report, error) {
	split, err := learn.RandomFolds(len(qs), k, to.Seed)
	if err != nil {
		return nil, err
	}
	cv, err := runCV(ctx, eng, qs, pools, split, to, stderr)
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
