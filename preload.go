package evpack

import (
	"context"

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
	return storage.ReadPaths(ctx, paths)
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
	return storage.PreloadPaths(e.dir, m)
}
