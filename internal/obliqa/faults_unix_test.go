//go:build unix

package obliqa

import "syscall"

// minorFaults returns the page faults the process has taken that needed
// no read from disk (getrusage's ru_minflt): a fresh page of heap, or a
// file's page already in the page cache. Each costs a trap, about 10 µs on
// the machine docs/benchmarks.md was measured on (issue 30, stop 70).
func minorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return int64(ru.Minflt)
}
