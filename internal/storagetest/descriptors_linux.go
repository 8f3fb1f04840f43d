package storagetest

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// ExhaustDescriptors plays a process out of file descriptors. use lowers
// the process's soft limit on open files to 3 and opens /dev/null into
// whichever of descriptors 0 to 2 are free, so that the next call that
// needs a descriptor fails with EMFILE while one that needs none (a
// rename) goes on: for a hook that lets one step through and fails the
// next. The limit sits below every descriptor the process already holds,
// because Linux hands out the lowest free one and refuses it only at or
// above the limit: a file that another goroutine (bleve's merger) closes
// in between frees a descriptor above the limit, which nobody can take.
// (Filling every descriptor up to a limit would let that close hand its
// slot to the very call the hook meant to fail.) restore closes the
// fillers and puts the limit back; it also runs at cleanup.
func ExhaustDescriptors(t testing.TB) (use func() error, restore func()) {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	var filler []*os.File
	restore = func() {
		for _, f := range filler {
			f.Close()
		}
		filler = nil
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	}
	t.Cleanup(restore)
	use = func() error {
		low := lim
		low.Cur = min(lim.Cur, 3)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
			return err
		}
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				return nil // none left below the limit
			}
			filler = append(filler, f)
		}
	}
	return use, restore
}
