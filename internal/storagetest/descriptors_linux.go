package storagetest

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// ExhaustDescriptors plays a process out of file descriptors. use lowers
// the process's soft limit on open files to at most 512 and opens
// /dev/null until none is left, so that the next call that needs a
// descriptor fails with EMFILE while one that needs none (a rename) goes
// on: for a hook that lets one step through and fails the next. restore
// closes them and puts the limit back; it also runs at cleanup.
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
		low.Cur = min(lim.Cur, 512)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
			return err
		}
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				return nil // none left
			}
			filler = append(filler, f)
		}
	}
	return use, restore
}
