//go:build !amd64 || purego

package retrieve

// dotBlock is 0: no SIMD kernel here (build tag purego, or not amd64), Dot
// runs the portable one.
const dotBlock = 0

func dotSIMD(a, b []int8) int32 { panic("retrieve: no SIMD dot kernel") }

// prefetchRow does nothing here: a hint that only speeds up amd64.
func prefetchRow(v []int8, norm *int64) {}
