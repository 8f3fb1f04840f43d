// Package testsize says how big evpack's long tests run. The README's test
// command (go test ./...) must pass in a few minutes on a busy 2-core
// machine, so by default the long tests (history properties, full-disk
// cases, ObliQA-wide runs) check every kind of case at lower counts. CI
// (.ci/run) sets EVPACK_LONG_TESTS=1, which runs them at full size.
package testsize

import "os"

// Env is the environment variable that asks for the full sizes.
const Env = "EVPACK_LONG_TESTS"

// Long reports whether Env is "1": run the long tests at full size.
func Long() bool { return os.Getenv(Env) == "1" }
