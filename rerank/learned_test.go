package rerank

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// fakeDocs is a Documents over chunks given in document order per document.
type fakeDocs struct {
	docs  map[string][]string // doc -> chunk IDs in order
	of    map[string]string   // chunk -> doc
	terms map[string][]string
	df    map[string]int
	total int64
}

func newFakeDocs(docs [][2]string, order []string) *fakeDocs {
	f := &fakeDocs{docs: map[string][]string{}, of: map[string]string{}, terms: map[string][]string{}, df: map[string]int{}}
	for _, id := range order {
		for _, d := range docs {
			if d[0] != id {
				continue
			}
			doc, _, _ := strings.Cut(id, "/")
			f.docs[doc] = append(f.docs[doc], id)
			f.of[id] = doc
			ts := Terms(d[1])
			f.terms[id] = ts
			f.total += int64(len(ts))
			seen := map[string]bool{}
			for _, t := range ts {
				if !seen[t] {
					seen[t] = true
					f.df[t]++
				}
			}
		}
	}
	return f
}

func (f *fakeDocs) DocCount() int                 { return len(f.of) }
func (f *fakeDocs) DocFreq(t string) int          { return f.df[t] }
func (f *fakeDocs) ChunkTerms(id string) []string { return f.terms[id] }
func (f *fakeDocs) TermTotal() int64              { return f.total }
func (f *fakeDocs) Document(id string) ([]string, [][]string, int) {
	d, ok := f.of[id]
	if !ok {
		return nil, nil, -1
	}
	var ts [][]string
	for _, c := range f.docs[d] {
		ts = append(ts, f.terms[c])
	}
	return f.docs[d], ts, slices.Index(f.docs[d], id)
}

var smallDocs = [][2]string{
	{"a/1", "Capital buffers"},
	{"a/2", "A bank must hold a capital conservation buffer of common equity."},
	{"a/3", "The capital conservation buffer is 2.5 percent of risk weighted assets."},
	{"a/4", "Liquidity coverage"},
	{"a/5", "A bank must hold high quality liquid assets."},
	{"b/1", "Record keeping"},
	{"b/2", "A firm must keep records of the capital buffer for six years."},
	{"c/1", "Unrelated text about fishing licences and boats."},
}

func smallPool(f *fakeDocs, ids ...string) []Candidate {
	text := map[string]string{}
	for _, d := range smallDocs {
		text[d[0]] = d[1]
	}
	out := make([]Candidate, len(ids))
	for i, id := range ids {
		out[i] = Candidate{ID: id, Text: text[id], Rank: i + 1, Terms: f.terms[id]}
	}
	return out
}

func smallFake() *fakeDocs {
	ids := make([]string, len(smallDocs))
	for i, d := range smallDocs {
		ids[i] = d[0]
	}
	return newFakeDocs(smallDocs, ids)
}

// TestFeatureRowsAgreeWithArithmetic: the match features are the Arithmetic
// reranker's, computed without its maps; the arithmetic feature is its score.
func TestFeatureRowsAgreeWithArithmetic(t *testing.T) {
	f := smallFake()
	a, err := NewArithmetic(DefaultWeights)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"capital conservation buffer of a bank", "how long must records be kept", "buffer buffer capital", "zebra"} {
		cands := smallPool(f, "a/3", "b/2", "a/2", "a/5", "c/1", "a/1")
		rows := FeatureRows(q, cands, f)
		scored, err := a.Rerank(context.Background(), q, cands, f)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cands {
			want := a.Explain(q, c, f)
			got := Features{Coverage: rows[i][4], Density: rows[i][6], Proximity: rows[i][7], Phrase: rows[i][8], Prior: prior(c.Rank)}
			if got != want {
				t.Errorf("%q %s: features %+v, Arithmetic %+v", q, c.ID, got, want)
			}
			k := slices.IndexFunc(scored, func(s evidence.Scored) bool { return s.ChunkID == c.ID })
			if rows[i][3] != scored[k].Score {
				t.Errorf("%q %s: arithmetic feature %d, Arithmetic score %d", q, c.ID, rows[i][3], scored[k].Score)
			}
		}
	}
}

