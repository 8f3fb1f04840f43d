package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/rerank"
)

// shapesCVArgs runs eval shapes cross-validated on the small labelled set
// with few trees (as TestRerankTrainFoldSchemes trains).
func shapesCVArgs(questions string, extra ...string) []string {
	return append([]string{"eval", "shapes", "--corpus", learnData("corpus.jsonl"), "--questions", questions,
		"--trees", "10", "--min-leaf", "20", "--seed", "7"}, extra...)
}

// rowRe matches one row of the shapes table and captures its recall@10,
// MAP@10 and the rest of the line.
func rowRe(shape, reranker string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(shape) + ` +` + regexp.QuoteMeta(reranker) + ` +(\d\.\d{4}) +(\d\.\d{4})(.*)$`)
}

// TestEvalShapesCrossValidated runs the shapes table with the learned row
// cross-validated (folds grouped by gold passage) on the small labelled set.
// It prints the seed, trainer and fold scheme, one row per shape and
// reranker with a verdict against none; the as-is rows equal what other
// paths compute for the same questions: none and the arithmetic reranker
// 0.7329 / 0.5825 and 0.7484 / 0.6054 (the arithmetic figure is
// TestLearnedBeatsArithmeticOnHeldOut's), and the learned row is rerank
// train's cross-validated figure under the same folds and trainer, since
// both train each fold on the as-is pools of the other fold.
func TestEvalShapesCrossValidated(t *testing.T) {
	code, out, errs := runCLI(t, shapesCVArgs(learnData("questions.jsonl"), "--folds", "2", "--group-by", "gold-passage")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "seed 7, trainer trees=10 leaves=16 lr=0.05 min_leaf=20 l2=1 subsample=0.8 seed=7 bins=255, data blake3:")
	require.Contains(t, out, "\nfolds: 2 folds grouped by gold-passage (124 groups), seed 7; each fold's model is trained on the other folds' pools of the as-is corpus")
	require.Contains(t, out, "paired bootstrap over the 289 held-out questions, 10000 resamples, seed 1; shuffle seed 7")
	noneRows := map[string]string{}
	for _, shape := range []string{"as-is", "one-document", "passage-per-document", "no-headings", "shuffled"} {
		m := rowRe(shape, "none").FindStringSubmatch(out)
		require.NotNil(t, m, "%s / none:\n%s", shape, out)
		require.Equal(t, "baseline", strings.TrimSpace(m[3]))
		noneRows[shape] = m[1] + " " + m[2]
		for _, rr := range []string{"arithmetic", "learned (cross-validated)"} {
			m := rowRe(shape, rr).FindStringSubmatch(out)
			require.NotNil(t, m, "%s / %s:\n%s", shape, rr, out)
			require.Regexp(t, `^ +[+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\] +[+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\] +(won|lost|tied)$`, m[3])
		}
	}
	// 15 rows against none, then 5 of the learned row against the arithmetic.
	require.Equal(t, 20, len(regexp.MustCompile(`(?m) (baseline|won|lost|tied)$`).FindAllString(out, -1)), out)
	require.Contains(t, out, "\nshape                 learned vs arithmetic: Δrecall [95%]  Δmap [95%]")
	// BM25 reads no document context: only no-headings (which drops short
	// passages) can move none.
	for _, shape := range []string{"one-document", "passage-per-document", "shuffled"} {
		require.Equal(t, noneRows["as-is"], noneRows[shape], shape)
	}
	require.Equal(t, "0.7329 0.5825", noneRows["as-is"])
	arith := rowRe("as-is", "arithmetic").FindStringSubmatch(out)
	require.Equal(t, "0.7484 0.6054", arith[1]+" "+arith[2])

	code, trained, errs := runCLI(t, "rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", learnData("questions.jsonl"),
		"--out", filepath.Join(t.TempDir(), "m.evm"), "--folds", "2", "--group-by", "gold-passage", "--trees", "10", "--min-leaf", "20", "--seed", "7")
	require.Equal(t, 0, code, errs)
	iv := `([+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\])`
	cv := regexp.MustCompile(`(?m)^learned \(2 folds grouped by gold-passage \(124 groups\), seed 7\) +(\d\.\d{4}) +(\d\.\d{4}) +` + iv + ` +` + iv + ` +\S+ \S+ +(won|lost|tied)$`).FindStringSubmatch(trained)
	require.NotNil(t, cv, trained)
	learned := rowRe("as-is", "learned (cross-validated)").FindStringSubmatch(out)
	require.Equal(t, cv[1]+" "+cv[2], learned[1]+" "+learned[2], "the as-is learned row is rerank train's cross-validated figure")
	vsArith := regexp.MustCompile(`(?m)^as-is +` + iv + ` +` + iv + ` +(won|lost|tied)$`).FindStringSubmatch(out)
	require.NotNil(t, vsArith, out)
	require.Equal(t, cv[3:], vsArith[1:], "as-is, learned against the arithmetic is rerank train's verdict")

	code, again, errs := runCLI(t, shapesCVArgs(learnData("questions.jsonl"), "--folds", "2", "--group-by", "gold-passage")...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, out, again, "the same flags give the same table")
}

