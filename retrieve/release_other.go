//go:build !unix

package retrieve

import segment "github.com/blevesearch/scorch_segment_api/v2"

// releaseSegment does nothing where there is no madvise: the pages stay
// mapped until the segment is closed.
func releaseSegment(segment.Segment) {}
