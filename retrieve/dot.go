package retrieve

// Dot is the exact similarity of two int8 vectors. b must be at least as
// long as a.
//
// It is the inner loop of every search and of the graph build, so it runs
// on SIMD where the CPU has it (dot_amd64.s). Integer addition is
// associative, so every kernel returns the same number: the order of the
// partial sums cannot change a result, on any CPU.
func Dot(a, b []int8) int64 {
	b = b[:len(a)]
	var t int64
	if dotBlock > 0 {
		for len(a) >= dotBlock {
			n := min(len(a)&^(dotBlock-1), dotChunk)
			t += int64(dotSIMD(a[:n], b[:n]))
			a, b = a[n:], b[n:]
		}
	}
	return t + dotGeneric(a, b)
}

// dotChunk bounds the elements one int32 partial sum takes: each product of
// two int8 is at most 128² = 2^14 in magnitude, so 2^16 of them sum to at
// most 2^30, which int32 holds.
const dotChunk = 1 << 16

// dotGeneric is the portable kernel: int32 partial sums over chunks of
// dotChunk (cheaper than int64 ones), eight products per step.
func dotGeneric(a, b []int8) int64 {
	b = b[:len(a)]
	var t int64
	for len(a) >= 8 {
		n := min(len(a)&^7, dotChunk)
		x, y := a[:n], b[:n]
		var s0, s1, s2, s3 int32
		for len(x) >= 8 {
			p, q := (*[8]int8)(x), (*[8]int8)(y)
			s0 += int32(p[0])*int32(q[0]) + int32(p[4])*int32(q[4])
			s1 += int32(p[1])*int32(q[1]) + int32(p[5])*int32(q[5])
			s2 += int32(p[2])*int32(q[2]) + int32(p[6])*int32(q[6])
			s3 += int32(p[3])*int32(q[3]) + int32(p[7])*int32(q[7])
			x, y = x[8:], y[8:]
		}
		t += int64(s0) + int64(s1) + int64(s2) + int64(s3)
		a, b = a[n:], b[n:]
	}
	for i := range a {
		t += int64(a[i]) * int64(b[i])
	}
	return t
}
