package evpack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/audit"
	"github.com/evpack/evpack/internal/evlog"
	"github.com/evpack/evpack/internal/pglog"
	"github.com/evpack/evpack/internal/state"
)

// Past one machine, an index's history is kept in a shared log (PostgreSQL:
// OpenPostgresLog). One engine leads (Lead): each commit is appended to the
// log under its lease, then applied. Any number of engines follow (Follow):
// each applies the log's entries through the same path, so their
// MANIFEST.json, batch files, checkpoints and packs equal the writer's.

// Log is a shared history of an index: its entries and the writer's lease.
type Log interface {
	evlog.Log
	evlog.Fence
}

// PostgresLog is the log kept in PostgreSQL (schema evpack-pglog/1; see
// docs/design.md §9 for the server settings that make an append durable on a
// standby too).
type PostgresLog = pglog.Log

// OpenPostgresLog connects to the database dsn names and creates the log's
// tables there when it has none.
func OpenPostgresLog(ctx context.Context, dsn string) (*PostgresLog, error) {
	return pglog.Open(ctx, dsn)
}

// Lead makes e the writer of log: it takes holder's lease (ErrLeaseHeld
// while another writer's is live), applies the entries e lacks, and from
// then on each Ingest and Purge appends its entry to log, under the lease,
// before applying it. A writer whose lease passed to another gets ErrFenced
// and writes nothing, anywhere.
func (e *Engine) Lead(ctx context.Context, log Log, holder string, lease time.Duration) error {
	switch {
	case e.store == nil:
		return fmt.Errorf("%w: an index in memory cannot lead a log", ErrBadOptions)
	case holder == "" || !evidence.Plain(holder) || lease <= 0:
		return fmt.Errorf("%w: lead needs a holder of UTF-8 without control characters and a positive lease (%q, %s)", ErrBadOptions, holder, lease)
	}
	epoch, err := log.Acquire(ctx, holder, lease)
	if err != nil {
		return fmt.Errorf("evpack: lead %s: %w", holder, err)
	}
	// Follow first checks e's head against the log's. Until 0: for ever.
	head, err := log.Head(ctx)
	if err == nil && max(head.Generation, e.AppliedGeneration()) > 0 {
		err = e.Follow(ctx, log, FollowOptions{Until: max(head.Generation, 1)})
	}
	if err != nil { // the lease given back: another writer need not wait it out
		return errors.Join(fmt.Errorf("evpack: lead %s: catching up to the log: %w", holder, err), log.Release(ctx, epoch))
	}
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	e.writer = &evlog.Writer{Log: log, Fence: log, Holder: holder, Epoch: epoch, Lease: lease}
	return nil
}

// FollowOptions say how far Follow goes and how it signs its work.
type FollowOptions struct {
	// Until, when > 0, returns once generation Until is applied; 0 follows
	// until ctx is done.
	Until int64
	// Replica names this replica in the log's audit rows after each
	// generation it applies ("": none recorded): UTF-8 without control
	// characters.
	Replica string
}

// Follow applies log's entries after e's generation, in order, through the
// path the writer applied them by, and waits for more (see FollowOptions).
// A log that parts from e's history (another index's, rewritten, cut short,
// a body not as committed) stops it with ErrCorrupt: nothing is repaired.
// It returns ctx's error when ctx ends it, and ErrClosed when e is closed
// (it applies nothing more).
func (e *Engine) Follow(ctx context.Context, log Log, o FollowOptions) error {
	switch {
	case e.store == nil:
		return fmt.Errorf("%w: an index in memory cannot follow a log", ErrBadOptions)
	case o.Until < 0:
		return fmt.Errorf("%w: follow until generation %d < 0", ErrBadOptions, o.Until)
	case !evidence.Plain(o.Replica):
		return fmt.Errorf("%w: replica name %q: want UTF-8 without control characters", ErrBadOptions, o.Replica)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // Close ends a wait for the log's next entry
		select {
		case <-e.done:
			cancel(ErrClosed)
		case <-ctx.Done():
		}
	}()
	auditor, _ := log.(evlog.Auditor)
	err := evlog.Follow(ctx, log, e.appliedHead, o.Until, func(en evlog.Entry) error {
		if err := e.applyEntry(ctx, en.Body, en.Sum); err != nil {
			if errors.Is(err, evlog.ErrGap) && e.appliedAs(en.Generation, en.Sum) {
				return nil // another Follow of e applied it since this one read its generation
			}
			return fmt.Errorf("evpack: follow: generation %d: %w", en.Generation, err)
		}
		if auditor == nil || o.Replica == "" {
			return nil
		}
		return audit.RecordApplied(ctx, auditor, o.Replica, en.Generation, e.dir, e.store.Manifest())
	})
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrClosed):
		return fmt.Errorf("evpack: follow: %w", ErrClosed)
	case !errors.Is(err, ErrCorrupt) && (errors.Is(err, evlog.ErrGap) || errors.Is(err, evlog.ErrChain)):
		return fmt.Errorf("%w: evpack: follow: %w", ErrCorrupt, err)
	}
	return err
}

