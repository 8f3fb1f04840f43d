package evpack

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFirstWriteReadiesPartitionsBeside: the first commit after Open
// reopens the partitions it writes for writing on a goroutine of
// retrieve.Lexical.Ready, beside the rest of the commit, not in the
// lexical write: those its new chunks fall in, and those of the stored
// chunks its facts index again (State.WrittenChunks); and what it commits
// is what a process that never closed commits.
func TestFirstWriteReadiesPartitionsBeside(t *testing.T) {
	for _, tc := range []struct {
		step int
		why  string
	}{{1, "new chunks"}, {2, "facts on stored chunks"}} {
		t.Run(partSteps()[tc.step].name, func(t *testing.T) { firstWriteReadies(t, tc.step, tc.why) })
	}
}

// firstWriteReadies runs the fixture's step n as the first commit after
// reopening an index of the steps before it.
func firstWriteReadies(t *testing.T, n int, why string) {
	ctx := context.Background()
	steps := partSteps()
	dir := filepath.Join(t.TempDir(), "idx")
	e := partIndex(t, dir, n)
	require.NoError(t, e.Close())
	e, err := Open(dir, Options{PartitionDays: partFixtureDays})
	require.NoError(t, err)
	checked(t, e)
	defer e.Close()

	// The batch file's write waits, before its rename, for a partition
	// to be reopened: a commit that reopened them in its lexical write,
	// after its files, would wait here until the watchdog fails it.
	reopened := make(chan struct{})
	var once sync.Once
	e.lex.Hooks.ReadOnlyClosed = func(string) { once.Do(func() { close(reopened) }) }
	e.store.Hooks.BeforeRename = func(tmp string) error {
		select {
		case <-reopened:
			return nil
		case <-time.After(time.Minute): // a watchdog, not a wait: Ready reopens them at once
			return fmt.Errorf("%s: no partition was reopened beside the commit's files (%s)", tmp, why)
		}
	}
	require.NoError(t, steps[n].run(ctx, e), steps[n].name)
	e.lex.Hooks.ReadOnlyClosed, e.store.Hooks.BeforeRename = nil, nil

	// The same steps in one process, never closed: the same packs.
	one := partIndex(t, filepath.Join(t.TempDir(), "one"), n+1)
	defer one.Close()
	want, got := partPacks(t, one), partPacks(t, e)
	require.Equal(t, len(want), len(got))
	for k, w := range want {
		require.Equal(t, string(w), string(got[k]), "pack %s", k)
	}
}
