package evpack

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

// hookCtx calls f at the at-th call of Err: a fixed point inside a long
// operation that checks its context, reached without timing.
type hookCtx struct {
	context.Context
	n  atomic.Int64
	at int64
	f  func()
}

func (c *hookCtx) Err() error {
	if c.n.Add(1) == c.at {
		c.f()
	}
	return c.Context.Err()
}

// closingReranker closes the engine the first time it ranks, then ranks
// as rerank.None: the Close lands between a query's lexical search and its
// reads of the cited chunks' rows and lines.
type closingReranker struct {
	rerank.None
	once  sync.Once
	close func()
}

func (r *closingReranker) Rerank(ctx context.Context, q string, cands []rerank.Candidate, st rerank.Stats) ([]evidence.Scored, error) {
	r.once.Do(r.close)
	return r.None.Rerank(ctx, q, cands, st)
}

// bitStableClosing is closingReranker as Verify runs it (a reranker
// Verify re-runs must be bit-stable).
type bitStableClosing struct{ closingReranker }

func (*bitStableClosing) BitStable() bool { return true }

// TestCloseDuringAQueryIsNotCorruption: a query or a Verify whose rows
// Close closed under it says ErrClosed; it said ErrCorrupt ("the state that
// read it is gone"), which tells a caller to repair an intact index. The
// index opens and answers afterwards.
func TestCloseDuringAQueryIsNotCorruption(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NotNil(t, e.st.Rows, "opened from the checkpoint, rows read through its mapping")
	v, err := e.View(Options{Reranker: &closingReranker{close: func() { require.NoError(t, e.Close()) }}})
	require.NoError(t, err)
	_, err = v.Query(context.Background(), reqs[0])
	require.ErrorIs(t, err, ErrClosed)

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	p, err := e.Query(context.Background(), reqs[0])
	require.NoError(t, err)
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())

	e, err = Open(dir, Options{})
	require.NoError(t, err)
	v, err = e.View(Options{Reranker: &bitStableClosing{closingReranker{close: func() { require.NoError(t, e.Close()) }}}})
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), p.Bytes())
	require.ErrorIs(t, err, ErrClosed)
}

// TestCloseDuringPreload: a Close that lands while Preload runs makes it
// ErrClosed, wherever it lands; it returned nil (what Close closed was
// skipped) or the lexical index's own "closed".
func TestCloseDuringPreload(t *testing.T) {
	dir := t.TempDir()
	lazyHistory(t, dir)
	for _, at := range []int64{1, 3, 40} { // Preload checks ctx over 100 times here
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		ctx := &hookCtx{Context: context.Background(), at: at}
		ctx.f = func() { require.NoError(t, e.Close()) }
		_, err = e.Preload(ctx)
		require.Greater(t, ctx.n.Load(), at, "Close landed inside Preload")
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Close at ctx.Err call %d: %v, want ErrClosed", at, err)
		}
	}
}
