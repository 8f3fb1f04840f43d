package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// synthetic returns an input of docs documents of 10 chunks each, over
// two tenants and a vocabulary of 5,000 terms, 30 terms a chunk, seeded:
// the shape of a filing corpus, without an engine.
func synthetic(docs int, seed uint64) Input {
	rng := rand.New(rand.NewPCG(seed, 1))
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("term%04d", i)
	}
	h := Head{Gen: 4, Commits: make([]time.Time, 4), Docs: int64(docs * 10), Bounds: retrieve.NewBounds()}
	for _, t := range []string{"acme", "globex"} {
		h.Bounds.Tenants[t] = docs * 5
		h.Tenants = append(h.Tenants, Tenant{Name: t, Docs: Series{{Gen: 1, N: int64(docs * 5)}}})
	}
	chunks := map[string]Chunk{}
	in := Input{Head: h, Identity: "lexical=bench", Names: names, Placed: docs * 10,
		Catalog: func() ([]byte, error) { return nil, nil }}
	for d := range docs {
		doc := Doc{Key: fmt.Sprintf("doc%07d", d)}
		tenant := []string{"acme", "globex"}[d%2]
		for c := range 10 {
			id := fmt.Sprintf("%s/0000%06d-26-%06d/part-%d", tenant, d, rng.IntN(1e6), c)
			nums := make([]uint32, 30)
			for k := range nums {
				nums[k] = uint32(rng.IntN(len(names)))
			}
			doc.IDs, doc.Nums = append(doc.IDs, id), append(doc.Nums, nums)
			chunks[id] = Chunk{Gen: int64(1 + d%4), Line: storage.Span{Off: int64(c * 500), Len: 500},
				Hash: blake3.Sum256([]byte(id)), Tenant: tenant, AnchorDay: int32(20000 + d), From: int32(20000 + d), To: NoDay}
		}
		in.Docs = append(in.Docs, doc)
	}
	in.Chunk = func(id string) Chunk { return chunks[id] }
	return in
}

// writeSynthetic encodes in into a file of its own, and returns the
// file's path, the checkpoint's sum and its bytes.
func writeSynthetic(tb testing.TB, in Input) (path, sum string, raw []byte) {
	tb.Helper()
	f, err := Encode(in)
	require.NoError(tb, err)
	raw = f.Bytes()
	sum, err = Sum(raw)
	require.NoError(tb, err)
	path = filepath.Join(tb.TempDir(), "state.bin")
	require.NoError(tb, os.WriteFile(path, raw, 0o644))
	return path, sum, raw
}

// decodeFile decodes the checkpoint of in that writeSynthetic wrote at
// path; the caller closes the table.
func decodeFile(tb testing.TB, path, sum string, in Input) *Table {
	tb.Helper()
	file, err := os.Open(path)
	require.NoError(tb, err)
	defer file.Close()
	_, tbl, ok, err := Decode("state.bin", file, sum, in.Identity, 4)
	require.NoError(tb, err)
	require.True(tb, ok)
	return tbl
}

// BenchmarkEncode encodes a checkpoint of 100,000 chunks.
func BenchmarkEncode(b *testing.B) {
	in := synthetic(10_000, 1)
	b.ResetTimer()
	for b.Loop() {
		f, err := Encode(in)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, part := range f {
			n += len(part)
		}
		b.SetBytes(int64(n))
	}
}

// BenchmarkDecode decodes a checkpoint of 100,000 chunks and reads every
// row, ID and term list once (every block checked), then finds every ID.
func BenchmarkDecode(b *testing.B) {
	in := synthetic(10_000, 1)
	path, sum, raw := writeSynthetic(b, in)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		tbl := decodeFile(b, path, sum, in)
		ids := make([]string, tbl.Len())
		for i := range tbl.Len() {
			w, _ := tbl.Row(i)
			ids[i], _ = tbl.ID(w)
			_, _ = tbl.Nums(w)
		}
		for i, id := range ids {
			if got, _, ok := tbl.Find(id); !ok || got != i {
				b.Fatalf("chunk %q: row %d, want %d", id, got, i)
			}
		}
		require.NoError(b, tbl.Close())
	}
}

// BenchmarkReadWindows reads a document's rows, IDs and terms (a request
// reads the chunks around a candidate; here a whole document of ten) from
// a checkpoint of 100,000 chunks whose blocks are all checked, two ways
// taking turns window by window: the table's reads row by row (Row, ID and
// Nums; how state's docRows read until issue 30's stop 71) and ReadRows
// (how they read since; until stop 73 it copied the terms too). It reports
// each way's time a window and their ratio; the windows are chosen at
// random (seed logged).
func BenchmarkReadWindows(b *testing.B) {
	in := synthetic(10_000, 1)
	path, sum, _ := writeSynthetic(b, in)
	tbl := decodeFile(b, path, sum, in)
	defer tbl.Close()
	require.NoError(b, tbl.CheckAll(context.Background()))

	byRow := func(first, n int) []string {
		ids, nums := make([]string, n), make([][]uint32, n)
		for k := range n {
			w, ok := tbl.Row(first + k)
			if ok {
				ids[k], ok = tbl.ID(w)
			}
			if ok {
				nums[k], ok = tbl.Nums(w)
			}
			if !ok {
				b.Fatalf("row %d: %v", first+k, tbl.Err())
			}
		}
		return ids
	}
	together := func(first, n int) []string {
		ids, nums, gens, ks := make([]string, n), make([][]uint32, n), make([]int64, n), make([]int, n)
		for k := range ks {
			ks[k] = k
		}
		if !tbl.ReadRows(first, ks, ids, nums, gens) {
			b.Fatalf("rows %d+%d: %v", first, n, tbl.Err())
		}
		return ids
	}

	const seed = 20261206
	b.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var took [2]time.Duration
	for i := 0; b.Loop(); i++ {
		e, ok := tbl.Doc(rng.IntN(tbl.Docs()))
		require.True(b, ok)
		var got [2][]string
		for turn := range 2 {
			way := (i + turn) % 2 // each way goes first every other window
			start := time.Now()
			if way == 0 {
				got[way] = byRow(e.First, e.Len)
			} else {
				got[way] = together(e.First, e.Len)
			}
			took[way] += time.Since(start)
		}
		if !slices.Equal(got[0], got[1]) {
			b.Fatalf("document %s: the two ways read %q and %q", e.Key, got[0], got[1])
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "byrow-ns/window")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "copyrows-ns/window")
	b.ReportMetric(float64(took[1])/float64(took[0]), "copyrows/byrow")
}
