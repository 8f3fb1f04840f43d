package asofbench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/evpack/evpack/eval"
	"github.com/evpack/evpack/internal/obliqa"
	"github.com/evpack/evpack/internal/testsize"
)

// firstDocuments returns the passages of o's first documents (the first
// 1/part of them by DocumentID) and the questions whose gold passages all
// lie among them.
func firstDocuments(o *eval.ObliQA, part int) *eval.ObliQA {
	last := o.Passages[len(o.Passages)-1].DocumentID
	keep := map[string]bool{} // lookups only
	out := &eval.ObliQA{}
	for _, p := range o.Passages {
		if p.DocumentID <= max(1, last/part) {
			out.Passages = append(out.Passages, p)
			keep[p.ID] = true
		}
	}
	for _, q := range o.Questions {
		all := len(q.Gold) > 0
		for _, g := range q.Gold {
			all = all && keep[g]
		}
		if all {
			out.Questions = append(out.Questions, q)
		}
	}
	return out
}

// synthetic is a tiny ObliQA-shaped dataset, so the generator's rules are
// tested without the real data.
func synthetic() *eval.ObliQA {
	o := &eval.ObliQA{}
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("p%02d", i)
		o.Passages = append(o.Passages, eval.Passage{ID: id, DocumentID: 1, PassageID: id,
			Text: fmt.Sprintf("Rule %d: a firm must report within %d days of the end of 2021.", i, 10+i)})
		o.Questions = append(o.Questions, eval.Question{ID: "q" + id, Text: fmt.Sprintf("When must rule %d reports be made?", i), Gold: []string{id}})
	}
	return o
}

func TestGenerateRules(t *testing.T) {
	b := Generate(synthetic(), 12, 42)
	if len(b.Histories) != 12 || len(b.Questions) != 12 {
		t.Fatalf("histories %d questions %d", len(b.Histories), len(b.Questions))
	}
	for _, h := range b.Histories {
		if len(h.Versions) < 2 || len(h.Versions) > 4 {
			t.Fatalf("%s: %d versions", h.PassageID, len(h.Versions))
		}
		for i, v := range h.Versions {
			if i > 0 {
				prev := h.Versions[i-1]
				if prev.Valid.To != v.Valid.From {
					t.Fatalf("%s: intervals must be contiguous: %s then %s", v.ChunkID, prev.Valid, v.Valid)
				}
				if prev.Text == v.Text {
					t.Fatalf("%s: a version must change something (%s)", v.ChunkID, v.Change)
				}
			}
			if v.Anchor.Day().Days() != v.Valid.From.Days()-publishLead {
				t.Fatalf("%s: published %d days before in force", v.ChunkID, publishLead)
			}
		}
		if !h.Versions[len(h.Versions)-1].Valid.To.IsZero() {
			t.Fatalf("%s: the last version is open-ended", h.PassageID)
		}
	}
	for _, q := range b.Questions {
		if !b.eligible(q.Gold, q.AsOf) {
			t.Fatalf("%s: gold %s is not in force on %s", q.ID, q.Gold, q.AsOf)
		}
		if q.AsOf.Days() > lastAsOf.Days() {
			t.Fatalf("%s: asked after %s", q.ID, lastAsOf)
		}
	}
	if Generate(synthetic(), 12, 42).Digest() != b.Digest() {
		t.Fatal("same seed, different output")
	}
	if Generate(synthetic(), 12, 43).Digest() == b.Digest() {
		t.Fatal("another seed gave the same output")
	}
}

func TestRunSynthetic(t *testing.T) {
	b := Generate(synthetic(), 12, 7)
	rows, err := b.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	assertContract(t, rows)
}

// assertContract: the two dated configurations never cite outside
// eligibility, and filtering inside the query is at least as good as after.
func assertContract(t *testing.T, rows []Row) {
	t.Helper()
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[2].Ineligible != 0 || rows[3].Ineligible != 0 {
		t.Fatalf("dated configurations cited outside eligibility: %+v", rows)
	}
	if rows[3].Recall < rows[2].Recall {
		t.Fatalf("inside the query %.4f < after ranking %.4f", rows[3].Recall, rows[2].Recall)
	}
}

// TestObliQAAsOf runs the benchmark on the real dev split with the seed and
// size docs/benchmarks.md reports, and pins its corpus digest.
func TestObliQAAsOf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three indexes of the ObliQA corpus")
	}
	dir, ok := obliqa.Dir()
	if !ok {
		msg := "ObliQA not found: set " + obliqa.EnvDir + " to the directory holding documents/ and ObliQA_dev.json " +
			"(from github.com/RegNLP/ObliQADataset: see README.md, \"Tests that need data\")"
		if os.Getenv(obliqa.EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	o, err := obliqa.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := Generate(o, 500, 1)
	const digest = "blake3:e5e8025a764696cc4e7329b43b3142ff6948a3038658031c514e3aae950e1194"
	if b.Digest() != digest {
		t.Fatalf("generator output changed: %s", b.Digest())
	}
	if !testsize.Long() {
		// The same contract on the passages of the first tenth of the
		// documents (three indexes of the whole corpus are ~2 minutes of
		// CPU); CI sets EVPACK_LONG_TESTS=1 and runs the size
		// docs/benchmarks.md reports.
		b = Generate(firstDocuments(o, 10), 100, 1)
		t.Logf("EVPACK_LONG_TESTS unset: %d passages, %d histories", len(b.passages), len(b.Histories))
	}
	rows, err := b.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	assertContract(t, rows)
	for _, r := range rows {
		t.Logf("%-45s version recall@10 %.4f, cited outside eligibility %d of %d", r.Config, r.Recall, r.Ineligible, r.Citations)
	}
	if rows[0].Ineligible == 0 || rows[1].Ineligible == 0 {
		t.Fatalf("undated configurations should be shown citing ineligible versions: %+v", rows)
	}
}
