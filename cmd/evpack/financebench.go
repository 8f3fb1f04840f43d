package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/internal/financebench"
)

// cmdEvalFinanceBench runs the year leg's ablation ledger over FinanceBench
// (companies 3 and A to L): none / company filter / + name strip / + year
// boost / + year list, and the hard year filters as references.
func cmdEvalFinanceBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval financebench", stderr)
	dir := fs.String("dir", "", "the FinanceBench directory (chunks.jsonl.gz, questions.jsonl)")
	companies := fs.String("companies", "", "comma-separated CIKs to keep (default: every company)")
	boost := fs.Int("boost", evpack.DefaultPeriodBoost, "the year boost's percent")
	depth := fs.Int("depth", evpack.DefaultPeriodList, "the year list's depth")
	index := fs.String("index", "", "keep the index in this directory (made on the first run, reused after)")
	asJSON := fs.Bool("json", false, "print the ledger as one JSON object on the last line")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *dir == "" {
		return usageErr("eval financebench needs --dir DIR")
	}
	var ciks []string
	if *companies != "" {
		ciks = strings.Split(*companies, ",")
		for _, c := range ciks {
			if strings.TrimSpace(c) == "" || strings.TrimSpace(c) != c {
				return usageErr("--companies %q: want CIKs separated by commas, none empty and no spaces", *companies)
			}
		}
	}
	qs, err := financebench.LoadQuestions(*dir)
	if err != nil {
		return err
	}
	qs = financebench.WithGold(qs)
	if ciks != nil {
		qs = financebench.OfCompanies(qs, ciks)
	}
	eng, err := financebench.Open(ctx, *dir, *index, ciks, stderr)
	if err != nil {
		return err
	}
	defer eng.Close()
	l, err := financebench.Ablate(ctx, eng, qs, financebench.Layers(*boost, *depth), stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLine(stdout, map[string]any{"ledger": l.Rows, "winner": l.Winner, "questions": l.Questions,
			"bootstrap": map[string]int{"resamples": financebench.Resamples, "seed": financebench.Seed}})
	}
	if err := l.Write(stdout); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout)
	return err
}
