package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStrayArgumentsAreRefused: a command whose inputs are all flags
// dropped positional arguments without a word; "rerank train --corpus
// a.jsonl b.jsonl" trained on a.jsonl alone and exited 0.
func TestStrayArgumentsAreRefused(t *testing.T) {
	dir := t.TempDir()
	docs, questions := tinyObliQA(t)
	for _, args := range [][]string{
		{"rerank", "train", "--corpus", learnData("corpus.jsonl"), filepath.Join(dir, "missing.jsonl"), "--questions", learnData("questions.jsonl"), "--out", filepath.Join(dir, "m.evm")},
		{"eval", "obliqa", "--docs", docs, "--questions", questions, "extra"},
		{"eval", "asof", "--docs", docs, "--questions", questions, "extra"},
		{"eval", "ablate", "--docs", docs, "--questions", questions, "extra"},
		{"eval", "shapes", "--docs", docs, "--questions", questions, "extra"},
		{"eval", "financebench", "--dir", dir, "extra"},
	} {
		code, _, errs := runCLI(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, errs)
		require.Contains(t, errs, "unexpected argument", args)
	}
	_, err := os.Stat(filepath.Join(dir, "m.evm"))
	require.True(t, os.IsNotExist(err), "no model written")
}

// TestRerankTrainRefusesBeforeReadingData: settings no run can use are
// usage errors before the corpus is indexed and the questions asked (they
// failed in rerank.Train, after both, or were ignored).
func TestRerankTrainRefusesBeforeReadingData(t *testing.T) {
	dir := t.TempDir()
	docs, questions := tinyObliQA(t)
	// A questions file that would fail if read: every refusal below comes first.
	unread := filepath.Join(dir, "unread.jsonl")
	require.NoError(t, os.WriteFile(unread, []byte("not json\n"), 0o644))
	base := func(extra ...string) []string {
		return append([]string{"rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", unread, "--out", filepath.Join(dir, "m.evm")}, extra...)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{base("--folds", "-3"), "--folds -3"}, // read as 0: no cross-validation, exit 0
		{base("--folds", "1"), "--folds 1"},
		{base("--folds", "0", "--group-by", "gold-passage"), "only with --folds"}, // ignored
		{base("--group-by", "topic"), `--group-by "topic"`},
		{base("--trees", "-1"), "trees -1"},
		{base("--lr", "NaN"), "learning rate NaN"},
		{base("--subsample", "1.5"), "subsample 1.5"},
		{base("--lr", "0"), "--lr 0: leave the flag out"}, // read as the default 0.05
		{base("--leaves", "1"), "leaves 1"},
		{base("--pool", "-1"), "--pool -1"},
		{base("--pool", "1001"), "--pool 1001"},
		{[]string{"rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", unread, "--out", dir}, "is a directory"},
		{[]string{"rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", unread, "--out", filepath.Join(dir, "no", "m.evm")}, "no such file"},
		// --corpus and --as-of were ignored beside --docs.
		{[]string{"rerank", "train", "--docs", docs, "--questions", questions, "--corpus", unread, "--out", filepath.Join(dir, "m.evm")}, "give one form"},
		{[]string{"rerank", "train", "--docs", docs, "--questions", questions, "--as-of", "garbage", "--out", filepath.Join(dir, "m.evm")}, "give one form"},
	} {
		code, _, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.says, c.args)
		require.NotContains(t, errs, "collecting the pools", "%v: refused after reading the data", c.args)
	}
	_, err := os.Stat(filepath.Join(dir, "m.evm"))
	require.True(t, os.IsNotExist(err), "no model written")
}

// TestRerankTrainRefusesHostileQuestions: a questions file whose lines hold
// more than one object, a key twice, or nothing at all is refused naming
// file:line; each was trained on.
func TestRerankTrainRefusesHostileQuestions(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(learnData("questions.jsonl"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(raw), "\n")
	for _, c := range []struct {
		name, body, says string
	}{
		{"garbage after the object", string(raw) + first + " tail\n", "q.jsonl:290: data after the JSON object"},
		{"a key twice", `{"id":"x","question":"q","gold":["ghost"],"gold":["01d5dcd1-638a-40db-8121-4118c74f392d"],"as_of":"2025-01-01"}`, `q.jsonl:1: key "gold" appears twice in one object`},
		{"empty", "", "no questions"},
		{"blank lines only", "\n \r\n\t\n", "no questions"},
	} {
		q := filepath.Join(dir, "q.jsonl")
		require.NoError(t, os.WriteFile(q, []byte(c.body), 0o644))
		code, _, errs := runCLI(t, "rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", q, "--out", filepath.Join(dir, "m.evm"), "--folds", "0")
		require.Equal(t, 2, code, "%s: %s", c.name, errs)
		require.Contains(t, errs, c.says, c.name)
	}
}

// TestRerankTrainRefusesAModelWithoutASplit: two questions over three
// passages cannot fill a leaf of --min-leaf rows; the trainer wrote 300
// one-leaf trees that scored every candidate 0 (chunk IDs alone ordering
// the pool), and exited 0.
func TestRerankTrainRefusesAModelWithoutASplit(t *testing.T) {
	docs, questions := tinyObliQA(t)
	out := filepath.Join(t.TempDir(), "m.evm")
	code, _, errs := runCLI(t, "rerank", "train", "--docs", docs, "--questions", questions, "--out", out, "--folds", "0")
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "no tree found a split")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "no model written")
}

