//go:build !unix

package retrieve

// cpuSeconds is 0 where getrusage is missing: the benchmarks then log 0
// cores.
func cpuSeconds() float64 { return 0 }
