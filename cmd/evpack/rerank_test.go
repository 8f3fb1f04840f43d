package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/rerank"
)

func learnData(name string) string {
	return filepath.Join("..", "..", "internal", "learn", "testdata", name)
}

// TestRerankTrainJSONL trains from the JSONL form twice: cross-validation is
// printed with the ledger's verdict against the arithmetic, the seed is
// printed, and the two model files are byte-identical and load.
func TestRerankTrainJSONL(t *testing.T) {
	dir := t.TempDir()
	var files [][]byte
	for _, name := range []string{"a.evm", "b.evm"} {
		out := filepath.Join(dir, name)
		code, stdout, errs := runCLI(t, "rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", learnData("questions.jsonl"),
			"--out", out, "--folds", "2", "--trees", "10", "--min-leaf", "20", "--seed", "7")
		require.Equal(t, 0, code, errs)
		require.Contains(t, stdout, "seed 7, trainer trees=10 leaves=16 lr=0.05 min_leaf=20 l2=1 subsample=0.8 seed=7 bins=255")
		require.Contains(t, stdout, "learned (2 random folds, seed 7)")
		require.Contains(t, stdout, "folds: 2 random folds, seed 7; paired bootstrap over the 289 held-out questions")
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		files = append(files, raw)
	}
	require.Equal(t, files[0], files[1], "the same input and seed give the same model file")
	m, err := rerank.LoadModel(filepath.Join(dir, "a.evm"))
	require.NoError(t, err)
	require.Equal(t, 10, m.Trees())

	code, out, errs := runCLI(t, "eval", "obliqa", "--reranker", "learned:"+filepath.Join(dir, "nope.evm"), "--docs", "x", "--questions", "y")
	require.Equal(t, 2, code, out)
	require.Contains(t, errs, "rerank: bad model")
}

// TestRerankTrainFoldSchemes: grouped folds and a date split are named in the
// verdict, a date split compares only the questions it holds out, the final
// model does not depend on the fold scheme, and conflicting or unknown
// schemes are usage errors.
func TestRerankTrainFoldSchemes(t *testing.T) {
	dir := t.TempDir()
	train := func(name string, extra ...string) (int, string, string, []byte) {
		out := filepath.Join(dir, name)
		args := append([]string{"rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", learnData("questions.jsonl"),
			"--out", out, "--folds", "2", "--trees", "10", "--min-leaf", "20", "--seed", "7"}, extra...)
		code, stdout, errs := runCLI(t, args...)
		raw, _ := os.ReadFile(out)
		return code, stdout, errs, raw
	}
	_, _, _, random := train("random.evm")
	code, stdout, errs, grouped := train("grouped.evm", "--group-by", "gold-document")
	require.Equal(t, 0, code, errs)
	require.Contains(t, stdout, "learned (2 folds grouped by gold-document (3 groups), seed 7)")
	require.Equal(t, random, grouped, "the model trained on every question is the same whatever the folds")

	code, stdout, errs, _ = train("passage.evm", "--group-by", "gold-passage")
	require.Equal(t, 0, code, errs)
	require.Contains(t, stdout, "folds grouped by gold-passage")

	// Every question of the small set has the same as-of date: no date split.
	code, _, errs, _ = train("date.evm", "--split-by", "date")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "cannot be cut into 3 blocks")

	for _, bad := range [][]string{{"--group-by", "topic"}, {"--split-by", "month"}, {"--group-by", "gold-passage", "--split-by", "date"}, {"--group-by", "field"}} {
		code, _, errs, _ = train("bad.evm", bad...)
		require.Equal(t, 2, code, "%v: %s", bad, errs)
	}
}

