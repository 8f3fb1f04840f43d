package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/fuse"
	"github.com/evpack/evpack/rerank"
	"github.com/stretchr/testify/require"
)

// fakeState is a State held in maps: the chunks a scope holds, the chunks
// whose stored text fails to read, and the chunk a fact retired. Like every
// State, it is safe for concurrent use.
type fakeState struct {
	chunks  map[string]*evidence.Chunk
	failing []string // Text fails for these
	retired string   // Entry excludes it
	lateErr error    // Err returns it

	mu    sync.Mutex
	texts []string // the IDs whose text was read, in the order read
}

func (f *fakeState) Stats() rerank.Stats                       { return fakeStats{} }
func (f *fakeState) Place(string) (rerank.DocumentPlace, bool) { return rerank.DocumentPlace{}, false }
func (f *fakeState) Terms([]uint32) []string                   { return nil }
func (f *fakeState) Err() error                                { return f.lateErr }

func (f *fakeState) Text(id string) (string, bool, error) {
	f.mu.Lock()
	f.texts = append(f.texts, id)
	f.mu.Unlock()
	if slices.Contains(f.failing, id) {
		return "", false, fmt.Errorf("the block of %s fails its check", id)
	}
	c, ok := f.chunks[id]
	if !ok {
		return "", false, nil
	}
	return c.Text, true, nil
}

func (f *fakeState) Entry(id string, _ asof.Date, _ bool) (evidence.Entry, bool, error) {
	c, ok := f.chunks[id]
	if !ok {
		return evidence.Entry{}, false, nil
	}
	en := evidence.Entry{Chunk: c, Verified: true}
	if id == f.retired {
		en.Excluded = "superseded by x on 2024-01-01"
	}
	return en, true, nil
}

type fakeStats struct{}

func (fakeStats) DocCount() int      { return 4 }
func (fakeStats) DocFreq(string) int { return 1 }

// byText ranks candidates by their text, longest first (ties by ID): a
// reranker that reads text, so the pipeline must hand it over.
type byText struct{ add string }

func (byText) Name() string    { return "by-text" }
func (byText) BitStable() bool { return true }
func (r byText) Rerank(_ context.Context, _ string, cands []rerank.Candidate, _ rerank.Stats) ([]evidence.Scored, error) {
	out := make([]evidence.Scored, 0, len(cands)+1)
	for _, c := range cands {
		out = append(out, evidence.Scored{ChunkID: c.ID, Score: int64(len(c.Text))})
	}
	for i := 1; i < len(out); i++ { // insertion sort: score down, then ID
		for j := i; j > 0 && (out[j].Score > out[j-1].Score || out[j].Score == out[j-1].Score && out[j].ChunkID < out[j-1].ChunkID); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if r.add != "" {
		out = append(out, evidence.Scored{ChunkID: r.add})
	}
	return out, nil
}

func chunk(t *testing.T, id, text string) *evidence.Chunk {
	t.Helper()
	c := &evidence.Chunk{ID: id, DocID: "doc", Version: "1", Text: text, SourceURL: "https://example.test/" + id,
		Connector: "test", RetrievedAt: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC),
		Anchor: asof.Anchor{At: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), Field: "published"}}
	require.NoError(t, c.Prepare())
	return c
}

func fixture(t *testing.T) (Input, *fakeState) {
	st := &fakeState{chunks: map[string]*evidence.Chunk{
		"a": chunk(t, "a", "short"),
		"b": chunk(t, "b", "a much longer text"),
		"c": chunk(t, "c", "medium text"),
		"d": chunk(t, "d", "the longest text of all of them"),
	}}
	in := Input{
		Header: evidence.Header{Question: "q", AsOf: asof.MustDate("2024-06-01"), K: 2},
		Text:   "q",
		// RRF (k 60, weights 1): a 1/61+1/62, b 1/62+1/61, c 1/63, d 1/64;
		// a and b tie and the tie goes to the smaller ID.
		Lists:       []fuse.List{{Name: "lexical", Weight: 1, IDs: []string{"a", "b", "c", "d"}}, {Name: "dense", Weight: 1, IDs: []string{"b", "a"}}},
		Steps:       []string{"lexical: kept 4", "dense: kept 2"},
		RRFK:        60,
		Fusion:      "rrf k=60",
		Pool:        3,
		Reranker:    byText{},
		Fingerprint: evidence.Fingerprint{{Key: "reranker", Value: "by-text"}},
	}
	return in, st
}

