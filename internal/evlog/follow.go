package evlog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Applied is a replica's audit row: what it held after applying a
// generation (the checksums of its MANIFEST.json and of its checkpoint).
type Applied struct {
	Replica       string
	Generation    int64
	ManifestSum   string
	CheckpointSum string
}

// Auditor is a log that keeps replicas' audit rows (the PostgreSQL log
// does). Contract: RecordApplied replaces a replica's row of a generation.
type Auditor interface {
	RecordApplied(ctx context.Context, a Applied) error
	// AppliedAt returns every replica's row of generation g, by replica.
	AppliedAt(ctx context.Context, g int64) ([]Applied, error)
}

// errDone stops a Read once the follower reached its target.
var errDone = errors.New("evlog: follow target reached")

// Follow calls apply with each entry of l after the follower's generation
// (applied, asked before every read: the follower may have moved), in
// order, and waits for more once it has applied the head. It returns nil
// once generation until (> 0) is applied, ctx's error when ctx is done
// (until 0: follow until stopped), and apply's first error otherwise.
// First it checks the follower's head against the log's (CheckHead):
// applied also returns the Sum of the follower's last entry. A follower
// already at until is checked against the log's entry of its generation,
// so that nil never answers one whose history forks from the log's.
func Follow(ctx context.Context, l Log, applied func() (int64, string), until int64, apply func(Entry) error) error {
	if err := CheckHead(ctx, l, applied); err != nil {
		return err
	}
	if at, sum := applied(); until > 0 && at >= until && at > 0 {
		// Nothing to apply, so no entry's Prev checks the follower's head
		// against the log's: read the log's entry at that generation.
		err := l.Read(ctx, at, func(e Entry) error {
			if e.Sum != sum {
				return fmt.Errorf("%w: the log's generation %d sums to %s, the index's to %s: the histories fork", ErrChain, at, e.Sum, sum)
			}
			return errDone
		})
		if errors.Is(err, errDone) {
			err = nil
		}
		return err
	}
	for {
		at, _ := applied()
		if until > 0 && at >= until {
			return nil
		}
		err := l.Read(ctx, at+1, func(e Entry) error {
			if until > 0 && e.Generation > until {
				return errDone
			}
			return apply(e)
		})
		switch {
		case errors.Is(err, errDone):
			return nil
		case err != nil: // ErrGap among them: a follower ahead of the log holds what the log does not
			return err
		}
		if at, _ = applied(); until > 0 && at >= until {
			return nil
		}
		if _, err := l.Wait(ctx, at); err != nil {
			return err
		}
	}
}

// CheckHead checks a follower's or a writer's history against l's before
// it reads or appends on: applied returns the generation it applied and
// that entry's Sum. ErrGap when the log ends before that generation (the
// index holds what the log lost), ErrChain when the log's head is that
// generation with another Sum (the histories fork there). A log whose head
// is past it is checked entry by entry as they are applied, each naming
// its Prev.
func CheckHead(ctx context.Context, l Log, applied func() (int64, string)) error {
	h, err := l.Head(ctx)
	at, sum := applied()
	switch {
	case err != nil:
		return err
	case h.Generation < at:
		return fmt.Errorf("%w: the log ends at generation %d, before the index's %d", ErrGap, h.Generation, at)
	case h.Generation == at && h.Sum != sum:
		return fmt.Errorf("%w: the log's generation %d sums to %s, the index's to %s: the histories fork", ErrChain, at, h.Sum, sum)
	}
	return nil
}

// Writer appends under a lease it holds: each append first renews the
// lease, so a writer whose lease passed to another (or lapsed) is refused
// with ErrStaleEpoch before the log changes.
type Writer struct {
	Log    Log
	Fence  Fence
	Holder string
	Epoch  int64
	Lease  time.Duration
}

// Append appends e under w's epoch.
func (w *Writer) Append(ctx context.Context, e Entry) error {
	if err := w.Fence.Renew(ctx, w.Epoch, w.Lease); err != nil {
		return err
	}
	e.Epoch = w.Epoch
	return w.Log.Append(ctx, e)
}
