package retrieve

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
)

// TestSequentialReaderContainsAsScorch: the dictionary lookups the
// eligibility filter makes in its own goroutine answer as scorch's do, on a
// snapshot of several segments, for every term some segment holds (numeric
// terms at each of their precisions) and for terms none holds.
func TestSequentialReaderContainsAsScorch(t *testing.T) {
	m := bleve.NewIndexMapping()
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	// Three batches, three segments; each holds days the others do not.
	for b := range 3 {
		batch := idx.NewBatch()
		for i := range 20 {
			doc := map[string]any{"day": float64(b*1000 + i*7), "word": fmt.Sprintf("w%d", b*100+i)}
			if err := batch.Index(fmt.Sprintf("b%d-%02d", b, i), doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Batch(batch); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshotOf(t, idx, 2, math.MaxInt)
	r := index.IndexReader(snap)
	seq := sequential(r)
	if _, ok := seq.(sequentialReader); !ok {
		t.Fatalf("sequential(%T) = %T, want a sequentialReader", r, seq)
	}
	for _, field := range []string{"day", "word", "absent"} {
		want, err := snap.FieldDictContains(field)
		if err != nil {
			t.Fatal(err)
		}
		got, err := seq.(index.IndexReaderContains).FieldDictContains(field)
		if err != nil {
			t.Fatal(err)
		}
		var terms [][]byte
		if d, err := snap.FieldDict(field); err != nil {
			t.Fatal(err)
		} else {
			for e, err := d.Next(); e != nil || err != nil; e, err = d.Next() {
				if err != nil {
					t.Fatal(err)
				}
				terms = append(terms, []byte(e.Term))
			}
			d.Close()
		}
		held := 0
		for _, term := range terms {
			absent := append(append([]byte(nil), term...), 0xff) // no term ends so
			for _, k := range [][]byte{term, absent} {
				w, _ := want.Contains(k)
				g, err := got.Contains(k)
				if err != nil || g != w {
					t.Fatalf("field %s, term %q: sequential Contains = %v, %v; scorch's = %v", field, k, g, err, w)
				}
				if g {
					held++
				}
			}
		}
		if wantHeld := map[string]int{"day": len(terms), "word": 60, "absent": 0}[field]; held != wantHeld || (field == "day" && held < 60) {
			t.Errorf("field %s: %d of %d terms found, want %d", field, held, len(terms), wantHeld)
		}
	}
}

// TestSequentialDocReadersAsScorch: the document readers the eligibility
// filter starts from give scorch's documents, numbered as scorch numbers
// them, on a snapshot of several segments with deleted documents: every
// document in turn, and after each of a seeded series of advances (each
// target at or after the last, as searchers advance).
func TestSequentialDocReadersAsScorch(t *testing.T) {
	idx, err := bleve.NewUsing("", bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	var ids []string
	for b := range 4 {
		batch := idx.NewBatch()
		for i := range 25 {
			id := fmt.Sprintf("b%d-%02d", b, i)
			ids = append(ids, id)
			if err := batch.Index(id, map[string]any{"word": id}); err != nil {
				t.Fatal(err)
			}
		}
		if b > 0 { // deletions in the segments before: 7 of each of 3, 21 in all
			for i := 0; i < 25; i += 4 {
				batch.Delete(fmt.Sprintf("b%d-%02d", b-1, i))
			}
		}
		if err := idx.Batch(batch); err != nil {
			t.Fatal(err)
		}
	}
	r := index.IndexReader(snapshotOf(t, idx, 2, math.MaxInt))
	seq := sequential(r)
	only := []string{ids[1], ids[30], ids[31], ids[77], ids[99], ids[0] /* deleted */, "no-such-id"}
	readers := []struct {
		name      string
		want, got func() (index.DocIDReader, error)
	}{
		{"all", r.DocIDReaderAll, seq.DocIDReaderAll},
		{"only", func() (index.DocIDReader, error) { return r.DocIDReaderOnly(only) }, func() (index.DocIDReader, error) { return seq.DocIDReaderOnly(only) }},
	}
	seed := uint64(20261202)
	t.Logf("seed %d", seed)
	for _, rd := range readers {
		// Every document in turn.
		want, got := mustReader(t, rd.want), mustReader(t, rd.got)
		n := 0
		for {
			w, err1 := want.Next()
			g, err2 := got.Next()
			if err1 != nil || err2 != nil || !bytes.Equal(w, g) {
				t.Fatalf("%s: document %d: sequential %x (%v), scorch %x (%v)", rd.name, n, g, err2, w, err1)
			}
			if w == nil {
				break
			}
			n++
		}
		if rd.name == "all" && n != 100-21 || rd.name == "only" && n != 5 {
			t.Errorf("%s: %d documents read", rd.name, n)
		}
		// Advances, from fresh readers: 30 runs of seeded targets.
		rng := rand.New(rand.NewPCG(seed, 1))
		for run := range 30 {
			want, got := mustReader(t, rd.want), mustReader(t, rd.got)
			to := uint64(0)
			for step := 0; ; step++ {
				to += uint64(rng.IntN(12))
				id := index.NewIndexInternalID(nil, to)
				w, err1 := want.Advance(id)
				g, err2 := got.Advance(id)
				if err1 != nil || err2 != nil || !bytes.Equal(w, g) {
					t.Fatalf("%s: run %d, step %d, advance to %d: sequential %x (%v), scorch %x (%v)", rd.name, run, step, to, g, err2, w, err1)
				}
				if w == nil {
					break
				}
			}
		}
	}
	if _, err := mustReader(t, seq.DocIDReaderAll).Advance([]byte{1, 2}); !errors.Is(err, ErrLexical) {
		t.Errorf("advance to a 2-byte ID: %v, want ErrLexical", err)
	}
}

func mustReader(t *testing.T, f func() (index.DocIDReader, error)) index.DocIDReader {
	t.Helper()
	d, err := f()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
