package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	f, err := Encode(in)
	require.NoError(b, err)
	raw := f.Bytes()
	sum, err := Sum(raw)
	require.NoError(b, err)
	path := filepath.Join(b.TempDir(), "state.bin")
	require.NoError(b, os.WriteFile(path, raw, 0o644))
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		file, err := os.Open(path)
		require.NoError(b, err)
		_, tbl, ok, err := Decode("state.bin", file, sum, in.Identity, 4)
		file.Close()
		require.NoError(b, err)
		require.True(b, ok)
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
