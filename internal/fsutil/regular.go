package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular: a path names something other than a regular file (a
// directory, a FIFO, a device).
var ErrNotRegular = errors.New("not a regular file")

// ReadRegular reads the regular file at path whole (a link to one is
// followed). Anything else is ErrNotRegular and is not read: opening a
// FIFO waits for a writer, and reading a device may never end.
func ReadRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() { // replaced since the Stat
		return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return io.ReadAll(f)
}
