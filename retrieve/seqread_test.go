package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
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

// TestTermReaderAsScorch: termReader hands out what scorch's term reader
// does (document numbers, frequencies, norms, counts) on snapshots of
// several segments with deleted documents, and on the one a merge leaves,
// whose segment carries an empty deleted bitmap (the case termReader is
// for: the test fails if the merge no longer leaves one, which would make
// termReader needless): every posting in turn, and seeded series of
// advances, some backwards (which scorch answers by starting again).
func TestTermReaderAsScorch(t *testing.T) {
	seed := uint64(20261202)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	// Four batches, each deleting a third of the one before: in memory,
	// where scorch merges nothing, the deleted documents stay in their
	// segments; on disk, to be merged below (scorch merges persisted
	// segments only).
	fill := func(idx bleve.Index) {
		for b := range 4 {
			batch := idx.NewBatch()
			for i := range 30 {
				ws := make([]string, 1+rng.IntN(6))
				for j := range ws {
					ws[j] = words[rng.IntN(len(words))]
				}
				if err := batch.Index(fmt.Sprintf("b%d-%02d", b, i), map[string]any{"text": strings.Join(ws, " ")}); err != nil {
					t.Fatal(err)
				}
			}
			if b > 0 {
				for i := 0; i < 30; i += 3 {
					batch.Delete(fmt.Sprintf("b%d-%02d", b-1, i))
				}
			}
			if err := idx.Batch(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	mem, err := bleve.NewUsing("", bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	idx, err := bleve.NewUsing(filepath.Join(t.TempDir(), "idx"), bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	fill(mem)
	fill(idx)
	compare := func(what string, snap *scorch.IndexSnapshot) {
		t.Helper()
		ctx := context.Background()
		for _, w := range append(words, "absent") {
			for _, freqNorm := range []bool{false, true} {
				open := func() (want, got index.TermFieldReader) {
					want, err1 := snap.TermFieldReader(ctx, []byte(w), "text", freqNorm, freqNorm, false)
					got, err2 := termFieldReader(ctx, snap, []byte(w), "text", freqNorm)
					if err1 != nil || err2 != nil {
						t.Fatalf("%s: %q: %v, %v", what, w, err1, err2)
					}
					return want, got
				}
				same := func(step string, a, b *index.TermFieldDoc, err1, err2 error) bool {
					t.Helper()
					if err1 != nil || err2 != nil || (a == nil) != (b == nil) || a != nil && (!bytes.Equal(a.ID, b.ID) || a.Freq != b.Freq || a.Norm != b.Norm) {
						t.Fatalf("%s: %q (freq and norm %t), %s: termReader %+v (%v), scorch %+v (%v)", what, w, freqNorm, step, b, err2, a, err1)
					}
					return a != nil
				}
				want, got := open()
				if want.Count() != got.Count() {
					t.Fatalf("%s: %q: count %d, scorch %d", what, w, got.Count(), want.Count())
				}
				n := 0
				for {
					a, err1 := want.Next(nil)
					b, err2 := got.Next(nil)
					if !same(fmt.Sprintf("posting %d", n), a, b, err1, err2) {
						break
					}
					n++
				}
				if w != "absent" && n == 0 {
					t.Fatalf("%s: %q: no postings", what, w)
				}
				for run := range 10 {
					want, got := open()
					var to uint64
					for step := range 12 {
						if step > 0 && rng.IntN(5) == 0 {
							to -= min(to, uint64(rng.IntN(20))) // backwards, or onto the last one
						} else {
							to += uint64(rng.IntN(25))
						}
						var id [8]byte
						binary.BigEndian.PutUint64(id[:], to)
						a, err1 := want.Advance(id[:], &index.TermFieldDoc{})
						b, err2 := got.Advance(id[:], &index.TermFieldDoc{})
						if !same(fmt.Sprintf("run %d, advance %d to %d", run, step, to), a, b, err1, err2) {
							break
						}
						to = binary.BigEndian.Uint64(a.ID)
					}
				}
			}
		}
	}
	withDeleted := snapshotOf(t, mem, 4, 4)
	deleted := uint64(0)
	for _, ss := range withDeleted.Segments() {
		if d := ss.Deleted(); d != nil {
			deleted += d.GetCardinality()
		}
	}
	if deleted != 30 {
		t.Fatalf("%d deleted documents in the segments, want 30", deleted)
	}
	compare("four batches", withDeleted)
	mergeAll(t, idx)
	merged := snapshotOf(t, idx, 1, 1)
	if d := merged.Segments()[0].Deleted(); d == nil || !d.IsEmpty() {
		t.Fatalf("the merged segment's deleted documents: %v, want an empty bitmap (termReader's reason)", d)
	}
	compare("merged", merged)
}

// TestPostingLengthIsScorersLength holds the pruned search's field length
// (postingLength, from zap's field length and a table) to what bleve's
// scorer derives from the posting's norm, bit for bit, for field lengths
// on both sides of the table's end. It fails if zap changes how it encodes
// a norm, or if the table drifts from the scorer's expression.
func TestPostingLengthIsScorersLength(t *testing.T) {
	lengths := []int{1, 2, 3, 7, 100, 1000, len(zapLengths) - 1, len(zapLengths), len(zapLengths) + 1, 3001}
	idx, err := bleve.NewUsing("", bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() }) // after the snapshot snapshotOf closes
	batch := idx.NewBatch()
	for i, n := range lengths {
		text := strings.TrimSpace("common " + strings.Repeat("filler ", n-1))
		if err := batch.Index(fmt.Sprintf("d%02d", i), map[string]any{"text": text}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		t.Fatal(err)
	}
	tfr, err := termFieldReader(context.Background(), snapshotOf(t, idx, 1, 1), []byte("common"), "text", true)
	if err != nil {
		t.Fatal(err)
	}
	seq, ok := tfr.(*termReader)
	if !ok {
		t.Fatalf("termFieldReader gave a %T over a scorch snapshot", tfr)
	}
	var seen []uint64
	for {
		p, err := seq.nextPosting()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		z, ok := p.(interface{ NormUint64() uint64 })
		if !ok {
			t.Fatalf("zap's posting %T gives no field length: the table is never used", p)
		}
		seen = append(seen, z.NormUint64())
		if got, want := postingLength(p), lengthOfNorm(p.Norm()); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("field length %d: postingLength %v, the scorer's %v", z.NormUint64(), got, want)
		}
		if got, want := zapNorm(z.NormUint64()), p.Norm(); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("field length %d: zapNorm %v, zap's Norm %v", z.NormUint64(), got, want)
		}
	}
	slices.Sort(seen)
	want := make([]uint64, len(lengths))
	for i, n := range lengths {
		want[i] = uint64(n)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("field lengths read %v, indexed %v", seen, want)
	}
}
