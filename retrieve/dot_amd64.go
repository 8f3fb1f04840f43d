//go:build !purego

package retrieve

import "golang.org/x/sys/cpu"

// dotBlock is the length multiple dotSIMD takes: 32 with AVX2, 0 (no SIMD
// kernel) without.
var dotBlock = func() int {
	if cpu.X86.HasAVX2 {
		return 32
	}
	return 0
}()

// dotSIMD returns the dot product of a and b, of equal length: a multiple of
// 32, at most dotChunk, so that the int32 lanes cannot overflow.
func dotSIMD(a, b []int8) int32 { return dotAVX2(&a[0], &b[0], len(a)) }

// dotAVX2 sign-extends 16 int8 to int16 at a time and multiplies and adds
// pairs into int32 lanes (VPMADDWD); n is a positive multiple of 32.
//
//go:noescape
func dotAVX2(a, b *int8, n int) int32

// prefetch asks the CPU to fetch p[:n] and the 8 bytes at norm into its
// caches ahead of use (n > 0).
//
//go:noescape
func prefetch(p *int8, n int, norm *int64)

// prefetchRow fetches vector v and its norm ahead: at scale each vector the
// build or a search compares is a cache miss, and misses issued together
// overlap instead of following one another.
func prefetchRow(v []int8, norm *int64) {
	if len(v) > 0 {
		prefetch(&v[0], len(v), norm)
	}
}
