package storage

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
)

// lockFile opens path and takes its lock, waiting at most wait. On success
// it records this process in the file so that a refused Open can name the
// holder.
func lockFile(path string, wait time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("evpack: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("evpack: lock %s: %w", path, err)
		}
		if !held {
			break
		}
		if !time.Now().Before(deadline) {
			holder, _ := os.ReadFile(path)
			f.Close()
			who := strings.TrimSpace(string(bytes.ToValidUTF8(holder, nil)))
			if who == "" {
				who = "another open of this index"
			}
			return nil, fmt.Errorf("%w: %s is held by %s (waited %s)", ErrLocked, path, who, wait)
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 100*time.Millisecond)
	}
	host, _ := os.Hostname()
	note := fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	// The note is advice for a person reading an ErrLocked; losing it in a
	// crash costs nothing, so it is not fsynced.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(note), 0)
	}
	return f, nil
}

// releaseLock clears the holder note and releases the lock.
func releaseLock(f *os.File) error {
	f.Truncate(0)
	err := unlock(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
