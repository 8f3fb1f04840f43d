// Package fsutil writes and checks evpack's stored files: a crash leaves the
// old version or the new one, never a torn file (WriteAtomic), and a file
// that was truncated or corrupted anyway is refused before it is read (Seal,
// Unseal). Every stored format of evpack goes through it.
package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic writes data to path so that a crash leaves either the old
// file or the new one: a temp file in the same directory, fsync, rename, then
// fsync of the directory so the rename itself is durable. The file is the
// slices of data one after the other (a large file need not be copied into
// one buffer first).
func WriteAtomic(path string, data ...[]byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes 0600
		return fail(err)
	}
	for _, part := range data {
		if _, err := f.Write(part); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
