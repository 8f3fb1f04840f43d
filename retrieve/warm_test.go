package retrieve

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/evpack/evpack/asof"
)

// warmCorpus builds the partitioned test corpus (PartitionDays 30, four
// tenants and the shared one) on disk, closed, its catalog, and the same
// corpus in one bleve index: the reference every warmed search is compared
// with.
func warmCorpus(t *testing.T, seed uint64) (dir string, pc, one *pruneCorpus, cat []byte) {
	t.Helper()
	t.Logf("seed %d", seed)
	dir = filepath.Join(t.TempDir(), "lex")
	one = buildPruneCorpusWith(t, rand.New(rand.NewPCG(seed, 1)), LexicalOptions{Unpartitioned: true})
	pc = buildPruneCorpusAt(t, rand.New(rand.NewPCG(seed, 1)), dir, LexicalOptions{PartitionDays: 30})
	cat = pc.catalogOf(t)
	if err := pc.l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, pc, one, cat
}

// adopted opens dir deferred, warming if warm, and adopts cat at
// generation gen.
func adopted(t *testing.T, dir string, cat []byte, gen int64, warm bool) *Lexical {
	t.Helper()
	l, err := OpenLexical(dir, LexicalOptions{Deferred: true, Warm: warm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := l.Adopt(cat, gen, nil); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestWarmOpensTheTenantsRead: after a request, warming opens every
// partition of the tenants whose partitions that request opened, those it
// did not read included, and no other tenant's; requests on four
// goroutines while another tenant warms answer as one bleve index of the
// same corpus does (run with -race).
func TestWarmOpensTheTenantsRead(t *testing.T) {
	ctx := context.Background()
	dir, pc, one, cat := warmCorpus(t, 5)
	l := adopted(t, dir, cat, pc.gens, true)
	// An early day: most of acme's partitions start after it, and the
	// request reads none of them.
	e := Eligibility{Tenant: "acme", AsOf: asof.MustDate("2019-03-01")}
	read, err := l.selectParts(e, pc.bounds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Search(ctx, "capital market", e, pc.bounds, 10, pc.fullStats(e.Tenant, pc.upTo(e))); err != nil {
		t.Fatal(err)
	}
	l.WaitWarm()
	warm := map[string]bool{}
	for _, sp := range read {
		warm[sp.p.key.Tenant] = true
	}
	if unread := openAsWarmed(t, l, warm) - len(read); unread <= 0 {
		t.Fatalf("the request read %d partitions and warming opened no other", len(read))
	}

	// acme's and globex's requests on other days while globex warms.
	r := rand.New(rand.NewPCG(5, 2))
	type ask struct {
		text  string
		e     Eligibility
		stats BM25Stats
	}
	var asks []ask
	for len(asks) < 24 {
		text, e := pc.question(r), pc.eligibility(r)
		e.Tenant = []string{"acme", "globex"}[len(asks)%2]
		if s := pc.fullStats(e.Tenant, pc.upTo(e)); s.Docs > 0 {
			asks = append(asks, ask{text, e, s})
		}
	}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for g := range errs {
		wg.Go(func() {
			for i := g; i < len(asks); i += len(errs) {
				a := asks[i]
				want, err := one.l.Search(ctx, a.text, a.e, one.bounds, 10, a.stats)
				if err != nil {
					errs[g] = err
					return
				}
				got, err := l.Search(ctx, a.text, a.e, pc.bounds, 10, a.stats)
				if err != nil {
					errs[g] = err
					return
				}
				if !slices.Equal(got.Hits, want.Hits) {
					errs[g] = fmt.Errorf("request %d %q %+v: hits %v, one index's %v", i, a.text, a.e, got.Hits, want.Hits)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	l.WaitWarm()
	for _, a := range asks {
		sel, err := l.selectParts(a.e, pc.bounds)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range sel {
			warm[sp.p.key.Tenant] = true
		}
	}
	if !warm["globex"] {
		t.Fatal("no request read globex's partitions")
	}
	openAsWarmed(t, l, warm)
}

// openAsWarmed checks that the partitions of l open are those of the
// tenants in warm, and that some are not (the test could not tell warming
// a tenant from warming all); it returns how many are open.
func openAsWarmed(t *testing.T, l *Lexical, warm map[string]bool) (open int) {
	t.Helper()
	l.pmu.RLock()
	defer l.pmu.RUnlock()
	cold := 0
	for _, p := range l.parts {
		isOpen := p.idx != nil
		if isOpen != warm[p.key.Tenant] {
			t.Fatalf("partition %s of tenant %q: open %v, its tenant warmed %v", p.key.dirName(), p.key.Tenant, isOpen, warm[p.key.Tenant])
		}
		if isOpen {
			open++
		} else {
			cold++
		}
	}
	if cold == 0 {
		t.Fatalf("no partition cold (warmed: %v)", warm)
	}
	return open
}

// TestWarmStopsAtClose: Close while a tenant warms leaves no partition
// open: each can then be opened for writing at once (a handle warming
// opened after Close would hold its lock), and the index refuses
// requests.
func TestWarmStopsAtClose(t *testing.T) {
	ctx := context.Background()
	dir, pc, _, cat := warmCorpus(t, 7)
	for round := range 3 {
		l := adopted(t, dir, cat, pc.gens, true)
		e := Eligibility{Tenant: []string{"acme", "globex", "initech"}[round], AsOf: asof.MustDate("2022-06-01")}
		if _, err := l.Search(ctx, "capital market", e, pc.bounds, 10, pc.fullStats(e.Tenant, pc.upTo(e))); err != nil {
			t.Fatal(err)
		}
		l.pmu.RLock()
		parts := slices.Clone(l.parts)
		l.pmu.RUnlock()
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if _, err := l.Search(ctx, "capital", e, pc.bounds, 5, BM25Stats{}); !errors.Is(err, ErrLexicalClosed) {
			t.Fatalf("round %d: a search after Close: %v, want ErrLexicalClosed", round, err)
		}
		for _, p := range parts {
			idx, err := openBleve(filepath.Join(dir, p.key.dirName()), false, "20ms")
			if err != nil {
				t.Fatalf("round %d: partition %s after Close: %v", round, p.key.dirName(), err)
			}
			if err := idx.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWarmOrder: a tenant's partitions not yet opened, nearest the epoch
// its request read first, the earlier of two as near, and no other
// tenant's, nor one opened already.
func TestWarmOrder(t *testing.T) {
	var l Lexical
	mk := func(tenant string, epoch int64, state string) *part {
		p := &part{key: partKey{Tenant: tenant, Epoch: epoch}}
		switch state {
		case "cold":
			p.lazy = &lazyPart{}
		case "opened":
			p.lazy = &lazyPart{}
			p.lazy.done.Store(true)
		case "made": // made by a write: no catalog entry
		}
		return p
	}
	l.parts = []*part{
		mk("a", 1, "cold"), mk("a", 2, "cold"), mk("a", 3, "opened"), mk("a", 4, "cold"),
		mk("a", 5, "cold"), mk("a", 6, "made"), mk("a", 7, "cold"), mk("b", 4, "cold"),
	}
	var got []int64
	for _, p := range l.coldParts(warmTask{tenant: "a", near: 4}) {
		got = append(got, p.key.Epoch)
	}
	// Distances from 4: 4→0, 5→1, 2→2, 7→3, 1→3 (the earlier first).
	if want := []int64{4, 5, 2, 1, 7}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
