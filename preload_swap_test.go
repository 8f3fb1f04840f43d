package evpack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPreloadBesideACommitIsNotCorruption: Preload "may run beside
// queries and ingests". A commit that replaces the state (a purge names a
// checkpoint; the old rows are closed) while Preload reads the files, and
// a query that was reading the old state meanwhile (it starts again on the
// new one), left the old checkpoint table marked "closed: the state that
// read it is gone", and Preload's check of it then returned ErrCorrupt for
// an intact index. It must return no error, and the index checks clean.
func TestPreloadBesideACommitIsNotCorruption(t *testing.T) {
	dir := t.TempDir()
	reqs := lazyHistory(t, dir)
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.NotNil(t, e.st.Rows, "opened from the checkpoint")
	ctx := context.Background()
	queried := false
	hook := &hookCtx{Context: ctx, at: 1}
	hook.f = func() {
		// A query on the state Preload read, whose reranker lets a purge
		// commit (and the old rows close) before it reads its citations.
		v, err := e.View(Options{Reranker: &closingReranker{close: func() {
			_, err := e.Purge(ctx, []string{"a-0001"}, "erasure request")
			require.NoError(t, err)
			e.retired.Wait() // the replaced state's rows are closed
		}}})
		require.NoError(t, err)
		_, err = v.Query(ctx, reqs[0])
		require.NoError(t, err, "the query starts again on the new state")
		queried = true
	}
	_, err = e.Preload(hook)
	require.True(t, queried)
	require.NoError(t, err, "Preload beside a commit on an intact index")
	require.NoError(t, e.Check())
}