// TestEvalRefusesBeforeRunning: eval's counts and outputs are checked
// before the corpus is indexed.
func TestEvalRefusesBeforeRunning(t *testing.T) {
	docs, questions := tinyObliQA(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"eval", "asof", "--docs", docs, "--questions", questions, "--histories", "0"}, "--histories 0"},   // a table of zeros, exit 0
		{[]string{"eval", "asof", "--docs", docs, "--questions", questions, "--histories", "-5"}, "--histories -5"}, // read as "every passage"
		{[]string{"eval", "ablate", "--docs", docs, "--questions", questions, "--folds", "-1"}, "--folds -1"},
		{[]string{"eval", "ablate", "--docs", docs, "--questions", questions, "--trees", "-4"}, "trees -4"},
		{[]string{"eval", "shapes", "--docs", docs, "--questions", questions, "--folds", "2", "--lr", "2"}, "learning rate 2"},
		{[]string{"eval", "obliqa", "--docs", docs, "--questions", questions, "--per-question", dir}, "is a directory"},
		{[]string{"eval", "obliqa", "--docs", docs, "--questions", questions, "--pool", "-5"}, "--pool -5"},
		{[]string{"eval", "financebench", "--dir", dir, "--companies", "1,,2"}, "none empty"},
	} {
		code, _, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.says, c.args)
		require.NotContains(t, errs, "indexing", "%v: refused after indexing", c.args)
	}
}

// TestPerQuestionFileIsWholeOrAbsent: --per-question is written atomically
// over an existing file; it was truncated by os.Create before a line was
// written.
func TestPerQuestionFileIsWholeOrAbsent(t *testing.T) {
	docs, questions := tinyObliQA(t)
	out := filepath.Join(t.TempDir(), "per.jsonl")
	require.NoError(t, os.WriteFile(out, []byte("old\n"), 0o644))
	code, _, errs := runCLI(t, "eval", "obliqa", "--docs", docs, "--questions", questions, "--per-question", out)
	require.Equal(t, 0, code, errs)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, 2, bytes.Count(raw, []byte("\n")), "%s", raw)
	ents, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, ents, 1, "no temp file left")
}

// TestVectorsImportRefusals: IN and OUT the same file (the rename replaced
// the input), a negative --max-words (read as "every word") and an OUT that
// is a directory; an input error names IN.
func TestVectorsImportRefusals(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "w.json")
	body := `{"dimensions":2,"words":["a","b"],"vectors":{"a":[1,2,0,0],"b":[3,4,0,1]}}`
	require.NoError(t, os.WriteFile(in, []byte(body), 0o644))
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"vectors", "import", in, in}, "the same file"},
		{[]string{"vectors", "import", in, filepath.Join(dir, ".", "w.json")}, "the same file"},
		{[]string{"vectors", "import", "--max-words", "-1", in, filepath.Join(dir, "o.evv")}, "--max-words -1"},
		{[]string{"vectors", "import", in, dir}, "is a directory"},
		{[]string{"vectors", "import", dir, filepath.Join(dir, "o.evv")}, "is a directory"},
	} {
		code, _, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.says, c.args)
	}
	raw, err := os.ReadFile(in)
	require.NoError(t, err)
	require.Equal(t, body, string(raw), "the input is intact")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"dimensions":2,"words":["a"],"vectors":{"a":[1e308,1]}}`), 0o644))
	code, _, errs := runCLI(t, "vectors", "import", bad, filepath.Join(dir, "o.evv"))
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "IN "+bad+": vectors: bad vectors file")
}

// TestModelAndEmbedderErrorsNameTheFlag: "--reranker cross-encoder:" and
// "--embedder static:" with no path loaded from the working directory or
// opened "" ("vectors: open : no such file or directory", naming no flag);
// a model path was named twice.
func TestModelAndEmbedderErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--reranker", "cross-encoder:"}, `--reranker "cross-encoder:": want`},
		{[]string{"--embedder", "static:"}, `--embedder "static:": no path after static:`},
		{[]string{"--embedder", "onnx:"}, `--embedder "onnx:": no path after onnx:`},
		{[]string{"--embedder", "static:" + filepath.Join(dir, "none.evv")}, "--embedder static:" + filepath.Join(dir, "none.evv") + ": vectors: open "},
		{[]string{"--reranker", "learned:" + dir}, "rerank: bad model: " + dir + ": not a regular file\n"},
	} {
		args := append([]string{"query", "--index", filepath.Join(dir, "idx"), "--as-of", "2026-01-15"}, c.args...)
		code, _, errs := runCLI(t, append(args, "q")...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.says, c.args)
	}
}
