// Package financebench runs evpack over FinanceBench's questions about one
// company's year (companies 3 and A to L: ../shared/data/financebench, see
// its README.md): the pages of the companies' filings as chunks, each
// question asked with the filter cik=<its company> as of a day after every
// filing, so that choosing the year is the engine's. It serves the year
// leg's ablation ledger (issue 33), its CI test and the eval command.
package financebench

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/evidence"
)

// EnvDir names the environment variable that points at the dataset
// directory (holding chunks.jsonl.gz and questions.jsonl).
const EnvDir = "EVPACK_FINANCEBENCH_DIR"

// K is the cutoff of every metric.
const K = 10

// Dir returns the dataset directory from EnvDir, and whether it holds the
// dataset.
func Dir() (string, bool) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return "", false
	}
	for _, f := range []string{"chunks.jsonl.gz", "questions.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return dir, false
		}
	}
	return dir, true
}

// Question is one FinanceBench question with its evidence.
type Question struct {
	ID        string   `json:"qid"`
	Text      string   `json:"question"`
	Company   string   `json:"company"`
	CIK       string   `json:"cik"`
	Gold      []string `json:"gold"` // chunk IDs of the evidence pages present
	GoldDocs  []string `json:"gold_docs"`
	GoldYears []int    `json:"gold_fiscal_years"`
	AsOf      string   `json:"as_of"`
	Year      *int     `json:"year"` // the year the dataset's own parser read
}

