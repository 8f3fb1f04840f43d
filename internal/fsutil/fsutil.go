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
	"path"
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

// IsTempOf reports whether file is a temp file WriteAtomic or WriteTemp
// makes of target (both paths with slashes, relative to one directory).
func IsTempOf(file, target string) bool {
	dir, base := path.Split(file)
	tdir, tbase := path.Split(target)
	return dir == tdir && IsTemp(base) && strings.HasPrefix(base, "."+tbase+tempInfix)
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
	tmp, err := WriteTemp(path, nil, data...)
	if err != nil {
		return err
	}
	return RenameHooked(tmp, path, beforeRename)
}

// ErrStopped is WriteTemp's error when its stop said to give up.
var ErrStopped = errors.New("stopped")

// WriteTemp writes the temp file of path (in its directory, named so that
// IsTemp knows it) as the slices of data one after the other, and fsyncs
// it: the first half of WriteAtomic, for a file written ahead of the
// commit that renames it into place (Rename). stop, when set, is
// asked between runs of writeBackEvery bytes: once it says true, the write
// gives up with ErrStopped. On error no temp file stays.
//
// It writes each run back as it goes (writeBack: see writeback_linux.go),
// so that a commit's fsync meanwhile waits for one run at most. Why: a
// large file synced once at its end left hundreds of megabytes for the
// kernel to write back at once, and every fsync made meanwhile waited for
// them: a checkpoint of a million chunks (332 MB) written beside commits
// made one of them take 125 ms, against 7 ms for the others.
func WriteTemp(path string, stop func() bool, data ...[]byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes 0600
		return fail(err)
	}
	var off int64 // where the run not yet written back starts
	unsynced := 0 // its length
	for _, part := range data {
		for len(part) > 0 {
			if unsynced == 0 && stop != nil && stop() {
				return fail(ErrStopped)
			}
			n := min(len(part), writeBackEvery-unsynced)
			if _, err := f.Write(part[:n]); err != nil {
				return fail(err)
			}
			part, unsynced = part[n:], unsynced+n
			if unsynced == writeBackEvery {
				if err := writeBack(f, off, unsynced); err != nil {
					return fail(err)
				}
				off, unsynced = off+int64(unsynced), 0
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return tmp, nil
}

// RenameHooked renames tmp, a synced temp file of WriteTemp, to path and
// makes the rename durable (an fsync of the directory), calling
// beforeRename first as WriteAtomicHooked does. When the rename fails tmp
// is removed; when the fsync fails the rename has happened, and path may
// hold either file after a power cut.
func RenameHooked(tmp, path string, beforeRename func(tmp string) error) error {
	if err := Rename(tmp, path, beforeRename); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Rename is RenameHooked without the fsync of the directory: the new name
// is durable only once the caller syncs the directory (SyncDir). For files
// whose names nothing depends on until a later step syncs their
// directories, once for all of them (a commit's files, before its
// manifest). On error tmp is removed.
func Rename(tmp, path string, beforeRename func(tmp string) error) error {
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
	return nil
}
