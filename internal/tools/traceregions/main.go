// Command traceregions splits the time of each user region of an execution
// trace into what the goroutine that opened it was doing (running, waiting
// for a core, blocked, in a system call), and names the other goroutines
// that ran meanwhile and for how long. BenchmarkReplicaQueries opens a
// region per query ("following-latest/replica", ...), so this says whether
// a replica's queries lose their time in their own work or waiting for a
// core that its applying, bleve's merges or the collector hold.
//
// It reads the text that `go tool trace -d=parsed` prints:
//
//	go tool trace -d=parsed trace.out | go run ./internal/tools/traceregions
//
// Each region's figures are averages per region, in milliseconds. A
// goroutine is named by the first function of the first stack seen for it
// outside the runtime and the sync packages.
package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	transition = regexp.MustCompile(`^M=\S+ P=\S+ G=-?\d+ StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)`)
	region     = regexp.MustCompile(`^M=\S+ P=\S+ G=(\d+) Region(Begin|End) Time=(\d+) .*Type="([^"]*)"`)
)

type span struct{ from, to int64 }

type regionRun struct {
	g        string
	name     string
	from, to int64
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "traceregions:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	states := map[string][]span{}  // goroutine -> running spans
	kinds := map[string][]string{} // goroutine -> state after each transition
	times := map[string][]int64{}  // goroutine -> transition times
	names := map[string]string{}
	since := map[string]int64{}
	open := map[string]regionRun{}
	var regions []regionRun
	needName := "" // a goroutine not named yet, whose stack lines follow
	var frames []string
	inOwn := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "M=") {
			// The goroutine's own stack is the transition's; the event's
			// (Stack=) is the goroutine that emitted it, its creator's
			// for a new one.
			switch t := strings.TrimSpace(line); {
			case t == "TransitionStack=":
				inOwn = true
			case t == "Stack=":
				inOwn = false
			default:
				if fn, _, ok := strings.Cut(t, " @ 0x"); ok && needName != "" && inOwn {
					frames = append(frames, fn)
				}
			}
			continue
		}
		inOwn = false
		if needName != "" && len(frames) > 0 {
			names[needName] = goroutineName(frames)
		}
		needName, frames = "", frames[:0]
		if m := region.FindStringSubmatch(line); m != nil {
			t, _ := strconv.ParseInt(m[3], 10, 64)
			if m[2] == "Begin" {
				open[m[1]] = regionRun{g: m[1], name: m[4], from: t}
			} else if r, ok := open[m[1]]; ok {
				r.to = t
				regions = append(regions, r)
				delete(open, m[1])
			}
			continue
		}
		m := transition.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		t, _ := strconv.ParseInt(m[1], 10, 64)
		g, from, to := m[2], m[3], m[4]
		if _, ok := names[g]; !ok {
			needName = g
		}
		times[g] = append(times[g], t)
		kinds[g] = append(kinds[g], to)
		if to == "Running" {
			since[g] = t
		} else if from == "Running" {
			if s, ok := since[g]; ok {
				states[g] = append(states[g], span{s, t})
				delete(since, g)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	type total struct {
		n      int
		by     map[string]int64 // own states
		others map[string]int64 // other goroutines' running time, by name
	}
	totals := map[string]*total{}
	for _, r := range regions {
		tt := totals[r.name]
		if tt == nil {
			tt = &total{by: map[string]int64{}, others: map[string]int64{}}
			totals[r.name] = tt
		}
		tt.n++
		tt.by["wall"] += r.to - r.from
		ts, ks := times[r.g], kinds[r.g]
		i, _ := slices.BinarySearch(ts, r.from+1)
		state, at := "Running", r.from
		if i > 0 {
			state = ks[i-1]
		}
		for ; i < len(ts) && ts[i] < r.to; i++ {
			tt.by[state] += ts[i] - at
			state, at = ks[i], ts[i]
		}
		tt.by[state] += r.to - at
		for g, spans := range states {
			if g == r.g {
				continue
			}
			j, _ := slices.BinarySearchFunc(spans, r.to, func(s span, t int64) int { return cmp.Compare(s.from, t) })
			for j--; j >= 0 && spans[j].to > r.from; j-- {
				if d := min(r.to, spans[j].to) - max(r.from, spans[j].from); d > 0 {
					tt.others[cmp.Or(names[g], "goroutine "+g)] += d
				}
			}
		}
	}
	keys := make([]string, 0, len(totals))
	for k := range totals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ms := func(ns int64, n int) float64 { return float64(ns) / float64(n) / 1e6 }
	for _, k := range keys {
		tt := totals[k]
		fmt.Fprintf(out, "%s: %d regions; ms each: wall %.3f, running %.3f, waiting for a core %.3f, blocked %.3f, in syscalls %.3f\n",
			k, tt.n, ms(tt.by["wall"], tt.n), ms(tt.by["Running"], tt.n), ms(tt.by["Runnable"], tt.n), ms(tt.by["Waiting"], tt.n), ms(tt.by["Syscall"], tt.n))
		type other struct {
			name string
			ns   int64
		}
		var os []other
		for name, ns := range tt.others {
			os = append(os, other{name, ns})
		}
		slices.SortFunc(os, func(a, b other) int { return cmp.Or(cmp.Compare(b.ns, a.ns), strings.Compare(a.name, b.name)) })
		for _, o := range os[:min(len(os), 8)] {
			fmt.Fprintf(out, "    %.3f  %s\n", ms(o.ns, tt.n), o.name)
		}
	}
	return nil
}

// goroutineName names a goroutine by the outermost frame of one of its
// stacks (innermost first) that is not the runtime's, the testing
// package's or the sync package's: the function it was started with, or
// the benchmark it serves. A goroutine of the runtime's own (a collector's
// worker) keeps its outermost frame.
func goroutineName(frames []string) string {
	for i := len(frames) - 1; i >= 0; i-- {
		if fn := frames[i]; !hasAnyPrefix(fn, "runtime.", "runtime/", "internal/", "sync.", "testing.") {
			return fn
		}
	}
	return frames[len(frames)-1]
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
