package par

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestEachCallsEveryIndexOnce: each index once, whatever GOMAXPROCS.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS ", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for _, n := range []int{0, 1, 2, 3, 100} {
				calls := make([]atomic.Int32, n)
				if err := Each(n, func(i int) error { calls[i].Add(1); return nil }); err != nil {
					t.Fatalf("n %d: %v", n, err)
				}
				for i := range calls {
					if got := calls[i].Load(); got != 1 {
						t.Fatalf("n %d: index %d called %d times", n, i, got)
					}
				}
			}
		})
	}
}

// TestEachReturnsTheLowestIndexsError: index 7 fails first (index 3 waits
// for it to return), index 3 after; Each answers 3's error, and every
// index is still called.
func TestEachReturnsTheLowestIndexsError(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS ", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			err3, err7 := errors.New("three"), errors.New("seven")
			sevenDone := make(chan struct{})
			var called atomic.Int32
			err := Each(12, func(i int) error {
				called.Add(1)
				switch i {
				case 3:
					if procs > 1 { // sequential calls cannot wait for a later one
						<-sevenDone
					}
					return err3
				case 7:
					defer close(sevenDone)
					return err7
				}
				return nil
			})
			if err != err3 {
				t.Fatalf("Each: %v, want %v", err, err3)
			}
			if called.Load() != 12 {
				t.Fatalf("%d calls, want 12", called.Load())
			}
		})
	}
}
