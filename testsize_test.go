package evpack

import (
	"testing"

	"github.com/evpack/evpack/internal/testsize"
)

// quick reports whether the long tests of this package run at their
// smaller sizes: under -short, or without EVPACK_LONG_TESTS=1, which CI
// (.ci/run) sets. The smaller sizes check the same kinds of case at lower
// counts, so that the README's go test ./... passes in minutes on a busy
// 2-core machine.
func quick() bool { return testing.Short() || !testsize.Long() }
