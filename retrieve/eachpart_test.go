package retrieve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
)

// monthsDocs returns one document in each of n partitions of a
// partitioned memory index (PartitionDays 30), a month apart, and the
// index.
func monthsDocs(t *testing.T, n int) (*Lexical, []Doc) {
	t.Helper()
	l, err := OpenLexical("", LexicalOptions{PartitionDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	docs := make([]Doc, n)
	for i := range docs {
		at := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 31*i)
		docs[i] = Doc{Chunk: &evidence.Chunk{ID: fmt.Sprintf("c%02d", i), Text: "text", Anchor: asof.Anchor{At: at, Field: "anchor"}}, Gen: 1}
	}
	if g := l.group(docs); len(g) != n {
		t.Fatalf("%d documents fell in %d partitions, want %d", n, len(g), n)
	}
	return l, docs
}

// barrier lets n calls through once all n have arrived, or fails them all
// when ctx ends first.
type barrier struct {
	mu      sync.Mutex
	arrived int
	n       int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.arrived++; b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d calls arrived: they do not run side by side", b.arrived, b.n)
	}
}

// TestEachPartSideBySide: a write's partitions are called side by side,
// batchesAtOnce at most: with more partitions than that, the first
// batchesAtOnce calls each wait until all of them are in (called one after
// the other, the first would wait for ever), and no more are ever in at
// once; every partition is called once.
func TestEachPartSideBySide(t *testing.T) {
	const n = batchesAtOnce + 4
	l, docs := monthsDocs(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBarrier(batchesAtOnce)
	var mu sync.Mutex
	in, most := 0, 0
	called := map[string]int{}
	err := l.eachPart(ctx, docs, func(p *part, ds []Doc) error {
		mu.Lock()
		in++
		most = max(most, in)
		called[p.key.dirName()] += len(ds)
		first := len(called) <= batchesAtOnce
		mu.Unlock()
		defer func() {
			mu.Lock()
			in--
			mu.Unlock()
		}()
		if first {
			return b.wait(ctx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if most != batchesAtOnce {
		t.Errorf("at most %d calls at once, want %d", most, batchesAtOnce)
	}
	if len(called) != n {
		t.Errorf("%d partitions called, want %d", len(called), n)
	}
	for k, c := range called {
		if c != 1 {
			t.Errorf("partition %s called with %d documents, want 1", k, c)
		}
	}
}

// TestEachPartFirstErrorInKeyOrder: when several partitions fail, the
// write's error is the first partition's in key order, whichever failed
// first; and every call started has returned when eachPart does.
func TestEachPartFirstErrorInKeyOrder(t *testing.T) {
	l, docs := monthsDocs(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	groups := l.group(docs)
	second, fourth := groups[1].key.dirName(), groups[3].key.dirName()
	fourthFailed := make(chan struct{})
	var mu sync.Mutex
	running := 0
	err := l.eachPart(ctx, docs, func(p *part, _ []Doc) error {
		mu.Lock()
		running++
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		switch p.key.dirName() {
		case second:
			select { // fails after the fourth
			case <-fourthFailed:
				return errors.New("second refused")
			case <-ctx.Done():
				return errors.New("the fourth was not called beside the second")
			}
		case fourth:
			defer close(fourthFailed)
			return errors.New("fourth refused")
		}
		return nil
	})
	if err == nil || err.Error() != "second refused" {
		t.Fatalf("error %v, want the second partition's", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if running != 0 {
		t.Errorf("%d calls still running after eachPart returned", running)
	}
}
