package financebench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack"
)

var update = flag.Bool("update", false, "rewrite the pinned ledger")

// EnvRequire, when 1 (.ci/run sets it), turns a missing dataset from a skip
// into a failure.
const EnvRequire = "EVPACK_REQUIRE_DATA"

// CICompanies are the companies of the ledger CI pins: two companies' 16
// questions with evidence over 1,891 pages, chosen for many questions per
// page so that CI stays under a minute. The full ledger (all 86 questions)
// is a command: docs/benchmarks.md.
var CICompanies = []string{"amcor", "0000764478"}

func dataDir(tb testing.TB) string {
	tb.Helper()
	dir, ok := Dir()
	if !ok {
		msg := EnvDir + " does not name the FinanceBench A-L directory: run .ci/run, or " +
			EnvDir + "=../shared/data/financebench go test ./internal/financebench"
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return dir
}

// The period parser reads the year the dataset's own parser read in every
// one of the 103 questions (122 of the 129 of the whole set name one).
func TestParserAgreesWithTheDataset(t *testing.T) {
	qs, err := LoadQuestions(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	named, agree := 0, 0
	for _, q := range qs {
		y, ok := ParsedYear(q)
		if ok {
			named++
		}
		if (q.Year == nil && !ok) || (q.Year != nil && ok && *q.Year == y) {
			agree++
		} else {
			t.Errorf("%s: parsed %d (%t), the dataset %v: %q", q.ID, y, ok, q.Year, q.Text)
		}
	}
	if len(qs) != 103 || named != 96 || agree != 103 {
		t.Fatalf("%d questions, %d name a year, %d agree", len(qs), named, agree)
	}
}

// TestLedgerCI pins the year leg's ablation ledger on CICompanies: every
// figure exactly (the pipeline is deterministic), so a ranking change shows
// here; record it with -update and say why in the commit.
func TestLedgerCI(t *testing.T) {
	dir := dataDir(t)
	if testing.Short() {
		t.Skip("indexes 1,891 pages")
	}
	ctx := context.Background()
	start := time.Now()
	eng, err := Open(ctx, dir, "", CICompanies, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	qs, err := LoadQuestions(dir)
	if err != nil {
		t.Fatal(err)
	}
	qs = OfCompanies(WithGold(qs), CICompanies)
	built := time.Since(start)
	l, err := Ablate(ctx, eng, qs, Layers(evpack.DefaultPeriodBoost, evpack.DefaultPeriodList), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("indexed in %s, ledger in %s", built, time.Since(start)-built)
	var b strings.Builder
	fmt.Fprintf(&b, "# The year leg's ledger on %s (questions with evidence: %d):\n", strings.Join(CICompanies, ","), len(qs))
	fmt.Fprintf(&b, "# go run ./cmd/evpack eval financebench --dir ../shared/data/financebench --companies %s\n", strings.Join(CICompanies, ","))
	if err := l.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "ledger_ci.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Fatalf("%s changed:\n--- recorded\n%s--- now\n%s", path, want, b.String())
	}
}
