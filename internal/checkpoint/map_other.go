//go:build !unix

package checkpoint

import "os"

// mapBody reads n bytes of f from off: a platform without mmap holds the
// body in memory.
func mapBody(f *os.File, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// unmapBody releases what mapBody read: the collector frees it.
func unmapBody([]byte) error { return nil }

// mapScratch makes n bytes on the heap: a platform without mmap has no
// memory outside it to offer.
func mapScratch(n int) ([]byte, error) { return make([]byte, n), nil }

// unmapScratch releases what mapScratch made: the collector frees it.
func unmapScratch([]byte) error { return nil }

// releasePages does nothing: the body is on the heap.
func releasePages([]byte) {}
