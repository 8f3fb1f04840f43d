// Package learn trains and cross-validates evpack's learned reranker on a
// labelled question set: it asks an engine every question, records the
// feature rows of the pool the reranker is handed (exactly what inference
// sees), trains rerank.Train models on folds, and scores held-out questions
// by running the engine with each fold's model.
package learn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/strictjson"
	"github.com/evpack/evpack/rerank"
)

// Question is one labelled question.
type Question struct {
	ID     string
	Where  string // file:line, for errors
	Text   string
	Gold   []string // chunk IDs
	AsOf   asof.Date
	Tenant string
	// Group, when set, names the questions that must share a fold
	// (GroupField): the JSONL "group" field, ObliQA's Group.
	Group string
}

// jsonlQuestion is one line of a labelled JSONL file.
type jsonlQuestion struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Gold     []string `json:"gold"`
	AsOf     string   `json:"as_of"`
	Tenant   string   `json:"tenant"`
	Group    string   `json:"group"`
}

// LoadJSONL reads labelled questions, one JSON object a line: id, question,
// gold (chunk IDs), and optionally as_of (YYYY-MM-DD; defaultAsOf when
// absent), tenant and group (see GroupField). Unknown fields, a field given
// twice, anything after the object on its line, a line longer than 16 MiB,
// a missing question or gold, a bad date or a repeated ID are errors naming
// file:line.
func LoadJSONL(path string, defaultAsOf asof.Date) ([]Question, error) {
	// Read line by line, not whole: a path that never ends (/dev/zero, a
	// FIFO fed for ever) grew os.ReadFile's buffer until memory ran out;
	// now it ends at the first line over the limit.
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("learn: %w", err)
	}
	defer f.Close()
	var out []Question
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxQuestionLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		var jq jsonlQuestion
		if err := decodeQuestion(b, &jq); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", rerank.ErrTrain, where, err)
		}
		q := Question{ID: jq.ID, Where: where, Text: jq.Question, Gold: jq.Gold, AsOf: defaultAsOf, Tenant: jq.Tenant, Group: jq.Group}
		switch {
		case q.ID == "" || q.Text == "" || len(q.Gold) == 0:
			return nil, fmt.Errorf("%w: %s: id, question and gold are required", rerank.ErrTrain, where)
		case seen[q.ID]:
			return nil, fmt.Errorf("%w: %s: question ID %q repeated", rerank.ErrTrain, where, q.ID)
		}
		seen[q.ID] = true
		if jq.AsOf != "" {
			if q.AsOf, err = asof.ParseDate(jq.AsOf); err != nil {
				return nil, fmt.Errorf("%w: %s: as_of: %w", rerank.ErrTrain, where, err)
			}
		}
		if q.AsOf.IsZero() {
			return nil, fmt.Errorf("%w: %s: no as_of and no default as-of date", rerank.ErrTrain, where)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		// The scanner stopped in the line after the last it returned.
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: %s:%d: line longer than %d bytes", rerank.ErrTrain, path, line+1, maxQuestionLine)
		}
		return nil, fmt.Errorf("learn: %s: %w", path, err)
	}
	return out, nil
}

// maxQuestionLine bounds a line of a labelled JSONL file.
const maxQuestionLine = 16 << 20

// decodeQuestion decodes one line: exactly one JSON object, no unknown
// field and no field twice. encoding/json keeps the last of a repeated
// key, so {"gold":["typo"],"gold":["x"]} dropped the first without a word;
// and Decode reads one value, so a second object or garbage after the
// first was ignored.
func decodeQuestion(b []byte, jq *jsonlQuestion) error {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&fields); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return fmt.Errorf("want a JSON object: %w", err)
		}
		return err
	}
	if !strictjson.Ended(dec) {
		return errors.New("data after the JSON object")
	}
	if fields == nil {
		return errors.New("want a JSON object, not null")
	}
	if _, err := strictjson.DuplicateKey(b); err != nil {
		return err
	}
	dec = json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(jq)
}

// CheckGold returns an error wrapping rerank.ErrGoldNotIndexed for the first
// gold chunk ID that indexed does not hold, naming the question's place.
func CheckGold(qs []Question, indexed func(id string) bool) error {
	for _, q := range qs {
		for _, g := range q.Gold {
			if !indexed(g) {
				return fmt.Errorf("%w: %s: question %s: gold %q", rerank.ErrGoldNotIndexed, q.Where, q.ID, g)
			}
		}
	}
	return nil
}

// recorder is the reranker Collect runs the engine with: it records the
// pool's feature rows and ranks like the Arithmetic reranker.
type recorder struct {
	arith *rerank.Arithmetic
	ids   []string
	rows  []rerank.Row
}

func (r *recorder) Name() string { return "recorder/" + r.arith.Name() }

func (r *recorder) Rerank(ctx context.Context, question string, cands []rerank.Candidate, stats rerank.Stats) ([]evidence.Scored, error) {
	r.rows = rerank.FeatureRows(question, cands, stats)
	r.ids = r.ids[:0]
	for _, c := range cands {
		r.ids = append(r.ids, c.ID)
	}
	return r.arith.Rerank(ctx, question, cands, stats)
}

