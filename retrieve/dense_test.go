package retrieve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evpack/evpack/retrieve/vectors"
)

func sif(t *testing.T) *SIF {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.evv")
	if err := vectors.Write(path, []string{"capital", "buffer", "the"}, [][]float64{{1, 0}, {0, 1}, {1, 1}}); err != nil {
		t.Fatal(err)
	}
	tb, err := vectors.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewSIF(tb)
}

func TestSIFHandComputed(t *testing.T) {
	s := sif(t)
	f := s.Analyze("The CAPITAL, unknown buffer!")
	if len(f) != 3 || f[0] != 2 || f[1] != 0 || f[2] != 1 {
		t.Fatalf("features %v", f)
	}
	// Without counts every weight is equal: the + capital + buffer = (2, 2),
	// unit length ×127 = (90, 90) (127/√2 = 89.8).
	vs, err := s.Embed(context.Background(), [][]int32{f}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	v := vs[0]
	if v[0] != 90 || v[1] != 90 {
		t.Fatalf("v = %v", v)
	}
	// With "the" frequent, its weight a/(a+p) is tiny: capital+buffer still
	// (1,1) direction.
	c := NewCounts()
	c.Add([]int32{2, 2, 2, 2, 2, 2, 2, 2, 0})
	vs, _ = s.Embed(context.Background(), [][]int32{s.Analyze("capital")}, c, true)
	v = vs[0]
	if v[0] != 127 || v[1] != 0 {
		t.Fatalf("one word: its own direction, %v", v)
	}
	if got, _ := s.Embed(context.Background(), [][]int32{nil, s.Analyze("nothing known")}, c, false); got[0] != nil || got[1] != nil {
		t.Fatalf("no known words: no vector, %v", got)
	}
	if Dot([]int8{127, -127}, []int8{127, 127}) != 0 || Dot([]int8{90, 90}, []int8{90, 90}) != 16200 {
		t.Fatal("dot")
	}
}

func TestDenseSearchOrderAndFilter(t *testing.T) {
	d := NewDense([]string{"c", "a", "b", "z"}, [][]int8{{127, 0}, {127, 0}, {0, 127}, nil})
	hits, scanned, err := d.Search(context.Background(), []int8{127, 0}, func(row int) bool { return d.ID(row) != "b" }, 5)
	if err != nil {
		t.Fatal(err)
	}
	if scanned != 2 || len(hits) != 2 || hits[0].ID != "a" || hits[1].ID != "c" || hits[0].Score != 16129 || hits[0].Norm2 != 16129 {
		t.Fatalf("ties by ID, ineligible and vectorless chunks never scored: %+v scanned %d", hits, scanned)
	}
}

func TestCosineOrderIsExact(t *testing.T) {
	// a: dot 100 with norm² 100 (cos 10/|q|); b: dot 110 with norm² 144
	// (cos 9.17/|q|). A raw dot would put b first; cosine puts a first.
	a, b := DenseHit{ID: "b-id", Score: 100, Norm2: 100}, DenseHit{ID: "a-id", Score: 110, Norm2: 144}
	if moreSimilar(a, b) != 1 || moreSimilar(b, a) != -1 || moreSimilar(a, a) != 0 {
		t.Fatal("cosine order")
	}
	neg := DenseHit{Score: -5, Norm2: 1}
	if moreSimilar(DenseHit{Score: 0, Norm2: 9}, neg) != 1 || moreSimilar(neg, DenseHit{Score: -50, Norm2: 1}) != 1 {
		t.Fatal("signs: zero beats negative; a smaller negative cosine is more similar")
	}
	big := DenseHit{Score: 384 * 127 * 127, Norm2: 384 * 127 * 127}
	if moreSimilar(big, DenseHit{Score: big.Score - 1, Norm2: big.Norm2}) != 1 {
		t.Fatal("384 dimensions at full scale overflow 64 bits; the 128-bit compare holds")
	}
}

func TestDenseEncodeDecode(t *testing.T) {
	d := NewDense([]string{"b", "a", "c"}, [][]int8{{1, -2}, nil, {127, -128}})
	raw := d.Encode()
	got, err := DecodeDense("d.bin", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		want, _ := d.Vector(id)
		v, ok := got.Vector(id)
		if !ok || fmt.Sprint(v) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, want %v", id, v, want)
		}
	}
	for name, b := range map[string][]byte{"truncated": raw[:len(raw)-1], "garbage": []byte("EVPDNS1\nxx"), "empty": nil} {
		if _, err := DecodeDense(name, b); !errors.Is(err, ErrDenseFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestWithoutFirstComponent: four vectors sharing a strong x direction and
// spread symmetrically in y and z: the first component is x exactly, and
// removing it leaves the spread, hand-computed.
func TestWithoutFirstComponent(t *testing.T) {
	unit := func(x, y, z int64) []int8 { return normalize([]int64{x, y, z}) }
	d := NewDense([]string{"a", "b", "c", "d"}, [][]int8{unit(100, 50, 0), unit(100, -50, 0), unit(100, 0, 50), unit(100, 0, -50)})
	r := d.WithoutFirstComponent()
	if want := []int64{componentScale, 0, 0}; !slices.Equal(r.pc, want) {
		t.Fatalf("component %v, want %v", r.pc, want)
	}
	for i, want := range [][]int8{{0, 127, 0}, {0, -127, 0}, {0, 0, 127}, {0, 0, -127}} {
		if got, _ := r.Vector(r.ID(i)); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", r.ID(i), got, want)
		}
	}
	if got := r.Project(unit(90, 90, 0)); !slices.Equal(got, []int8{0, 127, 0}) {
		t.Fatalf("question (1,1,0): %v, want [0 127 0]", got)
	}
	if got := r.Project(unit(1, 0, 0)); got != nil {
		t.Fatalf("a question along the removed component has nothing left: %v", got)
	}
	if got := d.Project(unit(1, 2, 3)); !slices.Equal(got, unit(1, 2, 3)) {
		t.Fatal("an index without a removed component changes questions")
	}
	if got := r.Project([]int8{1, 2}); got != nil {
		t.Fatalf("a question of the wrong dimension: %v, want nil", got)
	}
}
