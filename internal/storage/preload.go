package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PreloadPaths lists the files a query reads here and there in the index
// directory dir whose manifest is m, in a fixed order: the checkpoint and
// the dense files, then the lexical index's files in lexical order, then
// the batch files in generation order, whose lines hold the texts a pack
// cites (Engine.Preload reads them). The batches come last, so that a
// Preload cut short by its context has read what every request reads
// first: they are the largest part, and a request reads a few lines of
// them.
func PreloadPaths(dir string, m *Manifest) ([]string, error) {
	var paths []string
	if m.Delta != "" {
		paths = append(paths, filepath.Join(dir, m.Delta))
	}
	if m.Checkpoint != "" {
		paths = append(paths, filepath.Join(dir, m.Checkpoint))
	}
	if m.Dense != nil {
		paths = append(paths, filepath.Join(dir, m.Dense.File))
		if m.Dense.Graph != "" {
			paths = append(paths, filepath.Join(dir, m.Dense.Graph))
		}
	}
	lexDir, err := filepath.EvalSymlinks(filepath.Join(dir, LexicalDir)) // it may lie on another disk
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
	for _, b := range m.Batches {
		paths = append(paths, filepath.Join(dir, ChunksDir, b.File))
	}
	return paths, nil
}

// ReadPaths reads each file of paths through one buffer and returns the
// bytes read; a file gone since it was listed is skipped.
func ReadPaths(ctx context.Context, paths []string) (int64, error) {
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

// readThrough reads the file at path to its end through buf, checking ctx
// between reads, and returns how many bytes it read.
func readThrough(ctx context.Context, path string, buf []byte) (int64, error) {
	// Checked before the open too: opening a FIFO put in a file's place
	// waits for a writer, whatever ctx says.
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return 0, errors.Join(err, fs.ErrNotExist)
	}
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