// TestRerankTrainGoldNotIndexed: a labelled question whose gold is not in
// the corpus is a typed error naming file:line and the question.
func TestRerankTrainGoldNotIndexed(t *testing.T) {
	dir := t.TempDir()
	qf := filepath.Join(dir, "q.jsonl")
	raw, err := os.ReadFile(learnData("questions.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitN(string(raw), "\n", 3)
	bad := lines[0] + "\n" + `{"id":"ghost-q","question":"What is a ghost?","gold":["no-such-chunk"],"as_of":"2025-01-01"}` + "\n"
	require.NoError(t, os.WriteFile(qf, []byte(bad), 0o644))
	code, _, errs := runCLI(t, "rerank", "train", "--corpus", learnData("corpus.jsonl"), "--questions", qf, "--out", filepath.Join(dir, "m.evm"))
	require.Equal(t, 2, code)
	require.Contains(t, errs, `rerank: gold chunk not in the index: `+qf+`:2: question ghost-q: gold "no-such-chunk"`)
	_, err = os.Stat(filepath.Join(dir, "m.evm"))
	require.True(t, os.IsNotExist(err), "nothing written")
}

// TestQueryAndVerifyWithTheLearnedReranker: a pack ranked by the embedded
// model (the default, and by name) names it in its fingerprint and verifies
// with it, not with the arithmetic reranker; a pack ranked with --reranker
// arithmetic verifies only with that.
func TestQueryAndVerifyWithTheLearnedReranker(t *testing.T) {
	dir := ingestTestCorpus(t)
	code, out, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", "--reranker", "learned",
		"How long must records be retained?")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "learned/1 model=blake3:")
	code, byDefault, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json",
		"How long must records be retained?")
	require.Equal(t, 0, code, errs)
	require.Equal(t, out, byDefault, "the learned reranker is the default")
	pack := filepath.Join(t.TempDir(), "pack.json")
	require.NoError(t, os.WriteFile(pack, []byte(out), 0o644))
	code, out, errs = runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "replays byte-identically")
	code, out, _ = runCLI(t, "verify", "--index", dir, "--reranker", "arithmetic", pack)
	require.Equal(t, 1, code, "the arithmetic reranker cannot vouch for a learned pack")
	require.Contains(t, out, "FAILED")

	code, out, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", "--reranker", "arithmetic",
		"How long must records be retained?")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "arithmetic/1 ")
	require.NoError(t, os.WriteFile(pack, []byte(out), 0o644))
	code, _, errs = runCLI(t, "verify", "--index", dir, "--reranker", "arithmetic", pack)
	require.Equal(t, 0, code, errs)
	code, _, _ = runCLI(t, "verify", "--index", dir, pack)
	require.Equal(t, 1, code, "the learned reranker cannot vouch for an arithmetic pack")
}

// TestGroupByGoldDocumentKeepsUnindexedGoldInItsDocument: ObliQA gold
// passages with no text are not indexed; --group-by gold-document keyed
// them all "", joining q1 (document 1) and q2 (document 2) into one group,
// whose fold then had no question to train on ("cannot train"). Each is
// grouped with its document.
func TestGroupByGoldDocumentKeepsUnindexedGoldInItsDocument(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "documents")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	passage := func(id string, doc int, pid, text string) map[string]any {
		return map[string]any{"ID": id, "DocumentID": doc, "PassageID": pid, "Passage": text}
	}
	for doc, ps := range map[int][]map[string]any{
		1: {passage("p1", 1, "1.1", "A firm must keep a capital buffer of ten percent for its clients."), passage("p2", 1, "1.2", ""),
			passage("p5", 1, "1.3", "A firm must have auditors report on its clients to the board every year.")},
		2: {passage("p3", 2, "2.1", "A firm must hold the money of its clients in a segregated account."), passage("p4", 2, "2.2", ""),
			passage("p6", 2, "2.3", "A firm must answer the complaints of its clients within eight weeks.")},
	} {
		raw, err := json.Marshal(ps)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(docs, fmt.Sprintf("%d.json", doc)), raw, 0o644))
	}
	question := func(id, text string, doc int, pid string) map[string]any {
		return map[string]any{"QuestionID": id, "Question": text, "Group": 1, "Passages": []map[string]any{{"DocumentID": doc, "PassageID": pid}}}
	}
	raw, err := json.Marshal([]map[string]any{
		question("q1", "What must a firm tell its clients?", 1, "1.2"),
		question("q2", "What must a firm give its clients?", 2, "2.2"),
		question("q3", "How large a capital buffer must a firm keep for its clients?", 1, "1.1"),
		question("q4", "Where must a firm hold the money of its clients?", 2, "2.1"),
	})
	require.NoError(t, err)
	questions := filepath.Join(dir, "q.json")
	require.NoError(t, os.WriteFile(questions, raw, 0o644))
	code, out, errs := runCLI(t, "rerank", "train", "--docs", docs, "--questions", questions, "--out", filepath.Join(dir, "m.evm"),
		"--folds", "2", "--group-by", "gold-document", "--min-leaf", "1", "--trees", "5")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "folds: 2 folds grouped by gold-document (2 groups), seed 1")
}