// TestEvalShapesDateSplit: a date split holds out every block but the
// first, and the table compares only those questions. The small set's
// questions are given three dates in turn (question i: 2025-01-0(1 + i%3)),
// so the first block is the 97 questions of 2025-01-01 and 192 are held.
func TestEvalShapesDateSplit(t *testing.T) {
	raw, err := os.ReadFile(learnData("questions.jsonl"))
	require.NoError(t, err)
	var dated bytes.Buffer
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		line = strings.Replace(line, `"as_of": "2025-01-01"`, fmt.Sprintf(`"as_of": "2025-01-0%d"`, 1+i%3), 1)
		dated.WriteString(line + "\n")
	}
	require.Equal(t, 96, strings.Count(dated.String(), `"2025-01-02"`))
	qf := filepath.Join(t.TempDir(), "dated.jsonl")
	require.NoError(t, os.WriteFile(qf, dated.Bytes(), 0o644))
	code, out, errs := runCLI(t, shapesCVArgs(qf, "--folds", "2", "--split-by", "date", "--shape", "shuffled")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "folds: date split, 3 blocks, each answered by a model of the blocks before it;")
	require.Contains(t, out, "paired bootstrap over the 192 held-out questions")
	for _, rr := range []string{"none", "arithmetic", "learned (cross-validated)"} {
		require.Regexp(t, rowRe("shuffled", rr), out)
		require.NotRegexp(t, rowRe("as-is", rr), out, "--shape shuffled ranks that shape only")
	}
}

// TestEvalShapesBadFolds: flags of the cross-validated mode without --folds,
// two fold schemes, unknown schemes and impossible fold counts are usage
// errors (exit code 2) before any data is read; a scheme the data cannot
// fill is rerank.ErrTrain, also exit code 2.
func TestEvalShapesBadFolds(t *testing.T) {
	qs := learnData("questions.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--group-by", "gold-passage"}, "--group-by: only with --folds"},
		{[]string{"--trees", "10", "--split-by", "date"}, "--split-by, --trees: only with --folds"},
		{[]string{"--folds", "5", "--group-by", "gold-passage", "--split-by", "date"}, "--group-by and --split-by are two fold schemes: give one"},
		{[]string{"--folds", "5", "--split-by", "month"}, `--split-by "month": want date`},
		{[]string{"--folds", "5", "--group-by", "topic"}, `--group-by "topic": want gold-document, gold-passage or field`},
		{[]string{"--folds", "1"}, "--folds 1: want 0"},
		{[]string{"--folds", "-2"}, "--folds -2: want 0"},
	} {
		// No data is read: the files named do not exist.
		args := append([]string{"--docs", "no-such-dir", "--questions", "no-such-file.json"}, c.args...)
		err := cmdEvalShapes(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		var ee *exitError
		require.True(t, errors.As(err, &ee), "%v: %v", c.args, err)
		require.Equal(t, 2, ee.code, "%v", c.args)
		require.ErrorContains(t, err, c.want, "%v", c.args)
		code, _, errs := runCLI(t, append([]string{"eval", "shapes"}, args...)...)
		require.Equal(t, 2, code, errs)
	}
	// The corpus in JSONL form is read only by the cross-validated mode.
	code, _, errs := runCLI(t, "eval", "shapes", "--corpus", learnData("corpus.jsonl"), "--questions", qs)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--corpus: only with --folds")

	// The small set's questions carry no group field, and one date.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--folds", "2", "--group-by", "field"}, "has no group field to fold by"},
		{[]string{"--folds", "2", "--split-by", "date"}, "cannot be cut into 3 blocks"},
	} {
		err := cmdEvalShapes(context.Background(), shapesCVArgs(qs, c.args...)[2:], &bytes.Buffer{}, &bytes.Buffer{})
		require.ErrorIs(t, err, rerank.ErrTrain, "%v", c.args)
		require.ErrorContains(t, err, c.want)
		require.Equal(t, 2, exitCode(err))
	}
}
