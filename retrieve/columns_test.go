package retrieve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"

	"github.com/evpack/evpack/internal/resident"
)

// TestColumnsAsIndexed: a segment's column holds, for each of its
// documents, the number indexed for the field (negative, fractional and
// large values included), NaN where the document has none, on a snapshot of
// several segments with deleted documents; after a merge, the cache keeps
// the merged segment's columns alone, and they hold the same values. The
// segments' dictionaries iterate without counts (omitCounter), the way
// readColumn reads them.
func TestColumnsAsIndexed(t *testing.T) {
	// On disk: scorch merges (ForceMerge) only persisted segments. The
	// index is closed after each batch, which persists that batch's segment
	// alone: left open, a persister that ran late (CI, under load) merged
	// the three batches' segments into one as it persisted them.
	path := filepath.Join(t.TempDir(), "idx")
	idx, err := bleve.NewUsing(path, bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{} // by document ID; absent: no "day"
	for b := range 3 {
		if b > 0 {
			if idx, err = bleve.Open(path); err != nil {
				t.Fatal(err)
			}
		}
		batch := idx.NewBatch()
		for i := range 40 {
			id := fmt.Sprintf("b%d-%02d", b, i)
			doc := map[string]any{"word": "w"}
			if i%5 != 0 {
				// Runs of four share a value: terms of one document and of several.
				v := float64(b*1000-1500+(i/4)*7) + 0.5*float64((i/4)%2)
				if i == 39 {
					v = 1e12
				}
				doc["day"], want[id] = v, v
			}
			if err := batch.Index(id, doc); err != nil {
				t.Fatal(err)
			}
		}
		if b > 0 { // deleted documents stay in their segments
			batch.Delete(fmt.Sprintf("b%d-%02d", b-1, 3))
		}
		if err := idx.Batch(batch); err != nil {
			t.Fatal(err)
		}
		if err := idx.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if idx, err = bleve.Open(path); err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	var c columns
	// check reads the columns of idx's snapshot, which must hold from
	// least to most segments (bleve may merge meanwhile).
	check := func(what string, least, most int) {
		t.Helper()
		snap := snapshotOf(t, idx, least, most)
		segments := len(snap.Segments())
		cols, err := c.forSnapshot(snap, []string{"day", "absent"})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.segs) != segments {
			t.Fatalf("%s: the cache holds %d segments, the snapshot %d", what, len(c.segs), segments)
		}
		seen := 0
		for i, ss := range snap.Segments() {
			s := ss.Segment()
			for n := range s.Count() {
				raw, err := s.DocID(n)
				if err != nil {
					t.Fatal(err)
				}
				id := string(raw)
				got := cols[i][0].at(n)
				if v, ok := want[id]; (ok && got != v) || (!ok && !math.IsNaN(got)) {
					t.Fatalf("%s: segment %d document %d (%s): day %v, want %v (indexed: %v)", what, i, n, id, got, v, ok)
				}
				if a := cols[i][1].at(n); !math.IsNaN(a) || cols[i][1].len() != 0 {
					t.Fatalf("%s: segment %d document %d (%s): a field no document has reads %v (a column of %d)", what, i, n, id, a, cols[i][1].len())
				}
				seen++
			}
		}
		for i, ss := range snap.Segments() {
			d, err := ss.Segment().Dictionary("day")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := d.(omitCounter); !ok {
				t.Fatalf("%s: segment %d's dictionary (%T) iterates its terms only with their counts: readColumn would read each term's postings twice", what, i, d)
			}
		}
		if min := 120 - 2; seen < min {
			t.Fatalf("%s: %d documents read, want every one written (at least %d live)", what, seen, min)
		}
	}
	check("three batches", 2, 3)
	mergeAll(t, idx)
	check("merged", 1, 1)
}

// mergeAll merges an on-disk scorch index's segments into one.
func mergeAll(t *testing.T, idx bleve.Index) {
	t.Helper()
	adv, err := idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	opts := mergeplan.SingleSegmentMergePlanOptions
	if err := adv.(*scorch.Scorch).ForceMerge(context.Background(), &opts); err != nil {
		t.Fatal(err)
	}
}

// openSnapshot returns idx's current scorch snapshot, which the caller
// closes: a test that holds snapshots of many partitions until it ends
// holds back their merges.
func openSnapshot(t testing.TB, idx bleve.Index) *scorch.IndexSnapshot {
	t.Helper()
	adv, err := idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		r.Close()
		t.Fatalf("the reader is a %T, not a scorch snapshot", r)
	}
	return snap
}

