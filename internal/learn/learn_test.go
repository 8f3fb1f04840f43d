package learn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/rerank"
)

func smallCorpus(t *testing.T) (*evpack.Engine, []Question) {
	t.Helper()
	ctx := context.Background()
	recs, err := connectors.NewJSONL(filepath.Join("testdata", "corpus.jsonl")).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := LoadJSONL(filepath.Join("testdata", "questions.jsonl"), asof.Date{})
	if err != nil {
		t.Fatal(err)
	}
	indexed := map[string]bool{}
	for _, r := range recs {
		indexed[r.Chunk.ID] = true
	}
	if err := CheckGold(qs, func(id string) bool { return indexed[id] }); err != nil {
		t.Fatal(err)
	}
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		t.Fatal(err)
	}
	return eng, qs
}

// TestLearnedBeatsArithmeticOnHeldOut trains on the small labelled corpus
// with 5-fold cross-validation: every question is answered by a model that
// never saw it, and the held-out figures beat the Arithmetic reranker's.
func TestLearnedBeatsArithmeticOnHeldOut(t *testing.T) {
	const seed = 1
	t.Logf("fold and subsample seed %d", seed)
	ctx := context.Background()
	eng, qs := smallCorpus(t)
	pools, err := Collect(ctx, eng, qs)
	if err != nil {
		t.Fatal(err)
	}
	opts := rerank.TrainOptions{Trees: 100, LearningRate: 0.1, MinLeafRows: 20, Seed: seed}
	split, err := RandomFolds(len(qs), 5, seed)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := CrossValidate(ctx, eng, qs, pools, split, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	arith, err := rerank.NewArithmetic(rerank.DefaultWeights)
	if err != nil {
		t.Fatal(err)
	}
	ranked, err := Ranked(ctx, eng, arith, qs)
	if err != nil {
		t.Fatal(err)
	}
	a, l := eval.Summarize(Scores(qs, ranked)), eval.Summarize(cv.Per)
	got := fmt.Sprintf("questions %d\narithmetic recall@10 %.4f map@10 %.4f\nlearned (5-fold cv) recall@10 %.4f map@10 %.4f\n",
		len(qs), a.Recall, a.MAP, l.Recall, l.MAP)
	t.Log(got)
	const want = "questions 289\narithmetic recall@10 0.7484 map@10 0.6054\nlearned (5-fold cv) recall@10 0.7910 map@10 0.6313\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if l.Recall <= a.Recall || l.MAP <= a.MAP {
		t.Fatalf("the learned reranker does not beat the arithmetic on held-out questions")
	}

	// Random folds overstate: 213 of the 289 questions share a gold passage
	// with another, and a random fold trains on most of them. Folds grouped
	// by gold passage answer every question with a model that never saw its
	// gold passage, and the learned reranker's lead shrinks.
	keys, err := GroupKeys(qs, GroupGoldPassage, nil)
	if err != nil {
		t.Fatal(err)
	}
	gsplit, err := GroupedFolds(keys, 5, seed, GroupGoldPassage)
	if err != nil {
		t.Fatal(err)
	}
	gcv, err := CrossValidate(ctx, eng, qs, pools, gsplit, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := eval.Summarize(gcv.Per)
	got = fmt.Sprintf("%s: recall@10 %.4f map@10 %.4f", gsplit.Scheme, g.Recall, g.MAP)
	t.Log(got)
	if want := "5 folds grouped by gold-passage (124 groups), seed 1: recall@10 0.7691 map@10 0.5960"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if g.Recall >= l.Recall {
		t.Fatalf("grouped folds' recall %.4f is not below random folds' %.4f", g.Recall, l.Recall)
	}
}

func TestLoadJSONLBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body, says string
	}{
		{"unknown field (a typo would drop data)", `{"id":"q1","question":"x","gold":["a"],"golds":["b"]}`, `q.jsonl:1: json: unknown field "golds"`},
		{"no gold", "\n" + `{"id":"q1","question":"x","gold":[]}`, "q.jsonl:2: id, question and gold are required"},
		{"bad date", `{"id":"q1","question":"x","gold":["a"],"as_of":"2025-13-01"}`, "q.jsonl:1: as_of"},
		{"no date anywhere", `{"id":"q1","question":"x","gold":["a"]}`, "q.jsonl:1: no as_of and no default"},
		// Each of these was read as the line's first object, silently.
		{"garbage after the object", `{"id":"q1","question":"x","gold":["a"],"as_of":"2025-01-01"} trailing`, "q.jsonl:1: data after the JSON object"},
		{"a second object on the line", `{"id":"q1","question":"x","gold":["a"],"as_of":"2025-01-01"}{"id":"q2","question":"y","gold":["ghost"],"as_of":"2025-01-01"}`, "q.jsonl:1: data after the JSON object"},
		{"a stray closing brace", `{"id":"q1","question":"x","gold":["a"],"as_of":"2025-01-01"}}`, "q.jsonl:1: data after the JSON object"},
		{"gold twice (the last won)", `{"id":"q1","question":"x","gold":["typo"],"gold":["a"],"as_of":"2025-01-01"}`, `q.jsonl:1: key "gold" appears twice in one object`},
		{"null", "null", "q.jsonl:1: want a JSON object, not null"},
		{"an array", `["q1"]`, "q.jsonl:1: want a JSON object"},
		{"a line over 16 MiB", "\n" + `{"id":"q1","question":"` + strings.Repeat("x", 16<<20) + `","gold":["a"]}`, "q.jsonl:2: line longer than 16777216 bytes"},
		{"repeated ID", `{"id":"q1","question":"x","gold":["a"],"as_of":"2025-01-01"}` + "\n" + `{"id":"q1","question":"y","gold":["a"],"as_of":"2025-01-01"}`, `q.jsonl:2: question ID "q1" repeated`},
	}
	for _, c := range cases {
		path := filepath.Join(dir, "q.jsonl")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadJSONL(path, asof.Date{}); !errors.Is(err, rerank.ErrTrain) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrTrain saying %q", c.name, err, c.says)
		}
	}
}

func TestCheckGoldNamesThePlace(t *testing.T) {
	qs := []Question{
		{ID: "q1", Where: "q.jsonl:1", Gold: []string{"a"}},
		{ID: "q2", Where: "q.jsonl:2", Gold: []string{"a", "ghost"}},
	}
	err := CheckGold(qs, func(id string) bool { return id == "a" })
	if !errors.Is(err, rerank.ErrGoldNotIndexed) || err.Error() != `rerank: gold chunk not in the index: q.jsonl:2: question q2: gold "ghost"` {
		t.Fatalf("got %v", err)
	}
}

func TestFolds(t *testing.T) {
	f := Folds(10, 3, 1)
	count := make([]int, 3)
	for _, x := range f {
		count[x]++
	}
	if fmt.Sprint(count) != "[4 3 3]" {
		t.Fatalf("fold sizes %v (folds %v)", count, f)
	}
	if fmt.Sprint(Folds(10, 3, 1)) != fmt.Sprint(f) {
		t.Fatal("folds differ for one seed")
	}
}

// TestLoadJSONLEndsOnAnEndlessFile: a questions path that never ends is
// refused at its first line over 16 MiB; os.ReadFile read /dev/zero until
// memory ran out.
func TestLoadJSONLEndsOnAnEndlessFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := LoadJSONL("/dev/zero", asof.Date{})
	if !errors.Is(err, rerank.ErrTrain) || !strings.Contains(err.Error(), "/dev/zero:1: line longer than") {
		t.Fatalf("got %v", err)
	}
}
