//go:build !unix

package storage

import (
	"fmt"
	"os"
	"runtime"
)

// tryLock refuses: evpack enforces one writer per index with flock, which
// this platform lacks, and an unlocked index could lose commits.
func tryLock(f *os.File) (bool, error) {
	return false, fmt.Errorf("storage: file locking is not implemented on %s; use an in-memory index", runtime.GOOS)
}

func unlock(f *os.File) error { return nil }
