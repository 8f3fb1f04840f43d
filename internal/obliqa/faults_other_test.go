//go:build !unix

package obliqa

// minorFaults returns -1: getrusage is Unix's.
func minorFaults() int64 { return -1 }