// TestFeatureRowsDocumentContext checks the document features by hand.
func TestFeatureRowsDocumentContext(t *testing.T) {
	f := smallFake()
	q := "capital conservation buffer"
	cands := smallPool(f, "a/3", "b/2", "a/2", "c/1")
	rows := FeatureRows(q, cands, f)
	get := func(id string, name string) int64 {
		i := slices.IndexFunc(cands, func(c Candidate) bool { return c.ID == id })
		k := slices.Index(FeatureNames[:], name)
		return rows[i][k]
	}
	cases := []struct {
		id, feature string
		want        int64
		why         string
	}{
		{"a/3", "position", 2, "third chunk of document a"},
		{"a/3", "doc_chunks", 5, "document a has five chunks"},
		{"a/3", "depth", s * 2 / 5, "position over chunks"},
		{"a/3", "doc_share", 2, "a/2 and a/3 are in the pool"},
		{"a/2", "rank_in_doc", 2, "a/3 has the better fused rank"},
		{"a/3", "rank_in_doc", 1, "best of its document"},
		{"a/3", "doc_rank", 1, "document a sums two matching chunks"},
		{"c/1", "doc_rank", 3, "no match: last"},
		{"c/1", "bm25", 0, "no question term"},
		{"a/3", "exact_run", 3, "capital conservation buffer, verbatim"},
		{"b/2", "exact_run", 1, "capital buffer: not the question's sequence"},
		{"a/3", "question_terms", 3, "three distinct terms"},
		{"c/1", "prev_bm25_rel", 0, "first of its document"},
		{"b/2", "next_bm25_rel", 0, "last of its document"},
	}
	for _, c := range cases {
		if got := get(c.id, c.feature); got != c.want {
			t.Errorf("%s %s = %d, want %d (%s)", c.id, c.feature, got, c.want, c.why)
		}
	}
	// a/2's heading is "Capital buffers" (a/1): capital and buffer of three
	// terms, IDF-weighted; a/2 itself holds all three.
	if h, w := get("a/2", "heading_cov"), get("a/2", "with_heading"); h <= 0 || h >= s || w != s {
		t.Errorf("a/2 heading_cov %d, with_heading %d: want in (0, S) and S", h, w)
	}
	// a/2's neighbours a/1 and a/3 both match; smoothing adds to its BM25.
	if get("a/2", "smoothed_rel") <= get("a/2", "bm25_rel") || get("a/2", "next_bm25_rel") != get("a/3", "bm25_rel") {
		t.Errorf("a/2: smoothing %d over %d, next %d vs a/3 %d", get("a/2", "smoothed_rel"), get("a/2", "bm25_rel"), get("a/2", "next_bm25_rel"), get("a/3", "bm25_rel"))
	}
	// Without Documents the document features are zero, smoothing is plain
	// BM25, and each chunk is its own document in the pool.
	plain := FeatureRows(q, cands, fixedStats(f.df))
	for i := range plain {
		for _, k := range []int{10, 11, 17, 18, 19, 21, 22} {
			if plain[i][k] != 0 {
				t.Errorf("%s: %s = %d without Documents", cands[i].ID, FeatureNames[k], plain[i][k])
			}
		}
		if plain[i][12] != plain[i][2] || plain[i][13] != 1 {
			t.Errorf("%s: smoothed %d vs bm25_rel %d, doc_share %d", cands[i].ID, plain[i][12], plain[i][2], plain[i][13])
		}
	}
}

