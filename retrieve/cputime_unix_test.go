//go:build unix

package retrieve

import "syscall"

// cpuSeconds is the CPU time this process has used, user and system: beside
// the wall time of a build it says how many cores the build had, on a
// machine shared with other work.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
