// Package par runs a request's independent reads side by side.
//
// Why a package of its own: a request that reads a partition or a chunk
// for the first time pays for its pages, its lists decoded, its rows found,
// and those reads depend on no other's. On a machine with cores to spare the
// request then waits for the slowest share instead of the sum
// (docs/benchmarks.md, issue 30, stop 81). What is read must not depend on
// how the work was shared out: Each returns the error of the lowest index,
// whichever finished first, and its callers write each result in its own slot.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls do(i) for each i in [0, n), on up to GOMAXPROCS goroutines
// (the caller's among them), and returns once every call has: nil, or the
// error of the lowest i whose call failed. Every call is made, failed or
// not, so that what each wrote in its slot can be closed.
//
// Invariant: the result depends on n and on what each do(i) returns, never
// on the order the calls ran in.
func Each(n int, do func(i int) error) error {
	errs := make([]error, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			errs[i] = do(i)
		}
		return first(errs)
	}
	var next atomic.Int64
	share := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			errs[i] = do(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(share)
	}
	share()
	wg.Wait()
	return first(errs)
}

// first returns the first error of errs that is not nil.
func first(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
