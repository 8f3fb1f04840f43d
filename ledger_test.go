package evpack

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/rerank"
)

// fakeModel scores by how many times the text mentions "retain", with a
// tie-break on length: a stand-in for a cross-encoder or an LLM, counting its
// calls and failing when "removed".
type fakeModel struct {
	calls   atomic.Int32
	removed atomic.Bool
	invert  atomic.Bool
}

func (m *fakeModel) score(_ context.Context, question string, texts []string) ([]float64, error) {
	m.calls.Add(1)
	if m.removed.Load() {
		return nil, errors.New("model file not found")
	}
	out := make([]float64, len(texts))
	for i, t := range texts {
		out[i] = float64(strings.Count(strings.ToLower(t), "retain")) + float64(len(t))/1e4
		if m.invert.Load() {
			out[i] = -out[i]
		}
	}
	return out, nil
}

func TestModelRerankerReplaysFromItsLedger(t *testing.T) {
	ctx := context.Background()
	m := &fakeModel{}
	ext, err := rerank.NewExternal("fake-cross-encoder@v1", m.score)
	require.NoError(t, err)
	dir := t.TempDir()
	e, err := Open(dir, Options{Reranker: ext})
	require.NoError(t, err)
	ingestCorpus(t, e)
	req := Request{Question: "How long must records be retained?", AsOf: asof.MustDate("2026-02-01")}
	p, err := e.Query(ctx, req)
	require.NoError(t, err)
	require.EqualValues(t, 1, m.calls.Load(), "one batched call for the whole pool, never one per pair")
	require.Equal(t, "false", p.Fingerprint.Get("reranker_bit_stable"))
	require.Equal(t, "external/fake-cross-encoder@v1", p.Fingerprint.Get("reranker"))
	require.NotEmpty(t, p.Ledger)
	require.Contains(t, string(p.Bytes()), `"ledger":[{"chunk_id":`)
	raw := p.Bytes()
	require.NoError(t, e.Close())

	// The model is gone; a later process replays the pack from its ledger.
	m.removed.Store(true)
	calls := m.calls.Load()
	e, err = Open(dir, Options{Reranker: ext})
	require.NoError(t, err)
	checked(t, e)
	rep, err := e.Replay(ctx, raw, false)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.Equal(t, rep.Hash, rep.ReplayHash)
	require.Equal(t, calls, m.calls.Load(), "replay never calls the model")
	v, err := e.Verify(ctx, raw)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)

	// With the model back, Replay can say whether a fresh run keeps the order.
	m.removed.Store(false)
	rep, err = e.Replay(ctx, raw, true)
	require.NoError(t, err)
	require.True(t, rep.ModelChecked && rep.ModelAgrees)
	m.invert.Store(true) // the model changed behind the same name
	rep, err = e.Replay(ctx, raw, true)
	require.NoError(t, err)
	require.True(t, rep.OK(), "the pack still replays from its ledger")
	require.True(t, rep.ModelChecked)
	require.False(t, rep.ModelAgrees, "a fresh run would reorder: reported, not hidden")

	m.removed.Store(true)
	rep, err = e.Replay(ctx, raw, true)
	require.NoError(t, err)
	require.False(t, rep.ModelChecked)
	require.Contains(t, strings.Join(rep.Problems, "\n"), "model file not found")
}

func TestBitStableRerankersCarryNoLedger(t *testing.T) {
	e := memEngine(t, Options{})
	ingestCorpus(t, e)
	p, err := e.Query(context.Background(), Request{Question: "retention", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Empty(t, p.Ledger)
	require.NotContains(t, string(p.Bytes()), `"ledger"`)
	require.Equal(t, "true", p.Fingerprint.Get("reranker_bit_stable"))
}

func TestExternalScorerContract(t *testing.T) {
	_, err := rerank.NewExternal("", nil)
	require.ErrorIs(t, err, rerank.ErrScorer)
	ext, err := rerank.NewExternal("m", func(context.Context, string, []string) ([]float64, error) { return []float64{1}, nil })
	require.NoError(t, err)
	_, err = OpenMemory(Options{Reranker: ext, Pool: 51})
	require.ErrorIs(t, err, ErrBadOptions, "an external scorer gets at most 50 candidates")
	e := memEngine(t, Options{Reranker: ext})
	ingestCorpus(t, e)
	_, err = e.Query(context.Background(), Request{Question: "retention records", AsOf: asof.MustDate("2026-02-01")})
	require.ErrorIs(t, err, rerank.ErrScorer, "one score for many candidates is refused")
}
