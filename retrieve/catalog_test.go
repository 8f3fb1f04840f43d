package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/evpack/evpack/internal/testsize"
)

// catalogOf returns pc's catalog, as a caller computes it from its state:
// every chunk's last document, purged ones not held.
func (pc *pruneCorpus) catalogOf(t *testing.T) []byte {
	t.Helper()
	docs := func(yield func(Doc, bool) bool) {
		for _, c := range pc.chunks {
			if !yield(pc.last[c.ID], !pc.gone[c.ID]) {
				return
			}
		}
	}
	raw, err := pc.l.Catalog(iter.Seq2[Doc, bool](docs))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// reopenDeferred closes pc's on-disk index and opens it deferred.
func (pc *pruneCorpus) reopenDeferred(t *testing.T, dir string) *Lexical {
	t.Helper()
	if err := pc.l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLexical(dir, LexicalOptions{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestCatalogChangesNoRanking: an index opened deferred and settled by its
// catalog opens nothing until read, then only what requests read, and
// answers every search and eligibility request as the same corpus in one
// bleve index does.
func TestCatalogChangesNoRanking(t *testing.T) {
	const seed = 11
	t.Logf("seed %d", seed)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "lex")
	one := buildPruneCorpusWith(t, rand.New(rand.NewPCG(seed, 1)), LexicalOptions{Unpartitioned: true})
	pc := buildPruneCorpusAt(t, rand.New(rand.NewPCG(seed, 1)), dir, LexicalOptions{PartitionDays: 30})
	cat := pc.catalogOf(t)
	l := pc.reopenDeferred(t, dir)
	if open, _ := l.Opened(); open != 0 {
		t.Fatalf("OpenLexical, deferred, opened %d partitions", open)
	}
	n, err := l.Adopt(cat, pc.gens)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(pc.chunks) - len(pc.gone); n != uint64(want) {
		t.Fatalf("Adopt counts %d documents, the corpus holds %d", n, want)
	}
	open, all := l.Opened()
	if open != 0 || all < 50 {
		t.Fatalf("after Adopt %d of %d partitions open, want 0 of 50 or more", open, all)
	}
	r := rand.New(rand.NewPCG(seed, 2))
	first := true
	questions := 100
	if !testsize.Long() { // CI sets EVPACK_LONG_TESTS=1
		questions = 35
	}
	for q := range questions {
		text, e := pc.question(r), pc.eligibility(r)
		stats := pc.fullStats(e.Tenant, pc.upTo(e))
		if stats.Docs == 0 {
			continue
		}
		want, err := one.l.Search(ctx, text, e, one.bounds, 10, stats)
		if err != nil {
			t.Fatal(err)
		}
		_, read, err := l.Partitions(e, pc.bounds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Search(ctx, text, e, pc.bounds, 10, stats)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Hits, want.Hits) {
			t.Fatalf("question %d %q elig=%+v:\ncatalog   %v\none index %v", q, text, e, got.Hits, want.Hits)
		}
		wantIDs, err := one.l.Eligible(ctx, e, one.bounds)
		if err != nil {
			t.Fatal(err)
		}
		gotIDs, err := l.Eligible(ctx, e, pc.bounds)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gotIDs, wantIDs) {
			t.Fatalf("request %d elig=%+v: %d eligible from the catalog's partitions, %d from one index", q, e, len(gotIDs), len(wantIDs))
		}
		if first {
			if open, _ := l.Opened(); open != read || read >= all/2 {
				t.Fatalf("the first request reads %d partitions of %d and opened %d", read, all, open)
			}
			first = false
		}
	}
	n2, err := l.DocCount()
	if err != nil || n2 != n {
		t.Fatalf("DocCount %d (%v), the catalog %d", n2, err, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Search(ctx, "capital", Eligibility{}, pc.bounds, 5, BM25Stats{}); !errors.Is(err, ErrLexicalClosed) {
		t.Fatalf("a search after Close: %v, want ErrLexicalClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestCatalogDisagreement: what Adopt and the first read of a partition
// refuse, each with ErrCatalogMismatch naming the partition.
func TestCatalogDisagreement(t *testing.T) {
	type cat struct {
		Format int               `json:"format"`
		Parts  []json.RawMessage `json:"parts"`
	}
	cases := []struct {
		name, why string
		edit      func(t *testing.T, dir string, c *cat) int64 // returns the generation to adopt at
		atAdopt   bool
		want      string
	}{
		{"format", "a catalog this build cannot read is not guessed at",
			func(t *testing.T, dir string, c *cat) int64 { c.Format = 2; return 1 << 20 }, true, "catalog format 2"},
		{"partition not named", "a partition with documents the catalog does not name may hold anything",
			func(t *testing.T, dir string, c *cat) int64 { c.Parts = c.Parts[1:]; return 1 << 20 }, true, "and the catalog names none of it"},
		{"partition gone", "a partition the catalog names must be there",
			func(t *testing.T, dir string, c *cat) int64 {
				var p catalogPart
				if err := json.Unmarshal(c.Parts[0], &p); err != nil {
					t.Fatal(err)
				}
				if err := os.RemoveAll(filepath.Join(dir, p.Key.dirName())); err != nil {
					t.Fatal(err)
				}
				return 1 << 20
			}, true, "is missing from"},
		{"later generation", "documents newer than the catalog were written behind its back",
			func(t *testing.T, dir string, c *cat) int64 { return 1 }, false, "written after generation 1"},
		{"count", "a document deleted behind the catalog's back",
			func(t *testing.T, dir string, c *cat) int64 {
				var p catalogPart
				if err := json.Unmarshal(c.Parts[0], &p); err != nil {
					t.Fatal(err)
				}
				idx, err := bleve.Open(filepath.Join(dir, p.Key.dirName()))
				if err != nil {
					t.Fatal(err)
				}
				defer idx.Close()
				res, err := idx.Search(bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1, 0, false))
				if err != nil || len(res.Hits) == 0 {
					t.Fatalf("%v, %d hits", err, len(res.Hits))
				}
				b := idx.NewBatch()
				b.Delete(res.Hits[0].ID)
				if err := idx.Batch(b); err != nil {
					t.Fatal(err)
				}
				return 1 << 20
			}, false, "documents, the catalog"},
	}
	// One corpus, copied for each case (each edits its copy).
	tmpl := filepath.Join(t.TempDir(), "lex")
	pc := buildPruneCorpusAt(t, rand.New(rand.NewPCG(3, 1)), tmpl, LexicalOptions{PartitionDays: 30})
	orig := pc.catalogOf(t)
	if err := pc.l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lex")
			if err := os.CopyFS(dir, os.DirFS(tmpl)); err != nil {
				t.Fatal(err)
			}
			var ct cat
			if err := json.Unmarshal(orig, &ct); err != nil {
				t.Fatal(err)
			}
			gen := c.edit(t, dir, &ct)
			raw, err := json.Marshal(ct)
			if err != nil {
				t.Fatal(err)
			}
			l, err := OpenLexical(dir, LexicalOptions{Deferred: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, err = l.Adopt(raw, gen)
			if !c.atAdopt {
				if err != nil {
					t.Fatalf("Adopt: %v (%s)", err, c.why)
				}
				err = l.OpenAll() // settled: does nothing
				if err == nil {
					_, err = l.DocCount() // reads every partition
				}
			}
			if !errors.Is(err, ErrCatalogMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrCatalogMismatch saying %q (%s)", err, c.want, c.why)
			}
			if !c.atAdopt {
				if _, again := l.DocCount(); again == nil || again.Error() != err.Error() {
					t.Fatalf("a later read got %v, want the first one's error again", again)
				}
			}
		})
	}
	t.Run("adopt on an index opened whole", func(t *testing.T) {
		l, err := OpenLexical(tmpl, LexicalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Adopt(orig, pc.gens); !errors.Is(err, ErrLexical) || !strings.Contains(err.Error(), "open already") {
			t.Fatalf("got %v, want ErrLexical saying the partitions are open already", err)
		}
	})
}