// snapshotOf returns idx's snapshot, closed when the test ends, which must
// hold from least to most segments.
func snapshotOf(t *testing.T, idx bleve.Index, least, most int) *scorch.IndexSnapshot {
	t.Helper()
	snap := openSnapshot(t, idx)
	t.Cleanup(func() { snap.Close() })
	if n := len(snap.Segments()); n < least || n > most {
		t.Fatalf("the snapshot holds %d segment(s), want %d to %d", n, least, most)
	}
	return snap
}

// TestAdmittedBits: the bits a filter of columns alone is evaluated into
// (bitsets.admittedBits) hold, for every document of every segment,
// exactly what the clauses decide document by document (colClause.holds,
// as eligibleFilter.admits asked them before it had bits), with deleted
// documents clear and no bit past the last document: over random segments
// (empty, shorter than 64, not a multiple of 64, columns shorter than the
// segment or empty, values with NaN and ties at the bound) and random
// clauses of both kinds, with tests of both kinds in each. The seed is
// printed.
func TestAdmittedBits(t *testing.T) {
	seed := uint64(20261206)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	const fields = 3
	var b bitsets // one for every round, as a partition keeps its own: no word of a round survives into the next
	for round := range 300 {
		nseg := r.IntN(4)
		counts := make([]uint64, nseg)
		cols := make([][]column, nseg)
		except := make([]*roaring.Bitmap, nseg)
		for s := range nseg {
			counts[s] = uint64([]int{0, 1, 63, 64, 65, 130, 200}[r.IntN(7)])
			cols[s] = make([]column, fields)
			for f := range fields {
				n := int(counts[s])
				switch r.IntN(4) {
				case 0:
					n = 0 // no document holds the field
				case 1:
					n = r.IntN(n + 1) // the last documents have none
				}
				// Values of both widths (column): a value that
				// float32 does not hold makes the column float64.
				cb := columnBuilder{n: n}
				for i := range n {
					if r.IntN(8) != 0 {
						cb.set(uint64(i), float64(r.IntN(9)))
					}
				}
				if n > 0 && r.IntN(3) == 0 {
					cb.set(uint64(r.IntN(n)), 4+1.0/3)
				}
				cols[s][f] = cb.col
			}
			if counts[s] > 0 && r.IntN(2) == 0 {
				except[s] = roaring.New()
				for range r.IntN(10) {
					except[s].Add(uint32(r.IntN(int(counts[s]))))
				}
			}
		}
		clauses := func() []*colClause {
			var cs []*colClause
			for range r.IntN(3) {
				c := &colClause{}
				for range 1 + r.IntN(2) {
					ct := colTest{le: r.IntN(2) == 0, v: float64(r.IntN(9)), col: r.IntN(fields)}
					if r.IntN(3) == 0 {
						c.none = append(c.none, ct)
					} else {
						c.all = append(c.all, ct)
					}
				}
				cs = append(cs, c)
			}
			return cs
		}
		must, mustNot := clauses(), clauses()
		b.counts, b.except = counts, except
		b.admittedBits(cols, must, mustNot)
		bits := b.sets
		if len(bits) != nseg {
			t.Fatalf("round %d: %d sets for %d segments", round, len(bits), nseg)
		}
		for s := range nseg {
			if want := int((counts[s] + 63) / 64); len(bits[s]) != want {
				t.Fatalf("round %d, segment %d: %d words for %d documents", round, s, len(bits[s]), counts[s])
			}
			for d := range counts[s] {
				want := except[s] == nil || !except[s].Contains(uint32(d))
				for _, c := range must {
					want = want && c.holds(cols[s], d)
				}
				for _, c := range mustNot {
					want = want && !c.holds(cols[s], d)
				}
				if got := bits[s][d/64]&(1<<(d%64)) != 0; got != want {
					t.Fatalf("round %d, segment %d, document %d: bit %v, the clauses say %v", round, s, d, got, want)
				}
			}
			if n := counts[s] % 64; n != 0 && bits[s][len(bits[s])-1]>>n != 0 {
				t.Fatalf("round %d, segment %d: bits set past document %d", round, s, counts[s])
			}
		}
	}
}

