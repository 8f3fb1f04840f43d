package main

import (
	"strings"
	"testing"
)

// A hand-made dump in go tool trace -d=parsed's form: goroutine 1 opens a
// region at 1 ms and closes it at 6 ms, having waited for a core from 2 to
// 4 ms; goroutine 7 (started as pkg.worker, its creator's stack beside)
// runs from 3 to 5 ms and again from 8 to 9 ms, outside the region.
const dump = `M=1 P=0 G=1 StateTransition Time=0 GoID=1 Undetermined->Running Reason=""
M=1 P=0 G=1 StateTransition Time=500000 GoID=7 NotExist->Runnable Reason=""
TransitionStack=
	pkg.worker @ 0x1
		/x.go:1

Stack=
	pkg.creator @ 0x2
		/x.go:2

M=1 P=0 G=1 RegionBegin Time=1000000 Task=0 Type="rows/replica"
M=1 P=0 G=1 StateTransition Time=2000000 GoID=1 Running->Runnable Reason="preempted"
Stack=
	runtime.asyncPreempt @ 0x3
		/r.go:1

M=2 P=1 G=7 StateTransition Time=3000000 GoID=7 Runnable->Running Reason=""
M=1 P=0 G=1 StateTransition Time=4000000 GoID=1 Runnable->Running Reason=""
M=2 P=1 G=7 StateTransition Time=5000000 GoID=7 Running->Waiting Reason="chan receive"
M=1 P=0 G=1 RegionEnd Time=6000000 Task=0 Type="rows/replica"
M=2 P=1 G=7 StateTransition Time=8000000 GoID=7 Waiting->Running Reason=""
M=2 P=1 G=7 StateTransition Time=9000000 GoID=7 Running->Waiting Reason=""
`

func TestSplitsARegion(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(dump), &out); err != nil {
		t.Fatal(err)
	}
	want := "rows/replica: 1 regions; ms each: wall 5.000, running 3.000, waiting for a core 2.000, blocked 0.000, in syscalls 0.000\n" +
		"    2.000  pkg.worker\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestGoroutineName(t *testing.T) {
	for _, c := range []struct {
		name, why string
		frames    []string
		want      string
	}{
		{"started function", "the outermost frame of one's own is the function it was started with",
			[]string{"runtime.gopark", "pkg.inner", "pkg.outer"}, "pkg.outer"},
		{"testing below", "a benchmark's goroutine is named by the benchmark, not testing's runner",
			[]string{"pkg.Query", "pkg.BenchmarkX", "testing.(*B).runN"}, "pkg.BenchmarkX"},
		{"runtime's own", "a collector's worker keeps its runtime name",
			[]string{"runtime.gopark", "runtime.gcBgMarkWorker"}, "runtime.gcBgMarkWorker"},
	} {
		if got := goroutineName(c.frames); got != c.want {
			t.Errorf("%s (%s): got %q, want %q", c.name, c.why, got, c.want)
		}
	}
}