// Collect asks eng every question (with its as-of date and tenant) and
// returns the pools the reranker saw, labelled with the gold.
func Collect(ctx context.Context, eng *evpack.Engine, qs []Question) ([]rerank.TrainQuery, error) {
	arith, err := rerank.NewArithmetic(rerank.DefaultWeights)
	if err != nil {
		return nil, err
	}
	rec := &recorder{arith: arith}
	opts := eng.Options()
	opts.Reranker, opts.Cache = rec, nil
	view, err := eng.View(opts)
	if err != nil {
		return nil, err
	}
	out := make([]rerank.TrainQuery, len(qs))
	for i, q := range qs {
		rec.ids, rec.rows = rec.ids[:0], nil
		if _, err := view.Query(ctx, evpack.Request{Question: q.Text, AsOf: q.AsOf, Tenant: q.Tenant}); err != nil {
			return nil, fmt.Errorf("learn: %s: question %s: %w", q.Where, q.ID, err)
		}
		gold := map[string]bool{}
		for _, g := range q.Gold {
			gold[g] = true
		}
		tq := rerank.TrainQuery{ID: q.ID, IDs: append([]string(nil), rec.ids...), Rows: rec.rows, Gold: make([]bool, len(rec.ids))}
		for k, id := range tq.IDs {
			tq.Gold[k] = gold[id]
		}
		out[i] = tq
	}
	return out, nil
}

// Folds assigns each of n questions to one of k folds: a permutation drawn
// from seed (PCG), then position modulo k.
func Folds(n, k int, seed uint64) []int {
	perm := rand.New(rand.NewPCG(seed, 0)).Perm(n)
	fold := make([]int, n)
	for pos, q := range perm {
		fold[q] = pos % k
	}
	return fold
}

// Ranked answers every question with reranker rr on eng and returns the
// cited chunk IDs (k = 10), in question order.
func Ranked(ctx context.Context, eng *evpack.Engine, rr rerank.Reranker, qs []Question) ([][]string, error) {
	opts := eng.Options()
	opts.Reranker, opts.Cache = rr, nil
	view, err := eng.View(opts)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(qs))
	for i, q := range qs {
		p, err := view.Query(ctx, evpack.Request{Question: q.Text, AsOf: q.AsOf, Tenant: q.Tenant, K: 10})
		if err != nil {
			return nil, fmt.Errorf("learn: %s: question %s: %w", q.Where, q.ID, err)
		}
		for _, c := range p.Citations {
			out[i] = append(out[i], c.ChunkID)
		}
	}
	return out, nil
}

// Scores scores ranked lists against the questions' gold at k = 10.
func Scores(qs []Question, ranked [][]string) []eval.Scores {
	out := make([]eval.Scores, len(qs))
	for i, q := range qs {
		out[i] = eval.Score(ranked[i], q.Gold, 10)
	}
	return out
}

// CV is a cross-validation: per question, the scores of the model of the
// fold that held it out (trained without it), and the fold models. Held
// says which questions some fold held out; the others (a date split's first
// block) have no scores.
type CV struct {
	Per    []eval.Scores
	Ranked [][]string
	Models []*rerank.Model
	Held   []bool
	Scheme string
}

// CrossValidate trains one model per fold of split, each on the pools of the
// fold's training questions, and answers the fold's held questions with it
// through eng.
func CrossValidate(ctx context.Context, eng *evpack.Engine, qs []Question, pools []rerank.TrainQuery, split Split, opts rerank.TrainOptions, progress func(fold int)) (*CV, error) {
	cv := &CV{Per: make([]eval.Scores, len(qs)), Ranked: make([][]string, len(qs)), Held: make([]bool, len(qs)), Scheme: split.Scheme}
	for f := range split.Held {
		train := make([]rerank.TrainQuery, 0, len(split.Train[f]))
		for _, i := range split.Train[f] {
			train = append(train, pools[i])
		}
		held := make([]Question, 0, len(split.Held[f]))
		for _, i := range split.Held[f] {
			if cv.Held[i] {
				return nil, fmt.Errorf("%w: question %s is held out by two folds", rerank.ErrTrain, qs[i].ID)
			}
			held = append(held, qs[i])
		}
		m, err := rerank.Train(train, opts)
		if err != nil {
			return nil, fmt.Errorf("learn: fold %d: %w", f, err)
		}
		l, err := rerank.NewLearned(m)
		if err != nil {
			return nil, err
		}
		ranked, err := Ranked(ctx, eng, l, held)
		if err != nil {
			return nil, err
		}
		for j, i := range split.Held[f] {
			cv.Ranked[i] = ranked[j]
			cv.Per[i] = eval.Score(ranked[j], qs[i].Gold, 10)
			cv.Held[i] = true
		}
		cv.Models = append(cv.Models, m)
		if progress != nil {
			progress(f)
		}
	}
	return cv, nil
}
