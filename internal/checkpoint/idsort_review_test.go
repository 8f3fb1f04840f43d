package checkpoint

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/internal/storage"
)

// reviewInput is a synthetic input of n chunks in documents of 1 to 5
// chunks, one tenant, no reranker terms: large enough that the ID sort
// makes several runs per pass (sortBetweenStops) and fill many runs.
func reviewInput(n int) Input {
	chunks := make(map[string]Chunk, n)
	var docs []Doc
	for i := 0; i < n; {
		d := Doc{Key: fmt.Sprintf("t\x00doc%07d\x00v1", len(docs))}
		for k := 0; k < 1+len(docs)%5 && i < n; k++ {
			id := fmt.Sprintf("c-%x-%d", (i*2654435761)&0xffff, i)
			d.IDs = append(d.IDs, id)
			d.Nums = append(d.Nums, nil)
			var h [32]byte
			binary.LittleEndian.PutUint64(h[:], uint64(i))
			chunks[id] = Chunk{Gen: 1, Line: storage.Span{Off: int64(i) * 100, Len: 99}, Hash: h, Tenant: "t", AnchorDay: NoDay, From: NoDay, To: NoDay}
			i++
		}
		docs = append(docs, d)
	}
	return Input{
		Head:     Head{Gen: 1, Commits: []time.Time{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Tenants: []Tenant{{Name: "t"}}},
		Identity: "lexical=review54",
		Docs:     docs,
		Placed:   n,
		Chunk:    func(id string) Chunk { return chunks[id] },
		Catalog:  func() ([]byte, error) { return []byte(`{}`), nil },
	}
}

// TestIDOrderIsTheComparisonSorts: the ID order section rows writes
// (radix sort) is the one the comparison sort it replaced gave: by idKey,
// then ID, over real idKeys of 200,000 chunks (several runs a pass).
func TestIDOrderIsTheComparisonSorts(t *testing.T) {
	in := reviewInput(3*sortBetweenStops + 1234)
	body, err := (&writer{}).rows(&in, []string{"t"}, nil, func() bool { return false })
	require.NoError(t, err)
	var ids []string
	for _, d := range in.Docs {
		ids = append(ids, d.IDs...)
	}
	byID := make([]uint32, len(ids))
	for i := range byID {
		byID[i] = uint32(i)
	}
	slices.SortFunc(byID, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(idKey(ids[a]), idKey(ids[b])), strings.Compare(ids[a], ids[b]))
	})
	want := make([]byte, 0, orderSize*len(byID))
	for _, r := range byID {
		want = binary.LittleEndian.AppendUint32(want, r)
		want = binary.LittleEndian.AppendUint64(want, idKey(ids[r]))
	}
	require.Equal(t, len(want), len(body[1]))
	require.True(t, slices.Equal(want, body[1]), "the ID order section differs from the comparison sort's")
}

// TestEncodeStopIsSticky: a stop that says true from its k-th
// question on (sticky, as Input.Stop's contract asks), for k across all
// the questions Encode asks (the sort's goroutine's included), makes Encode
// give up with ErrStopped, never return a file; asked and never told, it
// gives the reference bytes.
func TestEncodeStopIsSticky(t *testing.T) {
	in := reviewInput(sortBetweenStops + 5000)
	ref, err := Encode(in)
	require.NoError(t, err)
	var total atomic.Int64
	in.Stop = func() bool { total.Add(1); return false }
	f, err := Encode(in)
	require.NoError(t, err)
	require.Equal(t, ref.Bytes(), f.Bytes())
	q := total.Load()
	t.Logf("%d questions", q)
	require.Greater(t, q, int64(16*2)) // the sort's alone: 8 passes, 2 runs each, twice
	var ks []int64
	for k := int64(1); k <= min(q, 40); k++ {
		ks = append(ks, k)
	}
	for k := int64(41); k <= q+1; k += max(1, q/40) {
		ks = append(ks, k)
	}
	ks = append(ks, q, q+1)
	for _, k := range ks {
		var asked atomic.Int64
		in.Stop = func() bool { return asked.Add(1) >= k }
		f, err := Encode(in)
		if asked.Load() >= k {
			require.ErrorIs(t, err, ErrStopped, "stop true from question %d of %d", k, q)
			require.Nil(t, f)
		} else {
			require.NoError(t, err, "never told (k %d)", k)
			require.Equal(t, ref.Bytes(), f.Bytes(), "never told (k %d)", k)
		}
	}
}
