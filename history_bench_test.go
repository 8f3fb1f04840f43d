package evpack

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/state"
)

// BenchmarkHistoryMemory builds the in-memory state of an index of
// EVPACK_HISTORY_CHUNKS-like size (here 1,000,000 chunks, 40 words each from
// a Zipf vocabulary of 200,000 words, two tenants and the shared corpus)
// committed in 100 batches, and reports what it holds per chunk: the whole
// state, and the share the generation history costs (the per-tenant series
// of counts, digests and term frequencies, and the chunk -> generation map),
// against the same chunks committed in one batch. It also reports the time
// of one commit at the end (the state is copied on write). Run it alone:
//
//	go test . -run '^$' -bench HistoryMemory -benchtime 1x -timeout 30m
func BenchmarkHistoryMemory(b *testing.B) {
	const chunks, batches, words = 1_000_000, 100, 40
	rng := rand.New(rand.NewPCG(5, 5))
	zipf := rand.NewZipf(rng, 1.1, 2, 199_999)
	vocab := make([]string, 200_000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x", i)
	}
	all := make([]*evidence.Chunk, chunks)
	an := make([]state.Analyzed, chunks)
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range all {
		ws := make([]string, words)
		for j := range ws {
			ws[j] = vocab[zipf.Uint64()]
		}
		c := &evidence.Chunk{ID: fmt.Sprintf("c%07d", i), DocID: fmt.Sprintf("d%d", i/20), Text: strings.Join(ws, " "),
			SourceURL: "u", Connector: "c", RetrievedAt: at, Anchor: asof.Anchor{At: at, Field: "anchor"}, Tenant: []string{"", "acme", "globex"}[i%3]}
		c.ContentHash = c.ComputeHash()
		all[i] = c
		lex := append([]string(nil), ws...)
		an[i] = state.Analyzed{Lex: distinctSorted(lex), Tokens: words}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		base := heap()
		one, err := state.NewState().Extend(1, at, all, an, nil)
		if err != nil {
			b.Fatal(err)
		}
		oneBytes := heap() - base
		runtime.KeepAlive(one)
		one = nil

		base = heap()
		st := state.NewState()
		per := chunks / batches
		var last time.Duration
		for g := 0; g < batches; g++ {
			start := time.Now()
			if st, err = st.Extend(int64(g+1), at.Add(time.Duration(g)*time.Hour), all[g*per:(g+1)*per], an[g*per:(g+1)*per], nil); err != nil {
				b.Fatal(err)
			}
			last = time.Since(start)
		}
		manyBytes := heap() - base
		b.ReportMetric(float64(oneBytes)/chunks, "state-B/chunk-1batch")
		b.ReportMetric(float64(manyBytes)/chunks, "state-B/chunk-100batches")
		b.ReportMetric(float64(manyBytes-oneBytes)/chunks, "history-B/chunk")
		b.ReportMetric(float64(last.Milliseconds()), "last-commit-ms")
		runtime.KeepAlive(st)
	}
}

func distinctSorted(ws []string) []string {
	seen := map[string]bool{}
	out := ws[:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