// TestRankWithAFakeState runs the stage on a state held in maps and checks
// the pack exactly: the pool is the first three fused (d never reaches the
// reranker, nor is its text read), the reranker's order by text length, the
// gate drops the chunk a fact retired, and K cuts what is left.
func TestRankWithAFakeState(t *testing.T) {
	in, st := fixture(t)
	st.retired = "b"
	p, err := Rank(context.Background(), in, st)
	require.NoError(t, err)
	var ids []string
	for _, c := range p.Citations {
		ids = append(ids, c.ChunkID)
	}
	require.Equal(t, []string{"c", "a"}, ids, "b (longest in the pool) was retired; d never entered the pool")
	slices.Sort(st.texts) // read side by side, in no order
	require.Equal(t, []string{"a", "b", "c"}, st.texts, "the texts of the pool, each once, and no more")
	require.Equal(t, []string{"lexical: kept 4", "dense: kept 2", "fused 3 (rrf k=60)", "pool 3", "reranked 3"}, p.Trace.Steps[:5])
	require.Len(t, p.Trace.Dropped, 1)
	require.Equal(t, "b", p.Trace.Dropped[0].ChunkID)
	require.Nil(t, p.Ledger, "a bit-stable reranker's scores are not recorded")
	require.Equal(t, in.Steps, []string{"lexical: kept 4", "dense: kept 2"}, "the input's steps are not changed")
}

// TestRankRefuses: a reranker that adds a chunk to its pool, a read that
// fails, and a late read error each give an error, never a pack.
func TestRankRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(in *Input, st *fakeState)
		want   error
		read   bool // a *ReadError
	}{
		{"a reranker that adds another tenant's chunk", func(in *Input, _ *fakeState) { in.Reranker = byText{add: "acme-secret"} }, rerank.ErrNotPermutation, false},
		{"a stored text that cannot be read", func(_ *Input, st *fakeState) { st.failing = []string{"c"} }, nil, true},
		{"a checkpoint block that failed after the reads", func(_ *Input, st *fakeState) { st.lateErr = errors.New("block 7 fails its check") }, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, st := fixture(t)
			tc.change(&in, st)
			p, err := Rank(context.Background(), in, st)
			require.Nil(t, p)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			var re *ReadError
			require.Equal(t, tc.read, errors.As(err, &re), "%v", err)
		})
	}
}

// TestRankReadErrorIsTheFirstInThePool: the pool's texts are read side
// by side; when two fail, the error is the first's in pool order (a, then
// c), whichever read failed first, at every GOMAXPROCS.
func TestRankReadErrorIsTheFirstInThePool(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS ", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for range 50 {
				in, st := fixture(t)
				st.failing = []string{"c", "a"}
				_, err := Rank(context.Background(), in, st)
				var re *ReadError
				require.ErrorAs(t, err, &re)
				require.EqualError(t, re.Err, "the block of a fails its check")
			}
		})
	}
}

// TestRankBoostCutsAfter: a boost reorders the fused list before the pool
// is cut, and its line follows the fusion's in the trace.
func TestRankBoostCutsAfter(t *testing.T) {
	in, st := fixture(t)
	in.Pool = 1
	in.Boost = func(fused []fuse.Item) (string, error) {
		fused[0], fused[3] = fused[3], fused[0] // d first
		return "boosted d", nil
	}
	p, err := Rank(context.Background(), in, st)
	require.NoError(t, err)
	require.Equal(t, "d", p.Citations[0].ChunkID)
	require.Len(t, p.Citations, 1)
	require.Equal(t, []string{"fused 1 (rrf k=60)", "boosted d", "pool 1"}, p.Trace.Steps[2:5])
}
