package retrieve

import (
	"math/rand/v2"
	"testing"
)

// dotRef is the plain definition the kernels must equal.
func dotRef(a, b []int8) int64 {
	var s int64
	for i := range a {
		s += int64(a[i]) * int64(b[i])
	}
	return s
}

// TestDotKernels: the SIMD kernel (where the CPU has one) and the portable
// one equal the plain sum at every length around their block sizes, at the
// extremes of int8 (-128·-128 is the largest product), and past the int32
// chunk bound, where a missed carry would show.
func TestDotKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(name string, a, b []int8) {
		t.Helper()
		want := dotRef(a, b)
		if got := Dot(a, b); got != want {
			t.Fatalf("%s, %d dims: Dot = %d, want %d", name, len(a), got, want)
		}
		if got := dotGeneric(a, b); got != want {
			t.Fatalf("%s, %d dims: dotGeneric = %d, want %d", name, len(a), got, want)
		}
	}
	for n := range 600 {
		a, b := make([]int8, n), make([]int8, n+3) // b may be longer
		for i := range b {
			b[i] = int8(rng.IntN(256) - 128)
			if i < n {
				a[i] = int8(rng.IntN(256) - 128)
			}
		}
		check("random", a, b)
		for i := range a {
			a[i], b[i] = -128, -128
		}
		check("all -128", a, b)
		for i := range a {
			a[i] = 127
		}
		check("127 by -128", a, b)
	}
	for _, n := range []int{dotChunk - 1, dotChunk, dotChunk + 33, 3*dotChunk + 100} {
		a, b := make([]int8, n), make([]int8, n)
		for i := range a {
			a[i], b[i] = -128, -128
		}
		check("all -128", a, b)
		for i := range a {
			a[i] = 127
		}
		check("127 by -128", a, b)
	}
}

// BenchmarkDot384 times one 384-d dot product: the kernel Dot dispatches to,
// the portable one, and the one before (graph_legacy_test.go).
//
//	go test ./retrieve -run '^$' -bench Dot384 -count 3
func BenchmarkDot384(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]int8, 384), make([]int8, 384)
	for i := range x {
		x[i], y[i] = int8(rng.IntN(256)-128), int8(rng.IntN(256)-128)
	}
	var s int64
	b.Run("dispatch", func(b *testing.B) {
		for b.Loop() {
			s += Dot(x, y)
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			s += dotGeneric(x, y)
		}
	})
	b.Run("old", func(b *testing.B) {
		for b.Loop() {
			s += legacyDot(x, y)
		}
	})
	_ = s
}
