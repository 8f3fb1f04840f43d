package retrieve

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cachedColumns counts the columns l's open partitions hold, by segment
// and field, and fails unless every partition is open.
func cachedColumns(t *testing.T, l *Lexical) int {
	t.Helper()
	if open, all := l.Opened(); open != all {
		t.Fatalf("%d of %d partitions open", open, all)
	}
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	n := 0
	for _, p := range l.parts {
		p.cols.mu.Lock()
		for _, cols := range p.cols.segs {
			n += len(cols)
		}
		p.cols.mu.Unlock()
	}
	return n
}

// TestPreloadOpensEveryPartition: after Preload every partition of an
// index opened with its catalog is open, and each segment holds a column
// of every field the filter compares, so that requests on random days and
// tenants read no column more (the count stays), and they answer as one
// bleve index of the same corpus does.
func TestPreloadOpensEveryPartition(t *testing.T) {
	ctx := context.Background()
	dir, pc, one, cat := warmCorpus(t, 11)
	l := adopted(t, dir, cat, pc.gens, false)
	if open, all := l.Opened(); open != 0 || all < 8 {
		t.Fatalf("before Preload: %d of %d partitions open, want none of several", open, all)
	}
	if err := l.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	l.pmu.RLock()
	for _, p := range l.parts {
		snap := openSnapshot(t, p.idx)
		for _, ss := range snap.Segments() {
			for _, f := range columnFields {
				if _, ok := p.cols.segs[ss.Segment()][f]; !ok {
					t.Errorf("partition %s: a segment without its %s column", p.key.dirName(), f)
				}
			}
		}
		snap.Close()
	}
	l.pmu.RUnlock()
	before := cachedColumns(t, l)

	r := rand.New(rand.NewPCG(11, 2))
	for i := 0; i < 40; {
		text, e := pc.question(r), pc.eligibility(r) // pinned, readmitted, filtered among them
		stats := pc.fullStats(e.Tenant, pc.upTo(e))
		if stats.Docs == 0 {
			continue
		}
		i++
		want, err := one.l.Search(ctx, text, e, one.bounds, 10, stats)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Search(ctx, text, e, pc.bounds, 10, stats)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Hits, want.Hits) {
			t.Fatalf("request %d %q %+v: hits %v, one index's %v", i, text, e, got.Hits, want.Hits)
		}
	}
	if after := cachedColumns(t, l); after != before {
		t.Fatalf("requests after Preload read %d columns more", after-before)
	}
}

// TestPreloadGoesPastADamagedPartition: a partition whose root file is cut
// fails Preload with ErrDamaged, naming it, once every other partition is
// open; a done context stops Preload before it opens any.
func TestPreloadGoesPastADamagedPartition(t *testing.T) {
	dir, pc, _, cat := warmCorpus(t, 12)
	t.Run("done context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l := adopted(t, dir, cat, pc.gens, false)
		if err := l.Preload(ctx); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrLexical) {
			t.Fatalf("Preload: %v, want ErrLexical and context.Canceled", err)
		}
		if n, _ := l.Opened(); n != 0 {
			t.Fatalf("%d partitions opened after the context was done", n)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		l := adopted(t, dir, cat, pc.gens, false)
		l.pmu.RLock()
		victim := l.parts[len(l.parts)/2].dir
		l.pmu.RUnlock()
		if err := os.Truncate(filepath.Join(victim, "store", "root.bolt"), 0); err != nil {
			t.Fatal(err)
		}
		err := l.Preload(context.Background())
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("Preload: %v, want ErrDamaged", err)
		}
		if !strings.Contains(err.Error(), victim) {
			t.Fatalf("Preload: %v does not name %s", err, victim)
		}
		if open, all := l.Opened(); open != all-1 {
			t.Fatalf("%d of %d partitions open, want all but the damaged one", open, all)
		}
	})
}
