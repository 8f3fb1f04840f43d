package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"

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
	n, err := l.Adopt(cat, pc.gens, nil)
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
			_, err = l.Adopt(raw, gen, nil)
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
		if _, err := l.Adopt(orig, pc.gens, nil); !errors.Is(err, ErrLexical) || !strings.Contains(err.Error(), "open already") {
			t.Fatalf("got %v, want ErrLexical saying the partitions are open already", err)
		}
	})
}

// TestAdoptWidensByLaterDocuments: a catalog made at generation 1, and a
// document of its partition indexed again at generation 2 with a
// retirement day (a fact). Adopted with that document, the catalog's
// summary of the unopened partition takes in the retirement, so that the
// clauses compiled against it keep the document out from that day, as the
// partition's own summary does once open. Adopted without it, the summary
// says nothing there is ever retired and the clause is left out (the test
// fails so when Adopt ignores later). A later document of a partition the
// catalog does not name is ErrCatalogMismatch.
func TestAdoptWidensByLaterDocuments(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "lex")
	l, err := OpenLexical(dir, LexicalOptions{PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2020, 1, 5, 0, 0, 0, 0, time.UTC)
	chunk := func(id string) *evidence.Chunk {
		return &evidence.Chunk{ID: id, DocID: id, Version: "1", Text: "quarterly filing " + id, Anchor: asof.Anchor{At: at, Field: "anchor"}}
	}
	a, b := Doc{Chunk: chunk("a"), Gen: 1}, Doc{Chunk: chunk("b"), Gen: 1}
	if err := l.Index(ctx, []Doc{a, b}); err != nil {
		t.Fatal(err)
	}
	cat, err := l.Catalog(iter.Seq2[Doc, bool](func(yield func(Doc, bool) bool) { _ = yield(a, true) && yield(b, true) }))
	if err != nil {
		t.Fatal(err)
	}
	retired := a
	retired.Retired, retired.FactGen, retired.FirstFactGen = asof.MustDate("2020-03-01"), 2, 2
	if err := l.Index(ctx, []Doc{retired}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bounds := NewBounds()
	bounds.Add(a.Chunk)
	bounds.Add(b.Chunk)
	bounds.Retire(retired.Retired)
	elig := Eligibility{AsOf: asof.MustDate("2020-06-01"), UpTo: 2}
	for _, tc := range []struct {
		name  string
		later []Doc
		want  []string
		err   error
	}{
		{"with the document indexed again", []Doc{retired}, []string{"b"}, nil},
		{"with a document of another partition", []Doc{retired, {Chunk: &evidence.Chunk{ID: "c", Anchor: asof.Anchor{At: at.AddDate(1, 0, 0)}}, Gen: 2}}, nil, ErrCatalogMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := OpenLexical(dir, LexicalOptions{Deferred: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.Adopt(cat, 2, tc.later); tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Adopt: %v, want %v", err, tc.err)
				}
				return
			}
			got, err := l.Eligible(ctx, elig, bounds)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("eligible on %s: %v, want %v", elig.AsOf, got, tc.want)
			}
		})
	}
}

// TestCatalogAddIsCatalog: adding documents to a catalog gives the bytes
// Catalog gives for all of them at once, whatever the split, the order and
// the fields set (anchor, validity, retirement, tenant, undated).
func TestCatalogAddIsCatalog(t *testing.T) {
	const seed = 30
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	l, err := OpenLexical("", LexicalOptions{PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	day := func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(400)) }
	docs := make([]Doc, 300)
	for i := range docs {
		c := &evidence.Chunk{ID: fmt.Sprintf("c%03d", i), Tenant: []string{"", "acme", "globex"}[r.IntN(3)]}
		if r.IntN(10) > 0 {
			c.Anchor = asof.Anchor{At: day(), Field: "anchor"}
		}
		if r.IntN(2) == 0 {
			c.Valid.From = asof.DateOf(day())
		}
		if r.IntN(3) == 0 {
			c.Valid.To = asof.DateOf(day())
		}
		docs[i] = Doc{Chunk: c, Gen: int64(1 + i/50)}
		if r.IntN(5) == 0 {
			docs[i].Retired = asof.DateOf(day())
		}
	}
	all := func(ds []Doc) iter.Seq2[Doc, bool] {
		return func(yield func(Doc, bool) bool) {
			for _, d := range ds {
				if !yield(d, true) {
					return
				}
			}
		}
	}
	want, err := l.Catalog(all(docs))
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []int{0, 1, 150, 299} {
		base, err := l.Catalog(all(docs[:split]))
		if err != nil {
			t.Fatal(err)
		}
		if split == 0 { // an index with no document yet
			base = []byte(`{"format":1,"parts":[]}`)
		}
		rest := slices.Clone(docs[split:])
		r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		got, err := l.CatalogAdd(base, rest)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("split at %d: CatalogAdd gives\n%s\nCatalog gives\n%s", split, got, want)
		}
	}
	if _, err := l.CatalogAdd([]byte(`{"format":9}`), docs); !errors.Is(err, ErrLexical) {
		t.Fatalf("a catalog of another format: %v, want ErrLexical", err)
	}
}

