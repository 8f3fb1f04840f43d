package retrieve

// Adversarial tests of Lexical.Ready (a helper's review of stop 53).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evpack/evpack/evidence"
)

// panicInReopen opens a copy of tp's index and makes its reopen for
// writing panic once the read-only index is closed (the ReadOnlyClosed
// hook, where bleve's open for writing, e.g. bbolt on a damaged file, may
// panic), then makes the partition of chunk c writable, through Ready
// when ready, else through Index, and returns the index and the error.
func panicInReopen(t *testing.T, tp twoParts, ready bool) (*Lexical, Doc, error) {
	l, err := OpenLexical(tp.copyOf(t), LexicalOptions{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Adopt(tp.cat, 1, nil); err != nil {
		t.Fatal(err)
	}
	l.Hooks.ReadOnlyClosed = func(string) { panic("test: bleve panicked in the reopen") }
	c := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2)
	if ready {
		err = l.Ready([]*evidence.Chunk{c.Chunk})()
	} else {
		err = l.Index(context.Background(), []Doc{c})
	}
	l.Hooks.ReadOnlyClosed = nil
	return l, c, err
}

// TestReadyPanicRecovered: a panic in Ready's goroutine (in the
// reopen of the one partition it readies) must come back as Ready's error
// (ErrLexical, recoverBleve), not crash the process, and leave the index
// failed as a panic in Index's own reopen does (ErrLexicalFailed). The
// index is not closed here: see TestCloseAfterReopenPanic.
func TestReadyPanicRecovered(t *testing.T) {
	l, c, err := panicInReopen(t, makeTwoParts(t), true)
	if !errors.Is(err, ErrLexical) {
		t.Fatalf("Ready after a panic: %v, want ErrLexical", err)
	}
	if err := l.Index(context.Background(), []Doc{c}); !errors.Is(err, ErrLexicalFailed) {
		t.Fatalf("Index after Ready panicked: %v, want ErrLexicalFailed", err)
	}
}

// TestCloseAfterReopenPanic: once a reopen for writing panicked after
// closing the partition's read-only index (recovered: ErrLexical), Close
// must not close that index again: bleve's Scorch.Close panics with "close
// of closed channel" (the engine's Close, the process). Through Index as
// through Ready. It failed before reopen forgot the closed index at once.
func TestCloseAfterReopenPanic(t *testing.T) {
	tp := makeTwoParts(t)
	for _, ready := range []bool{true, false} {
		name := "index"
		if ready {
			name = "ready"
		}
		t.Run(name, func(t *testing.T) {
			l, _, err := panicInReopen(t, tp, ready)
			if !errors.Is(err, ErrLexical) {
				t.Fatalf("after a panic: %v, want ErrLexical", err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("Close after a recovered panic in the reopen panicked: %v", r)
					}
				}()
				_ = l.Close()
			}()
		})
	}
}

// TestReadyWaitTwice: the wait Ready returns may be called more
// than once (apply defers it and the lexical write calls it first): the
// second call must return the first's error at once, not block on the
// channel the goroutine sent on once.
func TestReadyWaitTwice(t *testing.T) {
	tp := makeTwoParts(t)
	l, err := OpenLexical(tp.copyOf(t), LexicalOptions{Deferred: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Adopt(tp.cat, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c := tp.doc("c", tp.jan.AddDate(0, 0, 1), 2)
	wait := l.Ready([]*evidence.Chunk{c.Chunk})
	first := wait()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case second := <-done:
		if !errors.Is(first, ErrLexicalClosed) || !errors.Is(second, ErrLexicalClosed) {
			t.Fatalf("Ready after Close: %v then %v, want ErrLexicalClosed twice", first, second)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second wait blocks")
	}
}
