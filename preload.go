package evpack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/evpack/evpack/internal/storage"
)

// Preload reads into the operating system's page cache the files a query
// reads here and there, and returns how many bytes it read: the current
// checkpoint, the dense vectors and graph when the index keeps them, and
// every file of the lexical index. It returns once they are read.
//
// Open reads almost nothing, and a query then reads the pages it touches,
// each from the disk the first time when the page cache does not hold it
// (after a reboot, on a fresh machine): one wait per page. At a million
// chunks on this project's machine, that made a fresh process's first
// requests about three times slower than with the files cached; reading
// the files whole first took 1.0 to 1.2 s (docs/benchmarks.md, "Preload:
// a fresh machine's first requests"). A service calls Preload after Open,
// before it takes requests, when its index fits in memory beside
// everything else: what it reads stays in the page cache (not in the Go
// heap) until the kernel needs the memory.
//
// It skips the batch files, whose lines a query reads only for the chunks
// it cites, and it checks nothing: a query still checks each block of the
// checkpoint, and each chunk, the first time it reads it. It may run while
// queries and an ingest run; a file the lexical index drops meanwhile (a
// merge) is skipped. (On Windows a file open for reading cannot be
// deleted: there, call it before writes start.) An index in memory has
// nothing to read. It stops when ctx is done, returning what it had read
// and ctx's error, wrapped.
func (e *Engine) Preload(ctx context.Context) (int64, error) {
	paths, err := e.preloadPaths()
	if err != nil {
		return 0, err
	}
	return readPaths(ctx, paths)
}

// readPaths reads each file of paths through one buffer and returns the
// bytes read; a file gone since it was listed is skipped.
func readPaths(ctx context.Context, paths []string) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for _, path := range paths {
		m, err := readThrough(ctx, path, buf)
		n += m
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // dropped by a commit or a merge since it was listed
		case err != nil:
			return n, fmt.Errorf("evpack: preload %s: %w", path, err)
		}
	}
	return n, nil
}

// preloadPaths lists the files Preload reads, in a fixed order: the
// manifest's checkpoint and dense files, then the lexical index's files in
// lexical order.
func (e *Engine) preloadPaths() ([]string, error) {
	e.mu.RLock()
	closed := e.closed
	var m *storage.Manifest
	if !closed && e.store != nil {
		m = e.store.Manifest()
	}
	e.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case m == nil: // in memory
		return nil, nil
	}
	var paths []string
	if m.Checkpoint != "" {
		paths = append(paths, filepath.Join(e.dir, m.Checkpoint))
	}
	if m.Dense != nil {
		paths = append(paths, filepath.Join(e.dir, m.Dense.File))
		if m.Dense.Graph != "" {
			paths = append(paths, filepath.Join(e.dir, m.Dense.Graph))
		}
	}
	lexDir, err := filepath.EvalSymlinks(filepath.Join(e.dir, storage.LexicalDir)) // it may lie on another disk
	if err != nil {
		return nil, fmt.Errorf("evpack: preload: %w", err)
	}
	err = filepath.WalkDir(lexDir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && path != lexDir:
			return nil // a partition's segment merged away while listed
		case err != nil:
			return err
		case path != lexDir && strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return fs.SkipDir // a partition half made, or left by a crash: no query reads it
			}
		case d.Type().IsRegular():
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("evpack: preload: listing %s: %w", lexDir, err)
	}
	return paths, nil
}

// readThrough reads the file at path to its end through buf, checking ctx
// between reads, and returns how many bytes it read.
func readThrough(ctx context.Context, path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, errors.Join(err, fs.ErrNotExist) // replaced since it was listed: not the index's file
	}
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := f.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