// TestFirstWriteLeavesADamagedPartitionAlone: a partition of a catalog that
// a write is the first to touch is opened read-only and checked before it
// is opened for writing, because bleve's open for writing changes the
// directory: it makes a root.bolt where there is none and removes the
// segment files its snapshot does not name. A write into a partition that
// fails the check or cannot be opened fails, leaves every file of it as it
// was, a later read gets the same error, and so does a read after the
// index is opened again. (Opened for writing at once, to save the first
// write an open, the missing and empty root.bolt cases lost their segment
// file, and the one that makes bbolt panic left an exclusive lock that the
// next open waited for.)
// twoParts is a partitioned index of two documents at generation 1, in
// two partitions (January's and June's of 2020), closed, and its catalog.
type twoParts struct {
	dir, janDir string
	cat         []byte
	jan         time.Time
}

// doc is a document of twoParts' kind.
func (twoParts) doc(id string, at time.Time, gen int64) Doc {
	return Doc{Chunk: &evidence.Chunk{ID: id, DocID: id, Version: "1", Text: "quarterly filing " + id, Anchor: asof.Anchor{At: at, Field: "anchor"}}, Gen: gen}
}

func makeTwoParts(t *testing.T) twoParts {
	t.Helper()
	tp := twoParts{dir: filepath.Join(t.TempDir(), "lex"), jan: time.Date(2020, 1, 5, 0, 0, 0, 0, time.UTC)}
	l, err := OpenLexical(tp.dir, LexicalOptions{PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	a, b := tp.doc("a", tp.jan, 1), tp.doc("b", time.Date(2020, 6, 5, 0, 0, 0, 0, time.UTC), 1)
	if err := l.Index(context.Background(), []Doc{a, b}); err != nil {
		t.Fatal(err)
	}
	tp.cat, err = l.Catalog(iter.Seq2[Doc, bool](func(yield func(Doc, bool) bool) { _ = yield(a, true) && yield(b, true) }))
	if err != nil {
		t.Fatal(err)
	}
	tp.janDir = l.keyOf(a).dirName()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return tp
}

// copyOf copies tp's index into a new directory and returns it.
func (tp twoParts) copyOf(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lex")
	if err := os.CopyFS(dir, os.DirFS(tp.dir)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFirstWriteLeavesADamagedPartitionAlone(t *testing.T) {
	tp := makeTwoParts(t)
	// files returns every file under dir with its size and checksum.
	files := func(t *testing.T, dir string) []string {
		t.Helper()
		var out []string
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %d %x", strings.TrimPrefix(path, dir), len(raw), blake3.Sum256(raw)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name, why string
		edit      func(t *testing.T, part string)
		want      error
	}{
		{"agrees", "the write is made: nothing to refuse", func(*testing.T, string) {}, nil},
		{"a document deleted behind the catalog", "its count disagrees: the read-only check refuses it",
			func(t *testing.T, part string) {
				idx, err := bleve.Open(part)
				if err != nil {
					t.Fatal(err)
				}
				batch := idx.NewBatch()
				batch.Delete("a")
				if err := errors.Join(idx.Batch(batch), idx.Close()); err != nil {
					t.Fatal(err)
				}
			}, ErrCatalogMismatch},
		{"root.bolt gone", "opened for writing, bleve would make an empty one and remove the segment",
			func(t *testing.T, part string) {
				if err := os.Remove(filepath.Join(part, "store", "root.bolt")); err != nil {
					t.Fatal(err)
				}
			}, ErrDamaged},
		{"root.bolt empty", "the same, over the empty file",
			func(t *testing.T, part string) {
				if err := os.Truncate(filepath.Join(part, "store", "root.bolt"), 0); err != nil {
					t.Fatal(err)
				}
			}, ErrDamaged},
		{"root.bolt cut to its meta pages", "bbolt panics opening it, and its file lock stays held: opened for writing, the lock was exclusive and the next open waited for it forever",
			func(t *testing.T, part string) {
				if err := os.Truncate(filepath.Join(part, "store", "root.bolt"), int64(2*os.Getpagesize())); err != nil {
					t.Fatal(err)
				}
			}, ErrDamaged},
	}
	// Each case runs as Index alone, and as a commit writes: Ready first,
	// on its goroutine, then Index once it is done (Lexical.Ready), where
	// the check and the reopen happen in Ready.
	for _, tc := range cases {
		for _, ready := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ready=%v", tc.name, ready), func(t *testing.T) {
				firstWriteCase(t, tp, tc.edit, tc.want, tc.why, ready, files)
			})
		}
	}
}

// firstWriteCase is one case of TestFirstWriteLeavesADamagedPartitionAlone:
// tp's January partition edited by edit, then a write of one document to
// it, Index alone or after Ready, fails with want (nil: succeeds), and a
// failed one leaves the partition's files as they were.
func firstWriteCase(t *testing.T, tp twoParts, edit func(*testing.T, string), want error, why string, ready bool, files func(*testing.T, string) []string) {
	ctx := context.Background()
	cat, janDir, jan, doc := tp.cat, tp.janDir, tp.jan, tp.doc
	dir := tp.copyOf(t)
	part := filepath.Join(dir, janDir)
	edit(t, part)
	before := files(t, part)
	l, err := OpenLexical(dir, LexicalOptions{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Adopt(cat, 1, nil); err != nil {
		t.Fatal(err)
	}
	var reopened atomic.Int32
	l.Hooks.ReadOnlyClosed = func(string) { reopened.Add(1) }
	c := doc("c", jan.AddDate(0, 0, 1), 2)
	if ready {
		err = l.Ready([]*evidence.Chunk{c.Chunk})()
		if err == nil && reopened.Load() != 1 {
			t.Fatalf("Ready reopened %d partitions, want 1", reopened.Load())
		}
	}
	if err == nil {
		err = l.Index(ctx, []Doc{c})
	}
	if want == nil {
		if err != nil {
			t.Fatalf("%v (%s)", err, why)
		}
		if n := reopened.Load(); n != 1 {
			t.Fatalf("the partition was reopened for writing %d times, want once", n)
		}
		if n, err := l.DocCount(); err != nil || n != 3 {
			t.Fatalf("DocCount after the write: %d, %v; want 3", n, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("the write got %v, want %v (%s)", err, want, why)
	}
	if _, again := l.DocCount(); again == nil || again.Error() != err.Error() {
		t.Fatalf("a read after it got %v, want the write's error again", again)
	}
	if err := l.Close(); err != nil && !errors.Is(err, ErrLexical) {
		t.Fatal(err)
	}
	if after := files(t, part); !slices.Equal(after, before) {
		t.Fatalf("the failed write changed the partition (%s):\nbefore %q\nafter  %q", why, before, after)
	}
	// Reopened in the same process, as the error asks: a read fails
	// the same way, and does not wait.
	l2, err := OpenLexical(dir, LexicalOptions{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Adopt(cat, 1, nil); err != nil {
		l2.Close()
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := l2.DocCount(); read <- err }()
	select {
	case err := <-read:
		l2.Close()
		if !errors.Is(err, want) {
			t.Fatalf("a read after reopening got %v, want %v (%s)", err, want, why)
		}
	case <-time.After(time.Minute): // a watchdog, not a wait: the read returns at once
		// Not closed: Close would wait for the read.
		t.Fatalf("a read after reopening still waits after a minute (%s)", why)
	}
}

func TestReady(t *testing.T) {
	tp := makeTwoParts(t)
	open := func(t *testing.T) (*Lexical, string) {
		t.Helper()
		dir := tp.copyOf(t)
		l, err := OpenLexical(dir, LexicalOptions{Deferred: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if _, err := l.Adopt(tp.cat, 1, nil); err != nil {
			t.Fatal(err)
		}
		return l, dir
	}
	names := func(t *testing.T, dir string) []string {
		t.Helper()
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	t.Run("a partition not made yet is left to Index", func(t *testing.T) {
		l, dir := open(t)
		before := names(t, dir)
		c := tp.doc("c", tp.jan.AddDate(5, 0, 0), 2)
		if err := l.Ready([]*evidence.Chunk{c.Chunk})(); err != nil {
			t.Fatal(err)
		}
		if after := names(t, dir); !slices.Equal(after, before) {
			t.Fatalf("Ready changed the index's directory: %q, then %q", before, after)
		}
		if err := l.Index(context.Background(), []Doc{c}); err != nil {
			t.Fatal(err)
		}
		if after := names(t, dir); len(after) != len(before)+1 {
			t.Fatalf("Index made %d partitions, want 1: %q, then %q", len(after)-len(before), before, after)
		}
	})
	t.Run("no chunks: nothing to wait for", func(t *testing.T) {
		l, _ := open(t)
		var reopened atomic.Int32
		l.Hooks.ReadOnlyClosed = func(string) { reopened.Add(1) }
		if err := l.Ready(nil)(); err != nil || reopened.Load() != 0 {
			t.Fatalf("Ready(nil): %v, %d partitions reopened; want nil, 0", err, reopened.Load())
		}
	})
	t.Run("closed: its error, as Index's", func(t *testing.T) {
		l, _ := open(t)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		c := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2)
		if err := l.Ready([]*evidence.Chunk{c.Chunk})(); !errors.Is(err, ErrLexicalClosed) {
			t.Fatalf("Ready after Close: %v, want ErrLexicalClosed", err)
		}
	})
}