// LoadQuestions reads questions.jsonl under dir, in file order.
func LoadQuestions(dir string) ([]Question, error) {
	path := filepath.Join(dir, "questions.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Question
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var q Question
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// WithGold returns the questions with at least one evidence page present:
// the ones the metrics count.
func WithGold(qs []Question) []Question {
	var out []Question
	for _, q := range qs {
		if len(q.Gold) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// Records reads chunks.jsonl.gz under dir through evpack's JSONL connector,
// keeping the chunks of the companies in ciks (all when ciks is nil).
func Records(ctx context.Context, dir string, ciks []string) ([]connectors.Record, error) {
	path := filepath.Join(dir, "chunks.jsonl.gz")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	recs, err := connectors.NewJSONL().ReadFrom(ctx, path, z)
	if err != nil {
		return nil, err
	}
	if ciks == nil {
		return recs, nil
	}
	kept := recs[:0]
	for _, r := range recs {
		if slices.Contains(ciks, r.Chunk.Meta["cik"]) {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// Build makes an in-memory engine holding recs.
func Build(ctx context.Context, recs []connectors.Record, opts evpack.Options) (*evpack.Engine, error) {
	eng, err := evpack.OpenMemory(opts)
	if err != nil {
		return nil, err
	}
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

// Ask says how a layer asks a question: with the company filter or not, and
// with an extra filter on the year (the hard year filter: the year parsed
// from the question, or the gold year, as references).
type Ask struct {
	CompanyFilter bool
	YearFilter    string // "", "parsed" or "gold"
}

// Report is one layer's answers.
type Report struct {
	Summary eval.Summary
	Per     []eval.Scores // per question, at K
	// WrongYear is, per question, whether the top K holds a page of the
	// question's company from a fiscal year none of its evidence is from.
	WrongYear []bool
	// FilingHit is, per question, whether the top K holds a page of a
	// filing its evidence is in (the right filing, whatever the page).
	FilingHit []bool
	Ranked    [][]string
	Packs     []*evidence.Pack
}

// WrongYearShare is the share of questions whose WrongYear holds.
func (r *Report) WrongYearShare() float64 {
	n := 0
	for _, w := range r.WrongYear {
		if w {
			n++
		}
	}
	return float64(n) / float64(len(r.WrongYear))
}

// FilingHitShare is the share of questions whose FilingHit holds.
func (r *Report) FilingHitShare() float64 {
	n := 0
	for _, h := range r.FilingHit {
		if h {
			n++
		}
	}
	return float64(n) / float64(len(r.FilingHit))
}

// Evaluate asks every question of qs (each with gold) through eng as a
// says, K citations, and scores the answers.
func Evaluate(ctx context.Context, eng *evpack.Engine, qs []Question, a Ask, yearOf func(Question) (int, bool)) (*Report, error) {
	r := &Report{}
	for _, q := range qs {
		day, err := asof.ParseDate(q.AsOf)
		if err != nil {
			return nil, fmt.Errorf("question %s: as_of: %w", q.ID, err)
		}
		req := evpack.Request{Question: q.Text, AsOf: day, K: K, Filters: map[string]string{}}
		if a.CompanyFilter {
			req.Filters["cik"] = q.CIK
		}
		switch a.YearFilter {
		case "parsed":
			if y, ok := yearOf(q); ok {
				req.Filters["fiscal_year"] = strconv.Itoa(y)
			}
		case "gold":
			if len(q.GoldYears) > 0 {
				req.Filters["fiscal_year"] = strconv.Itoa(q.GoldYears[0])
			}
		}
		p, err := eng.Query(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("question %s: %w", q.ID, err)
		}
		var ranked []string
		wrong, filing := false, false
		for _, c := range p.Citations {
			ranked = append(ranked, c.ChunkID)
			filing = filing || slices.Contains(q.GoldDocs, c.DocID)
			if c.Meta["cik"] == q.CIK {
				if y, err := strconv.Atoi(c.Meta["fiscal_year"]); err == nil && !slices.Contains(q.GoldYears, y) {
					wrong = true
				}
			}
		}
		r.Ranked = append(r.Ranked, ranked)
		r.Packs = append(r.Packs, p)
		r.Per = append(r.Per, eval.Score(ranked, q.Gold, K))
		r.WrongYear = append(r.WrongYear, wrong)
		r.FilingHit = append(r.FilingHit, filing)
	}
	r.Summary = eval.Summarize(r.Per)
	return r, nil
}

// OfCompanies keeps the questions about the companies in ciks.
func OfCompanies(qs []Question, ciks []string) []Question {
	var out []Question
	for _, q := range qs {
		if slices.Contains(ciks, q.CIK) {
			out = append(out, q)
		}
	}
	return out
}

// Open returns an engine holding the chunks of the companies in ciks (all
// when nil): in memory when index is "", else on disk in index, made there
// on the first call and opened after, once its chunks are found to be
// exactly those of ciks. It says what it does on progress.
func Open(ctx context.Context, dir, index string, ciks []string, progress io.Writer) (*evpack.Engine, error) {
	recs, err := Records(ctx, dir, ciks)
	if err != nil {
		return nil, err
	}
	if index != "" {
		if _, err := os.Stat(filepath.Join(index, "MANIFEST.json")); err == nil {
			fmt.Fprintf(progress, "opening %s\n", index)
			eng, err := evpack.OpenExisting(index, evpack.Options{})
			if err != nil {
				return nil, err
			}
			if err := sameChunks(eng, index, recs); err != nil {
				eng.Close()
				return nil, err
			}
			return eng, nil
		}
	}
	fmt.Fprintf(progress, "indexing %d pages\n", len(recs))
	if index == "" {
		return Build(ctx, recs, evpack.Options{})
	}
	eng, err := evpack.Open(index, evpack.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{}); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

// sameChunks returns an error unless the index holds exactly the chunks of
// recs. An index made for other companies (another --companies), or left
// empty or part-built by an interrupted first run, was opened as it was,
// and every question asked of it: figures of another corpus, exit 0.
func sameChunks(eng *evpack.Engine, index string, recs []connectors.Record) error {
	commits, err := eng.History()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, c := range commits {
		for _, tc := range c.Tenants {
			for _, id := range tc.Added {
				have[id] = true
			}
		}
	}
	want := map[string]bool{}
	missing := 0
	for _, r := range recs {
		if r.Chunk.ID == "" || want[r.Chunk.ID] {
			continue
		}
		want[r.Chunk.ID] = true
		if !have[r.Chunk.ID] {
			missing++
		}
	}
	if missing > 0 || len(have) != len(want) {
		return fmt.Errorf("%w: %s holds %d chunks, not the %d of the companies asked for (%d of theirs missing): another --companies, or an interrupted first run; remove it or name another --index",
			ErrIndexMismatch, index, len(have), len(want), missing)
	}
	return nil
}

// ErrIndexMismatch: an --index directory that holds other chunks than the
// companies asked for.
var ErrIndexMismatch = errors.New("financebench: the index holds other chunks")