// TestColumnWidths: a column holds its values in four bytes while
// float32 holds each exactly, and in eight from the first value it does
// not, keeping those set before; either way it answers each document's
// value as set (NaN where none was), and a test's verdicts are those on
// the float64 values, at bounds float32 cannot hold too.
func TestColumnWidths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64 // NaN: not set
		wide   bool
		why    string
	}{
		{"days", []float64{17532, math.NaN(), 20000, 17533}, false, "days since 1970 are integers float32 holds"},
		{"empty", nil, false, "a segment without documents"},
		{"above 2^24", []float64{1, 1 << 24, 1<<24 + 1, math.NaN()}, true, "2^24+1 is the first integer float32 rounds"},
		{"fraction last", []float64{3, math.NaN(), 0.1}, true, "0.1 rounds in float32; 3 and the missing value must survive the widening"},
		{"negative", []float64{-5, -0.5, 3, math.Inf(1)}, false, "halves and infinities are float32's; 3 against bounds float32 rounds to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := columnBuilder{n: len(tc.values) + 1} // the last document has no value
			for i, v := range tc.values {
				if !math.IsNaN(v) {
					b.set(uint64(i), v)
				}
			}
			col := b.col
			if wide := col.f64 != nil; wide != tc.wide || (col.f32 != nil && col.f64 != nil) {
				t.Fatalf("f32 %d, f64 %d values: want wide %v (%s)", len(col.f32), len(col.f64), tc.wide, tc.why)
			}
			want := append(slices.Clone(tc.values), math.NaN())
			if len(tc.values) == 0 {
				want = nil // no value set: no array made
			}
			if col.len() != len(want) {
				t.Fatalf("len %d, want %d", col.len(), len(want))
			}
			for i, v := range want {
				if got := col.at(uint64(i)); got != v && !(math.IsNaN(got) && math.IsNaN(v)) {
					t.Errorf("document %d: %v, want %v", i, got, v)
				}
			}
			bounds := []float64{-1, 0, 0.1, 2.9999999, 3, 3.0000001, 17532, 17532.5, 1 << 24, 1<<24 + 1, math.Inf(1)}
			for _, bound := range bounds {
				for _, le := range []bool{true, false} {
					ct := colTest{le: le, v: bound}
					var ref uint64
					for i, v := range want {
						if ct.holds(v) {
							ref |= 1 << i
						}
					}
					if got := ct.word(col, 0, uint64(len(want))); got != ref {
						t.Errorf("le %v %v: bits %b, want %b", le, bound, got, ref)
					}
				}
			}
		})
	}
}

// TestColumnsReleaseTheirPages: once forSnapshot has read a segment's
// columns, none of the segment's file is left in the process's resident
// set (releaseSegment), where reading them had mapped pages of it (its
// dictionaries and postings), and the columns hold what was indexed; a
// later call that reads no column leaves the pages a reader mapped since
// (no madvise on a request that finds its columns cached).
func TestColumnsReleaseTheirPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the resident set is read from /proc/self/smaps")
	}
	path := filepath.Join(t.TempDir(), "idx")
	idx, err := bleve.NewUsing(path, bleve.NewIndexMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := idx.NewBatch()
	for i := range 5000 {
		doc := map[string]any{"word": fmt.Sprintf("w%d", i%97), "day": float64(i % 400)}
		if err := batch.Index(fmt.Sprintf("d%04d", i), doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(idx.Batch(batch), idx.Close()); err != nil {
		t.Fatal(err)
	}
	if idx, err = bleve.Open(path); err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	snap := openSnapshot(t, idx)
	defer snap.Close()
	residentKiB := func(s segment.Segment) int {
		t.Helper()
		z, ok := s.(*zap.Segment)
		if !ok {
			t.Fatalf("a segment of %T, not a zapx file", s)
		}
		kib, ok, err := resident.KiB(z.Data())
		if err != nil || !ok {
			t.Fatalf("the segment's mapping in smaps: found %v, %v", ok, err)
		}
		return kib
	}
	var c columns
	cols, err := c.forSnapshot(snap, []string{"day"})
	if err != nil {
		t.Fatal(err)
	}
	for i, ss := range snap.Segments() {
		s := ss.Segment()
		if kib := residentKiB(s); kib != 0 {
			t.Errorf("segment %d: %d KiB of its file resident after its columns were read, want none", i, kib)
		}
		for n := range s.Count() { // reads the stored IDs: maps pages again
			raw, err := s.DocID(n)
			if err != nil {
				t.Fatal(err)
			}
			var k int
			if _, err := fmt.Sscanf(string(raw), "d%d", &k); err != nil {
				t.Fatal(err)
			}
			if got := cols[i][0].at(n); got != float64(k%400) {
				t.Fatalf("segment %d document %d (%s): day %v, want %d", i, n, raw, got, k%400)
			}
		}
	}
	mapped := make([]int, len(snap.Segments()))
	for i, ss := range snap.Segments() {
		if mapped[i] = residentKiB(ss.Segment()); mapped[i] == 0 {
			t.Fatalf("segment %d: reading its stored IDs mapped nothing: the check above proves nothing", i)
		}
	}
	if _, err := c.forSnapshot(snap, []string{"day"}); err != nil {
		t.Fatal(err)
	}
	for i, ss := range snap.Segments() {
		if kib := residentKiB(ss.Segment()); kib != mapped[i] {
			t.Errorf("segment %d: %d KiB resident after a call that read no column, want the %d mapped before it", i, kib, mapped[i])
		}
	}
}
