//go:build unix

package retrieve

import (
	"syscall"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// releaseSegment hands back to the kernel the pages of s's file that the
// process holds mapped (zapx maps a segment's file whole, read-only and
// shared): the page cache keeps them, and a later read maps a page again.
// It does nothing for a segment that is not a zapx file. s must stay open
// until it returns: the caller holds a snapshot that holds it, so that
// the mapping is not unmapped, and its addresses not reused, meanwhile.
func releaseSegment(s segment.Segment) {
	if z, ok := s.(*zap.Segment); ok {
		if b := z.Data(); len(b) > 0 {
			_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // advice: every read is the same without it
		}
	}
}
