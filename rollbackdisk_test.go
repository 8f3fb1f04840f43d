package evpack

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
)

// TestRollbackThatCannotBeWritten: a commit dies after bleve took its
// batch and before the manifest (the goroutine exits, as in a killed
// process), and then the rollback the next Open owes, which writes to
// bleve's files, cannot be written. Before the fix every Open, query and
// check failed until space was freed. Now the index opens at its last
// generation, read-only: queries give the packs they gave before the
// commit, Check runs and names the pending rollback, writes are refused
// with ErrReadOnly, and the record stays, so that an Open once there is
// room rolls the commit back.
//
// Two ways the rollback cannot be written: a full tmpfs (whether bbolt
// then needs a page it cannot get depends on its free list, which the dead
// process's last commits shape: when it finds room, the rollback is made
// and the index opens writable; either way it opens at its last
// generation), and, deterministically, bleve's directory remounted
// read-only.
func TestRollbackThatCannotBeWritten(t *testing.T) {
	for _, how := range []string{"full disk", "read-only lexical directory"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			mnt := mountTmpfs(t, 64<<20)
			dir := filepath.Join(mnt, "index")
			e, want := fullDiskIndex(t, dir, Options{})
			gen := e.st.Gen

			e.store.Hooks.BeforeManifest = func() error { runtime.Goexit(); return nil }
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.Ingest(ctx, connectors.Records(bigBatch()), IngestOptions{})
			}()
			<-done
			require.FileExists(t, filepath.Join(dir, storage.PendingName))
			above, err := e.lex.CountAbove(ctx, gen)
			require.NoError(t, err)
			require.Equal(t, uint64(len(bigBatch())), above, "bleve holds the dead commit's documents")
			// What the kernel does for a killed process: its files closed, its lock released.
			require.NoError(t, e.lex.Close())
			require.NoError(t, e.store.Close())

			var undo func()
			switch how {
			case "full disk":
				filler := fill(t, mnt, 0)
				undo = func() { require.NoError(t, os.Remove(filler)) }
			default:
				lexDir := filepath.Join(dir, storage.LexicalDir)
				require.NoError(t, syscall.Mount(lexDir, lexDir, "", syscall.MS_BIND, ""))
				require.NoError(t, syscall.Mount("", lexDir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
				undo = func() { require.NoError(t, syscall.Unmount(lexDir, 0)) }
			}
			e, err = Open(dir, Options{})
			require.NoError(t, err, "an index whose rollback cannot be written opens read-only")
			require.Equal(t, gen, e.st.Gen)
			require.Equal(t, want, packsFor(t, e), "queries answer as of the last generation")
			if e.readOnly == nil {
				require.Equal(t, "full disk", how, "the rollback was written on a read-only directory")
				t.Logf("bbolt found room for the rollback in its free pages: the index opened writable")
				require.NoError(t, e.Check())
				require.NoError(t, e.Close())
				undo()
				return
			}
			rep, err := e.CheckIndex(ctx)
			require.NoError(t, err)
			require.Len(t, rep.Problems, 1, "%q", rep.Problems)
			require.Contains(t, rep.Problems[0], "could not be rolled back")
			_, err = e.Ingest(ctx, connectors.Records(bigBatch()[:1]), IngestOptions{})
			require.ErrorIs(t, err, ErrReadOnly)
			require.ErrorIs(t, e.Merge(ctx), ErrReadOnly)
			_, err = e.Purge(ctx, []string{"big-00"}, "erasure")
			require.ErrorIs(t, err, ErrReadOnly)
			require.NoError(t, e.Close())
			require.FileExists(t, filepath.Join(dir, storage.PendingName), "the record stays for an Open with room")

			// Room again: the commit is rolled back, and the index takes the batch.
			undo()
			e, err = Open(dir, Options{})
			require.NoError(t, err)
			checked(t, e)
			require.Nil(t, e.readOnly)
			require.NoFileExists(t, filepath.Join(dir, storage.PendingName))
			require.Equal(t, want, packsFor(t, e))
			rep2, err := e.Ingest(ctx, connectors.Records(bigBatch()), IngestOptions{})
			require.NoError(t, err)
			require.Equal(t, len(bigBatch()), rep2.Added)
		})
	}
}
