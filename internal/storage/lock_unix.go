//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without blocking. flock locks belong
// to the open file description, so a second Open in the same process is
// refused as a second process would be (POSIX record locks would not be).
func tryLock(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// unlock releases the lock (closing the file would too).
func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