func testModel(t *testing.T) *Model {
	t.Helper()
	m, err := NewModel("test", [][]Node{
		{{Feature: 4, Threshold: s / 2, Left: 1, Right: 2}, {Feature: -1, Value: -10}, {Feature: -1, Value: 30}},
		{{Feature: 0, Threshold: 3, Left: 1, Right: 2}, {Feature: -1, Value: 5}, {Feature: -1, Value: 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelScoreAndRoundTrip(t *testing.T) {
	m := testModel(t)
	cases := []struct {
		row  Row
		want int64
		why  string
	}{
		{Row{0: 1, 4: s}, 35, "full coverage, top three"},
		{Row{0: 4, 4: s / 2}, -10, "coverage at the threshold goes left, rank 4 gets nothing"},
		{Row{0: 3, 4: 0}, -5, "no coverage, rank 3"},
	}
	for _, c := range cases {
		if got := m.Score(&c.row); got != c.want {
			t.Errorf("%s: score %d, want %d", c.why, got, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "m.evm")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Sum() != m.Sum() || back.Record() != "test" || !slices.Equal(back.Encode(), m.Encode()) {
		t.Fatalf("round trip: %s %q vs %s", back.Sum(), back.Record(), m.Sum())
	}
	if diff := cmp.Diff(m.trees, back.trees); diff != "" {
		t.Fatal(diff)
	}
}

// sealPayload builds a sealed file from a magic and raw payload bytes.
func sealPayload(magic string, payload []byte) []byte {
	return fsutil.Seal(append([]byte(magic), payload...))
}

func TestModelBadFiles(t *testing.T) {
	good := testModel(t).Encode()
	payload := good[len(modelMagic) : len(good)-32]
	otherFeatures := append([]byte{byte(len("ctx/0 terms/1"))}, "ctx/0 terms/1"...)
	otherFeatures = append(otherFeatures, payload[1+len(FeatureSet):]...)
	flipped := append([]byte(nil), good...)
	flipped[len(modelMagic)+3] ^= 1
	childBefore, err := (&Model{features: FeatureSet, record: "x", trees: [][]Node{
		{{Feature: -1, Value: 1}, {Feature: 2, Threshold: 0, Left: 0, Right: 0}}}}).encodeUnchecked()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		raw  []byte
		want error
		says string
	}{
		{"flipped byte: checksum", flipped, ErrModel, "checksum"},
		{"truncated", good[:len(good)-5], ErrModel, "checksum"},
		{"empty file", nil, ErrModel, "wrong header"},
		{"another format entirely", []byte("evpack-vectors/1\n0123456789012345678901234567890123456789"), ErrModel, "wrong header"},
		{"a later format version", sealPayload("evpack-rerank-model/2\n", payload), ErrModelVersion, `format "evpack-rerank-model/2"`},
		{"another feature set", sealPayload(modelMagic, otherFeatures), ErrModelVersion, `trained on features "ctx/0 terms/1"`},
		{"trailing bytes", sealPayload(modelMagic, append(slices.Clone(payload), 0)), ErrModel, "1 bytes after the last tree"},
		{"payload cut short", sealPayload(modelMagic, payload[:len(payload)-2]), ErrModel, "truncated number"},
		{"child before its parent", childBefore, ErrModel, "tree 0 node 1: children 0 and 0 must lie after it"},
	}
	for _, c := range cases {
		m, err := DecodeModel(c.raw, "m.evm")
		if !errors.Is(err, c.want) || m != nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "m.evm") {
			t.Errorf("%s: got %v (model %v), want %v saying %q and naming m.evm", c.name, err, m, c.want, c.says)
		}
	}
}

// encodeUnchecked encodes m without checking it: for forging bad files.
func (m *Model) encodeUnchecked() ([]byte, error) { return m.encode(), nil }

func TestLearnedOrFallback(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.evm")
	if err := os.WriteFile(bad, []byte("evpack-rerank-model/1\nnot a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LearnedOrFallback(bad)
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v, want ErrModel naming %s", err, bad)
	}
	fb, ok := r.(*Fallback)
	if !ok {
		t.Fatalf("got %T, want *Fallback", r)
	}
	want := "arithmetic/1 coverage=1 density=2 proximity=0 phrase=4 prior=4 terms/1 fallback-from=learned (rerank: bad model)"
	if fb.Name() != want {
		t.Fatalf("name %q, want %q", fb.Name(), want)
	}
	if _, err := LearnedOrFallback(filepath.Join(dir, "absent.evm")); !errors.Is(err, ErrModel) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("absent file: %v", err)
	}
	good := filepath.Join(dir, "good.evm")
	if err := testModel(t).Save(good); err != nil {
		t.Fatal(err)
	}
	r, err = LearnedOrFallback(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := "learned/1 model=" + testModel(t).Sum() + " features=" + FeatureSet; r.Name() != want {
		t.Fatalf("name %q, want %q", r.Name(), want)
	}
	if r, err = LearnedOrFallback(""); err != nil || !strings.HasPrefix(r.Name(), "learned/1 model=blake3:") {
		t.Fatalf("embedded model: %v %v", r, err)
	}
}

func TestLearnedTiesByChunkID(t *testing.T) {
	m, err := NewModel("flat", [][]Node{{{Feature: -1, Value: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearned(m)
	if err != nil {
		t.Fatal(err)
	}
	f := smallFake()
	got, err := l.Rerank(context.Background(), "capital buffer", smallPool(f, "b/2", "a/3", "c/1", "a/2"), f)
	if err != nil {
		t.Fatal(err)
	}
	want := []evidence.Scored{{ChunkID: "a/2", Score: 7}, {ChunkID: "a/3", Score: 7}, {ChunkID: "b/2", Score: 7}, {ChunkID: "c/1", Score: 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

// synthetic returns n labelled pools of 20 candidates: gold when a hidden
// mix of features (non-linear) is high.
func synthetic(seed uint64, n int) []TrainQuery {
	rng := rand.New(rand.NewPCG(seed, 7))
	qs := make([]TrainQuery, n)
	for i := range qs {
		q := TrainQuery{ID: fmt.Sprintf("q%d", i)}
		for j := range 20 {
			var r Row
			for k := range r {
				r[k] = rng.Int64N(1000)
			}
			r[0] = int64(j + 1)
			good := r[4]+r[14]/2 > 900 || (r[21] > 800 && r[0] < 8)
			q.IDs = append(q.IDs, fmt.Sprintf("c%02d", (j*7)%20))
			q.Rows = append(q.Rows, r)
			q.Gold = append(q.Gold, good)
		}
		qs[i] = q
	}
	return qs
}

// TestTrainIsDeterministic: the same data and options give a byte-identical
// model twice and under GOMAXPROCS 1 and 2; the hash is pinned.
func TestTrainIsDeterministic(t *testing.T) {
	const seed = 3
	t.Logf("data seed %d", seed)
	data := synthetic(seed, 150)
	opts := TrainOptions{Trees: 20, Leaves: 8, MinLeafRows: 20, Subsample: 0.7, Seed: 11}
	var sums []string
	for _, procs := range []int{1, 2, 2} {
		old := runtime.GOMAXPROCS(procs)
		m, err := Train(data, opts)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, m.Sum())
	}
	if sums[0] != sums[1] || sums[1] != sums[2] {
		t.Fatalf("model hashes differ: %v", sums)
	}
	const want = "blake3:7dd8955229f34b751cc56ae3dfc43e84ca9117282e8adadd0a598f4f5ab86c43"
	if sums[0] != want {
		t.Fatalf("model hash %s, pinned %s", sums[0], want)
	}
}

// TestTrainLearnsTheHiddenRule: on held-out synthetic pools the model ranks
// gold above the rest far better than the fused rank does.
func TestTrainLearnsTheHiddenRule(t *testing.T) {
	train, test := synthetic(5, 200), synthetic(6, 100)
	m, err := Train(train, TrainOptions{Trees: 30, Leaves: 8, MinLeafRows: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	hits := func(score func(r *Row) int64) int {
		n := 0
		for _, q := range test {
			best := 0
			for j := range q.Rows {
				if score(&q.Rows[j]) > score(&q.Rows[best]) {
					best = j
				}
			}
			if q.Gold[best] {
				n++
			}
		}
		return n
	}
	model, byRank := hits(m.Score), hits(func(r *Row) int64 { return -r[0] })
	t.Logf("top-1 gold: model %d, fused rank %d of %d", model, byRank, len(test))
	if model != 100 || byRank != 47 {
		t.Fatalf("top-1 gold: model %d, rank %d", model, byRank)
	}
}

func TestTrainBadInput(t *testing.T) {
	noGold := []TrainQuery{{ID: "q1", IDs: []string{"a", "b"}, Rows: make([]Row, 2), Gold: []bool{false, false}}}
	ragged := []TrainQuery{{ID: "q7", IDs: []string{"a", "b"}, Rows: make([]Row, 1), Gold: []bool{true, false}}}
	cases := []struct {
		name string
		data []TrainQuery
		opts TrainOptions
		says string
	}{
		{"no gold anywhere", noGold, TrainOptions{}, "no question has both"},
		{"rows and IDs disagree", ragged, TrainOptions{}, "question q7: 2 IDs, 1 rows"},
		{"one leaf cannot rank", synthetic(1, 5), TrainOptions{Leaves: 1}, "leaves 1"},
		{"subsample above one", synthetic(1, 5), TrainOptions{Subsample: 1.5}, "subsample 1.5"},
		{"learning rate negative", synthetic(1, 5), TrainOptions{LearningRate: -1}, "learning rate -1"},
		// 5 pools of 20: 100 rows, and a split needs 100 a side. Every tree
		// was one leaf, and the model that scored every candidate 0 (chunk
		// IDs alone ordering the pool) was returned, and saved by the CLI.
		{"too few rows for any split", synthetic(1, 5), TrainOptions{}, "no tree found a split: 100 candidates in 5 questions"},
		{"features that separate nothing", []TrainQuery{{ID: "q1", IDs: []string{"a", "b", "c", "d"}, Rows: make([]Row, 4), Gold: []bool{true, false, false, false}}},
			TrainOptions{MinLeafRows: 1}, "no tree found a split"},
	}
	for _, c := range cases {
		if _, err := Train(c.data, c.opts); !errors.Is(err, ErrTrain) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrTrain saying %q", c.name, err, c.says)
		}
	}
}

// TestSmoothedAndIntBM25: each orders by its feature (BM25, and BM25 plus
// 0.3 × its neighbours' mean relative to the pool's best), exactly.
func TestSmoothedAndIntBM25(t *testing.T) {
	f := smallFake()
	q := "capital buffer records"
	cands := smallPool(f, "b/2", "a/2", "a/3", "c/1")
	rows := FeatureRows(q, cands, f)
	for _, c := range []struct {
		r   Reranker
		col int
	}{{IntBM25{}, 1}, {Smoothed{}, 12}} {
		got, err := c.r.Rerank(context.Background(), q, cands, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			i := slices.IndexFunc(cands, func(x Candidate) bool { return x.ID == g.ChunkID })
			if g.Score != rows[i][c.col] {
				t.Errorf("%s: %s scored %d, feature %s is %d", c.r.Name(), g.ChunkID, g.Score, FeatureNames[c.col], rows[i][c.col])
			}
		}
		t.Logf("%s: %v", c.r.Name(), got)
	}
	got, err := Smoothed{}.Rerank(context.Background(), q, cands, f)
	if err != nil {
		t.Fatal(err)
	}
	want := []evidence.Scored{{ChunkID: "b/2", Score: 1239211}, {ChunkID: "a/2", Score: 717658}, {ChunkID: "a/3", Score: 562586}, {ChunkID: "c/1", Score: 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

// TestScoreRowsIsScore: the row-set evaluation gives Score's sums for every
// row, in pools of every length up to 11 and across the 64-row words (64,
// 65, 130), with values drawn at random, equal to one of the model's
// thresholds, and one either side of one.
func TestScoreRowsIsScore(t *testing.T) {
	m, err := DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	const seed = 9
	t.Logf("row seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 64, 65, 130} {
		rows := make([]Row, n)
		for i := range rows {
			for k := range rows[i] {
				rows[i][k] = rng.Int64N(2*s) - s/10
				if cuts := m.cuts[k]; len(cuts) > 0 && rng.IntN(2) == 0 {
					rows[i][k] = cuts[rng.IntN(len(cuts))] + rng.Int64N(3) - 1
				}
			}
			rows[i][0] = int64(rng.IntN(50) + 1)
		}
		rows = append(rows, Row{}, Row{0: maxThreshold, 1: -maxThreshold})
		out := make([]int64, len(rows))
		m.ScoreRows(rows, out)
		for i := range rows {
			if want := m.Score(&rows[i]); out[i] != want {
				t.Fatalf("pool of %d, row %d: ScoreRows %d, Score %d", len(rows), i, out[i], want)
			}
		}
	}
}

// TestExactRunIsLongestCommonRun: the exact_run feature is the longest run
// of the question's terms found verbatim in the chunk (a longest common
// substring of the two term sequences), on random questions and chunks
// over a small vocabulary, repeated terms included.
func TestExactRunIsLongestCommonRun(t *testing.T) {
	const seed = 5
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	words := []string{"zork", "fnord", "blarg", "quux", "wibbl"}
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	longest := func(a, b []string) int64 {
		var best int64
		for i := range a {
			for j := range b {
				n := int64(0)
				for i+int(n) < len(a) && j+int(n) < len(b) && a[i+int(n)] == b[j+int(n)] {
					n++
				}
				best = max(best, n)
			}
		}
		return best
	}
	for range 500 {
		q := text(1 + rng.IntN(8))
		cands := []Candidate{{ID: "a", Text: text(rng.IntN(30)), Rank: 1}, {ID: "b", Text: text(rng.IntN(30)), Rank: 2}}
		rows := FeatureRows(q, cands, nil)
		for i, c := range cands {
			if want := longest(Terms(q), Terms(c.Text)); rows[i][9] != want {
				t.Fatalf("question %q, chunk %q: exact_run %d, want %d", q, c.Text, rows[i][9], want)
			}
		}
	}
}

// numberedDocs adds TermNumbers to a fakeDocs: term numbers given in order
// of first sight, spaced by step, so that with step 4096 every number
// shares its low bits with every other (the lookup's shared slots).
type numberedDocs struct {
	*fakeDocs
	num map[string]uint32
}

func numbered(f *fakeDocs, step uint32) *numberedDocs {
	n := &numberedDocs{fakeDocs: f, num: map[string]uint32{}}
	for _, id := range slices.Sorted(maps.Keys(f.terms)) {
		for _, t := range f.terms[id] {
			if _, ok := n.num[t]; !ok {
				n.num[t] = uint32(len(n.num))*step + 7
			}
		}
	}
	return n
}

func (n *numberedDocs) TermNumber(t string) (uint32, bool) {
	v, ok := n.num[t]
	return v, ok
}

func (n *numberedDocs) DocumentNumbers(id string) ([]string, [][]string, [][]uint32, int) {
	ids, ts, pos := n.Document(id)
	var nums [][]uint32
	for _, c := range ts {
		row := make([]uint32, len(c))
		for i, t := range c {
			row[i] = n.num[t]
		}
		nums = append(nums, row)
	}
	return ids, ts, nums, pos
}

// TestFeatureRowsByNumber: matching terms by number (TermNumbers, as the
// engine does) gives the rows that matching by string gives, whether the
// numbers' low bits are all distinct or all shared, and whether the
// candidates carry their stored terms, none, terms of their own, or their
// document's numbers alone (what DocumentTerms promises).
func TestFeatureRowsByNumber(t *testing.T) {
	f := smallFake()
	for _, q := range []string{"capital conservation buffer of common equity", "hold liquid assets", "records buffer capital", "boats"} {
		pool := smallPool(f, "a/3", "b/2", "a/2", "a/5", "c/1", "a/1")
		want := FeatureRows(q, pool, f)
		for _, step := range []uint32{1, 4096} {
			if diff := cmp.Diff(want, FeatureRows(q, pool, numbered(f, step))); diff != "" {
				t.Fatalf("%q, step %d:\n%s", q, step, diff)
			}
			bare := slices.Clone(pool)
			for i := range bare {
				bare[i].Terms = nil
			}
			if diff := cmp.Diff(want, FeatureRows(q, bare, numbered(f, step))); diff != "" {
				t.Fatalf("%q, step %d, no terms on the candidates:\n%s", q, step, diff)
			}
		}
		// A candidate carrying its document (as the engine hands it over)
		// gives the rows its Stats' lookup gives.
		for _, step := range []uint32{1, 4096} {
			nd := numbered(f, step)
			carried := slices.Clone(pool)
			for i := range carried {
				ids, ts, nums, pos := nd.DocumentNumbers(carried[i].ID)
				carried[i].Doc = &DocumentPlace{IDs: ids, Terms: ts, Nums: nums, Pos: pos}
			}
			if diff := cmp.Diff(want, FeatureRows(q, carried, nd)); diff != "" {
				t.Fatalf("%q, step %d, documents carried:\n%s", q, step, diff)
			}
			if diff := cmp.Diff(want, FeatureRows(q, carried, f)); diff != "" {
				t.Fatalf("%q, documents carried with numbers, Stats without:\n%s", q, diff)
			}
			// As the engine hands them to a DocumentTerms reranker: the
			// document's IDs and numbers, no terms, no text.
			numsOnly := slices.Clone(carried)
			for i := range numsOnly {
				d := *numsOnly[i].Doc
				d.Terms = nil
				numsOnly[i].Doc, numsOnly[i].Terms, numsOnly[i].Text = &d, nil, ""
			}
			if diff := cmp.Diff(want, FeatureRows(q, numsOnly, nd)); diff != "" {
				t.Fatalf("%q, step %d, numbers alone (DocumentTerms):\n%s", q, step, diff)
			}
		}
		// A candidate whose terms are not its stored ones is matched by
		// string, as without numbers.
		own := slices.Clone(pool)
		own[0].Terms = Terms("capital capital buffer")
		if diff := cmp.Diff(FeatureRows(q, own, f), FeatureRows(q, own, numbered(f, 4096))); diff != "" {
			t.Fatalf("%q, a candidate with terms of its own:\n%s", q, diff)
		}
	}
}

// TestFeatureRowsFromWindows: a candidate handed with a window of its
// document (DocumentPlace.Len) gets the rows the whole document gives, as
// long as the window holds WindowBefore chunks before it and WindowAfter
// after; a window short of that is no document (zero document features),
// never a read outside it.
func TestFeatureRowsFromWindows(t *testing.T) {
	// One long document of headings and paragraphs, so that a heading path
	// reaches back near WindowBefore, and a short one beside it.
	var docs [][2]string
	var order []string
	for i := range 40 {
		text := "the bank shall hold capital against its exposures and report the buffer"
		if i%7 == 0 {
			text = "capital buffer"
		}
		id := fmt.Sprintf("long/%02d", i)
		docs, order = append(docs, [2]string{id, text}), append(order, id)
	}
	docs, order = append(docs, [2]string{"short/0", "records kept five years"}), append(order, "short/0")
	nd := numbered(newFakeDocs(docs, order), 1)
	ids := []string{"long/00", "long/01", "long/17", "long/18", "long/20", "long/21", "long/39", "short/0"}
	pool := make([]Candidate, len(ids))
	for i, id := range ids {
		pool[i] = Candidate{ID: id, Rank: i + 1}
	}
	whole := slices.Clone(pool)
	for i := range whole {
		doc, _, nums, pos := nd.DocumentNumbers(whole[i].ID)
		whole[i].Doc = &DocumentPlace{IDs: doc, Nums: nums, Pos: pos}
	}
	const q = "capital buffer the bank must hold"
	want := FeatureRows(q, whole, nd)
	window := func(c Candidate, before, after int) Candidate {
		d := *c.Doc
		lo, hi := max(0, d.Pos-before), min(len(d.IDs), d.Pos+after+1)
		c.Doc = &DocumentPlace{IDs: d.IDs[lo:hi], Nums: d.Nums[lo:hi], Pos: d.Pos, Start: lo, Len: len(d.IDs), First: d.IDs[0]}
		return c
	}
	for _, tc := range []struct {
		name          string
		before, after int
	}{
		{"the least window", WindowBefore, WindowAfter},
		{"a wider one", WindowBefore + 5, WindowAfter + 3},
	} {
		got := slices.Clone(whole)
		for i := range got {
			got[i] = window(got[i], tc.before, tc.after)
		}
		if diff := cmp.Diff(want, FeatureRows(q, got, nd)); diff != "" {
			t.Fatalf("%s:\n%s", tc.name, diff)
		}
	}
	// Short windows: the candidate goes without its document, as one whose
	// Stats does not know it; the others are unchanged.
	none := slices.Clone(whole)
	none[4].Doc = &DocumentPlace{Pos: -1}
	wantNone := FeatureRows(q, none, nd)
	if slices.Equal(wantNone[4][:], want[4][:]) {
		t.Fatal("long/20 has no document features to lose: the case tests nothing")
	}
	for _, tc := range []struct {
		name          string
		before, after int
	}{
		{"one short before", WindowBefore - 1, WindowAfter},
		{"without the next chunk", WindowBefore, 0},
	} {
		got := slices.Clone(whole)
		got[4] = window(got[4], tc.before, tc.after)
		if diff := cmp.Diff(wantNone, FeatureRows(q, got, nd)); diff != "" {
			t.Fatalf("%s:\n%s", tc.name, diff)
		}
	}
	bad := slices.Clone(whole)
	d := *bad[4].Doc
	bad[4].Doc = &DocumentPlace{IDs: d.IDs, Nums: d.Nums, Pos: d.Pos, Start: 3, Len: len(d.IDs), First: d.IDs[0]}
	if diff := cmp.Diff(wantNone, FeatureRows(q, bad, nd)); diff != "" {
		t.Fatalf("a window past the document's end:\n%s", diff)
	}
}
