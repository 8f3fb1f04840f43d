// Package fsutil writes and checks evpack's stored files: a crash leaves the
// old version or the new one, never a torn file (WriteAtomic), and a file
// that was truncated or corrupted anyway is refused before it is read (Seal,
// Unseal). Every stored format of evpack goes through it.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempInfix is what the name of every temp file WriteAtomic makes holds:
// the temp file of NAME is ".NAME.tmp-<random digits>".
const tempInfix = ".tmp-"

// IsTemp reports whether name (a base name) is that of a temp file
// WriteAtomic makes. Such a file is never committed data: a crash between
// its creation and its rename leaves it, holding what the interrupted
// write held (a batch's text, say), so recovery removes it.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	if !strings.HasPrefix(name, ".") || i < 2 {
		return false
	}
	rest := name[i+len(tempInfix):]
	if rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// RemoveTemps removes the temp files WriteAtomic left in dir (regular
// files only, not in subdirectories), then makes their removal durable
// (an fsync of dir), and returns the names it removed, sorted.
func RemoveTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var gone []string
	var errs []error
	for _, e := range entries { // ReadDir sorts by name
		if !e.Type().IsRegular() || !IsTemp(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, e.Name())
	}
	if len(gone) > 0 {
		errs = append(errs, SyncDir(dir))
	}
	return gone, errors.Join(errs...)
}

// SyncDir makes the entries of directory dir durable: the creations,
// renames and removals made in it before.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// WriteAtomic writes data to path so that a crash leaves either the old
// file or the new one: a temp file in the same directory, fsync, rename, then
// fsync of the directory so the rename itself is durable. The file is the
// slices of data one after the other (a large file need not be copied into
// one buffer first).
func WriteAtomic(path string, data ...[]byte) error {
	return WriteAtomicHooked(path, nil, data...)
}

// WriteAtomicHooked is WriteAtomic calling beforeRename, when it is not
// nil, with the temp file's path once the file is written and synced, just
// before the rename: for tests that stop a write there (a kill -9 leaves
// the temp file). An error it returns fails the write.
func WriteAtomicHooked(path string, beforeRename func(tmp string) error, data ...[]byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempInfix+"*")
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
	if beforeRename != nil {
		if err := beforeRename(tmp); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}