// appliedAs reports whether e has applied generation g, as the log entry
// whose Sum is sum.
func (e *Engine) appliedAs(g int64, sum string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return g <= e.st.Gen && e.store.Manifest().Committed(g, sum)
}

// AppliedGeneration returns the latest generation e has applied.
func (e *Engine) AppliedGeneration() int64 { gen, _ := e.appliedHead(); return gen }

// appliedHead returns e's generation and its chain sum: its log entry's Sum.
func (e *Engine) appliedHead() (int64, string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.st.Gen, e.store.Manifest().ChainHead() // "" in memory
}

// awaitGeneration waits until e has applied generation min, or ctx is done
// (ErrBehind), or e stops (ErrBroken: it applies nothing more until it is
// reopened, so a waiter has nothing to wait for).
func (e *Engine) awaitGeneration(ctx context.Context, min int64) error {
	for {
		e.mu.RLock()
		gen, advanced, closed, broken := e.st.Gen, e.advanced, e.closed, e.broken
		e.mu.RUnlock()
		switch {
		case closed:
			return ErrClosed
		case broken != nil:
			return broken
		case gen >= min:
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return fmt.Errorf("%w: generation %d asked, %d applied: %w", ErrBehind, min, gen, ctx.Err())
		}
	}
}

// appendEntry appends en, prepared after st, to the log e leads (none: no
// log), with the rewritten bodies of a purge's earlier generations. Once it
// is appended, the entry is committed whatever happens here: a failure to
// apply it stops e (ErrBroken) until it is reopened and follows the log.
//
// An Append that fails may have appended all the same (an acknowledgement
// lost with the connection): the ingest fails, since what the log shows
// is not proof that the entry is durable (a commit cancelled in its wait
// for a synchronous standby is visible on the primary, and lost in a
// failover). The next append then finds the generation taken (evlog.ErrFork)
// and stops e, for a reopen to follow the log.
func (e *Engine) appendEntry(ctx context.Context, st *state.State, en entry, redactions []evlog.Redaction) error {
	if e.writer == nil {
		return nil
	}
	err := e.writer.Append(ctx, evlog.Entry{Generation: en.gen, Prev: en.prev, Sum: evidence.Sum(en.body), CommittedAt: en.at, Clamped: en.clamped,
		Tenants: st.TenantsOf(en.cont), Body: en.body, Redactions: redactions})
	if err == nil {
		return nil
	}
	err = fmt.Errorf("evpack: append generation %d to the log: %w", en.gen, err)
	if errors.Is(err, evlog.ErrFork) || errors.Is(err, evlog.ErrChain) || errors.Is(err, evlog.ErrGap) { // every commit would fail so until e follows the log
		return e.stop(err, fmt.Errorf("%w: the log does not take generation %d after this writer's history (it holds it already, or parts from it); reopen the index and lead again (it checks and follows the log first)", ErrBroken, en.gen))
	}
	return err
}

// Resign gives up the lease Lead took, so that another writer need not wait
// for it to run out; e then commits on its own again (no log).
func (e *Engine) Resign(ctx context.Context) error {
	e.ingestMu.Lock()
	defer e.ingestMu.Unlock()
	if e.writer == nil {
		return nil
	}
	w := e.writer
	e.writer = nil
	return w.Fence.Release(ctx, w.Epoch)
}

// CheckLog compares e's history with log's, generation by generation (the
// chain sums, links and commit times), and returns the problems found:
// none on a replica that follows log faithfully.
func (e *Engine) CheckLog(ctx context.Context, log Log) ([]string, error) {
	if e.store == nil {
		return nil, fmt.Errorf("%w: an index in memory has no history to compare", ErrBadOptions)
	}
	return audit.CheckLog(ctx, log, e.store.Manifest())
}
