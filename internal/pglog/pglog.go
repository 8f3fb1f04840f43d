// Package pglog keeps an evpack log in PostgreSQL: one row per generation
// holding the sealed batch bytes as the file log stores them, appended by one
// fenced writer at a time.
//
// Why PostgreSQL: an index that must outlive its machine needs its history
// on a store that already replicates and fails over correctly. The commit
// point is PostgreSQL's commit: an append is acknowledged only after it
// returns, so the entry is on the primary's WAL, and also on a synchronous
// standby's when the server is configured with synchronous_commit = on (or
// remote_apply) and synchronous_standby_names naming it (docs/design.md says
// which settings and why two candidates are needed to keep writing after
// one standby is lost).
//
// Invariant: an append is one transaction that locks the writer row, checks
// the epoch and its lease against the server's clock, checks the generation
// (head+1), the chain (prev = head's sum) and the commit time, inserts the
// row and applies the purge's redactions; a second writer's append of the
// same generation waits for the lock and is refused (the primary key also
// forbids a fork).
//
// Invariant: the lease's expiry is read from the server's clock (now()),
// never a writer's, so writers with skewed clocks still agree on who holds
// it.
package pglog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/evpack/evpack/internal/evlog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Format is the schema version this package writes and reads, recorded in
// evpack_meta.
const Format = "evpack-pglog/1"

// ErrFormat: the database holds an evpack log of another schema version.
var ErrFormat = errors.New("pglog: log of another format")

// ErrClosed: a call on a log after Close, or a Wait that Close ended.
var ErrClosed = errors.New("pglog: log closed")

const schema = `
SELECT pg_advisory_xact_lock(7350019);
CREATE TABLE IF NOT EXISTS evpack_meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO evpack_meta VALUES ('format', '` + Format + `') ON CONFLICT (key) DO NOTHING;
CREATE TABLE IF NOT EXISTS evpack_log (
	generation   bigint  PRIMARY KEY CHECK (generation >= 1),
	prev         text    NOT NULL,
	sum          text    NOT NULL,
	committed_at bigint  NOT NULL,
	clamped      boolean NOT NULL,
	epoch        bigint  NOT NULL,
	tenants      text[]  NOT NULL,
	body         bytea   NOT NULL,
	redacted_by  bigint  NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS evpack_writer (
	id         int         PRIMARY KEY CHECK (id = 1),
	epoch      bigint      NOT NULL,
	holder     text        NOT NULL,
	expires_at timestamptz NOT NULL
);
INSERT INTO evpack_writer VALUES (1, 0, '', 'epoch') ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS evpack_replicas (
	replica        text   NOT NULL,
	generation     bigint NOT NULL,
	manifest_sum   text   NOT NULL,
	checkpoint_sum text   NOT NULL,
	applied_at     timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (replica, generation)
);
`

// channel is the LISTEN/NOTIFY channel an append notifies.
const channel = "evpack_log"

// Log is an evlog.Log and evlog.Fence in one PostgreSQL database. It is safe
// for concurrent use.
type Log struct {
	pool *pgxpool.Pool
	// done is closed by Close, which ends the Waits in progress: the pool's
	// Close waits for their connections.
	done      chan struct{}
	closeOnce sync.Once
}

// Open connects to dsn, creates the schema when the database has none, and
// checks its format.
func Open(ctx context.Context, dsn string) (*Log, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pglog: open: %w", err)
	}
	l := &Log{pool: pool, done: make(chan struct{})}
	if err := l.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) init(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		return fmt.Errorf("pglog: create schema: %w", err)
	}
	var format string
	if err := l.pool.QueryRow(ctx, `SELECT value FROM evpack_meta WHERE key = 'format'`).Scan(&format); err != nil {
		return fmt.Errorf("pglog: read format: %w", err)
	}
	if format != Format {
		return fmt.Errorf("%w: the database holds %q, this evpack reads %q", ErrFormat, format, Format)
	}
	return nil
}

// Close ends the Waits in progress (ErrClosed) and closes the connections.
func (l *Log) Close() {
	l.closeOnce.Do(func() { close(l.done) })
	l.pool.Close()
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func headOf(ctx context.Context, q querier) (evlog.Head, error) {
	var h evlog.Head
	var at int64
	err := q.QueryRow(ctx, `SELECT generation, sum, committed_at FROM evpack_log ORDER BY generation DESC LIMIT 1`).Scan(&h.Generation, &h.Sum, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return evlog.Head{}, nil
	}
	if err != nil {
		return evlog.Head{}, fmt.Errorf("pglog: head: %w", err)
	}
	h.CommittedAt = time.Unix(at, 0).UTC()
	return h, nil
}

// Head implements evlog.Log.
func (l *Log) Head(ctx context.Context) (evlog.Head, error) {
	h, err := headOf(ctx, l.pool)
	return h, l.closedErr(err)
}

// closedErr returns err, saying ErrClosed too once Close was called: a
// call that failed on the closed pool, or one Close cut short.
func (l *Log) closedErr(err error) error {
	select {
	case <-l.done:
		if err != nil && !errors.Is(err, ErrClosed) {
			return fmt.Errorf("%w: %w", ErrClosed, err)
		}
	default:
	}
	return err
}

// Append implements evlog.Log: acknowledged once PostgreSQL's commit returns.
func (l *Log) Append(ctx context.Context, e evlog.Entry) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := current(ctx, tx, e.Epoch); err != nil {
			return fmt.Errorf("append generation %d: %w", e.Generation, err)
		}
		head, err := headOf(ctx, tx)
		if err != nil {
			return err
		}
		if err := evlog.Check(head, e); err != nil {
			return err
		}
		tenants := e.Tenants
		if tenants == nil {
			tenants = []string{}
		}
		_, err = tx.Exec(ctx, `INSERT INTO evpack_log (generation, prev, sum, committed_at, clamped, epoch, tenants, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			e.Generation, e.Prev, e.Sum, e.CommittedAt.Unix(), e.Clamped, e.Epoch, tenants, e.Body)
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return fmt.Errorf("%w: generation %d: %v", evlog.ErrFork, e.Generation, err)
			}
			return fmt.Errorf("pglog: append generation %d: %w", e.Generation, err)
		}
		for _, r := range e.Redactions {
			if _, err := tx.Exec(ctx, `UPDATE evpack_log SET body = $2, redacted_by = $3 WHERE generation = $1`, r.Generation, r.Body, e.Generation); err != nil {
				return fmt.Errorf("pglog: generation %d redacts %d: %w", e.Generation, r.Generation, err)
			}
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, fmt.Sprint(e.Generation))
		return err
	})
	return l.closedErr(err)
}

// current locks the writer row and checks that epoch holds an unexpired
// lease by the server's clock.
func current(ctx context.Context, tx pgx.Tx, epoch int64) error {
	var have int64
	var alive bool
	if err := tx.QueryRow(ctx, `SELECT epoch, expires_at > now() FROM evpack_writer WHERE id = 1 FOR UPDATE`).Scan(&have, &alive); err != nil {
		return fmt.Errorf("pglog: writer: %w", err)
	}
	if epoch == 0 || epoch != have {
		return fmt.Errorf("%w: epoch %d, the writer's is %d", evlog.ErrStaleEpoch, epoch, have)
	}
	if !alive {
		return fmt.Errorf("%w: epoch %d's lease expired", evlog.ErrStaleEpoch, epoch)
	}
	return nil
}

// Read implements evlog.Log. It reads in one snapshot, so the entries are
// those of one moment even while a writer appends.
func (l *Log) Read(ctx context.Context, from int64, fn func(evlog.Entry) error) error {
	return l.closedErr(l.read(ctx, from, fn))
}

func (l *Log) read(ctx context.Context, from int64, fn func(evlog.Entry) error) error {
	tx, err := l.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("pglog: read: %w", err)
	}
	defer tx.Rollback(ctx)
	head, err := headOf(ctx, tx)
	if err != nil {
		return err
	}
	if from < 1 || from > head.Generation+1 {
		return fmt.Errorf("%w: read from %d, head %d", evlog.ErrGap, from, head.Generation)
	}
	// Batches of rows keep one huge body per row from holding the whole log
	// in memory at once. They start at one row, since many reads stop at
	// their first (evlog.Follow's check of a follower at its target).
	const batch = 64
	for lo, n := from, int64(1); lo <= head.Generation; lo, n = lo+n, min(2*n, batch) {
		rows, err := tx.Query(ctx, `SELECT generation, prev, sum, committed_at, clamped, epoch, tenants, body, redacted_by
			FROM evpack_log WHERE generation >= $1 AND generation < $2 ORDER BY generation`, lo, lo+n)
		if err != nil {
			return fmt.Errorf("pglog: read from %d: %w", lo, err)
		}
		var got []evlog.Entry
		for rows.Next() {
			var e evlog.Entry
			var at int64
			if err := rows.Scan(&e.Generation, &e.Prev, &e.Sum, &at, &e.Clamped, &e.Epoch, &e.Tenants, &e.Body, &e.RedactedBy); err != nil {
				rows.Close()
				return fmt.Errorf("pglog: read from %d: %w", lo, err)
			}
			e.CommittedAt = time.Unix(at, 0).UTC()
			if len(e.Tenants) == 0 {
				e.Tenants = nil
			}
			got = append(got, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pglog: read from %d: %w", lo, err)
		}
		for i, e := range got {
			if want := lo + int64(i); e.Generation != want {
				return fmt.Errorf("%w: the log skips from %d to %d", evlog.ErrGap, want, e.Generation)
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Wait implements evlog.Log with LISTEN/NOTIFY: it holds one connection
// while it waits, until Close (ErrClosed).
func (l *Log) Wait(ctx context.Context, after int64) (evlog.Head, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-l.done:
			cancel(ErrClosed)
		case <-ctx.Done():
		}
	}()
	h, err := l.wait(ctx, after)
	return h, l.closedErr(err)
}

// wait is Wait under a context Close cancels.
func (l *Log) wait(ctx context.Context, after int64) (evlog.Head, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return evlog.Head{}, fmt.Errorf("pglog: wait: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return evlog.Head{}, fmt.Errorf("pglog: wait: %w", err)
	}
	defer func() {
		// A connection going back to the pool must not keep listening.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "UNLISTEN *"); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	for {
		// The head is read after LISTEN, so an append between the two is
		// seen either here or as a notification.
		h, err := headOf(ctx, conn)
		if err != nil {
			return evlog.Head{}, err
		}
		if h.Generation > after {
			return h, nil
		}
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return evlog.Head{}, ctx.Err()
			}
			return evlog.Head{}, fmt.Errorf("pglog: wait: %w", err)
		}
	}
}

// Acquire implements evlog.Fence.
func (l *Log) Acquire(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if holder == "" || lease <= 0 {
		return 0, fmt.Errorf("%w: acquire needs a holder and a positive lease (%q, %s)", evlog.ErrBadEntry, holder, lease)
	}
	var epoch int64
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var have int64
		var who string
		var alive bool
		var until time.Time
		if err := tx.QueryRow(ctx, `SELECT epoch, holder, expires_at > now(), expires_at FROM evpack_writer WHERE id = 1 FOR UPDATE`).Scan(&have, &who, &alive, &until); err != nil {
			return fmt.Errorf("pglog: acquire: %w", err)
		}
		if have != 0 && who != holder && alive {
			return fmt.Errorf("%w: %q holds epoch %d until %s", evlog.ErrLeaseHeld, who, have, until.UTC().Format(time.RFC3339Nano))
		}
		epoch = have + 1 // holder's own earlier epoch fenced too (evlog.Fence)
		_, err := tx.Exec(ctx, `UPDATE evpack_writer SET epoch = $1, holder = $2, expires_at = now() + $3 * interval '1 microsecond' WHERE id = 1`,
			epoch, holder, lease.Microseconds())
		return err
	})
	if err != nil {
		return 0, l.closedErr(err)
	}
	return epoch, nil
}

// Renew implements evlog.Fence.
func (l *Log) Renew(ctx context.Context, epoch int64, lease time.Duration) error {
	return l.closedErr(l.renew(ctx, epoch, lease))
}

func (l *Log) renew(ctx context.Context, epoch int64, lease time.Duration) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := current(ctx, tx, epoch); err != nil {
			return fmt.Errorf("renew: %w", err)
		}
		_, err := tx.Exec(ctx, `UPDATE evpack_writer SET expires_at = now() + $1 * interval '1 microsecond' WHERE id = 1`, lease.Microseconds())
		return err
	})
}

// Release implements evlog.Fence.
func (l *Log) Release(ctx context.Context, epoch int64) error {
	return l.closedErr(l.release(ctx, epoch))
}

func (l *Log) release(ctx context.Context, epoch int64) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := current(ctx, tx, epoch); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		_, err := tx.Exec(ctx, `UPDATE evpack_writer SET expires_at = now() WHERE id = 1`)
		return err
	})
}

// RecordApplied records a replica's audit row of a generation, replacing
// an earlier one (evlog.Auditor).
func (l *Log) RecordApplied(ctx context.Context, a evlog.Applied) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO evpack_replicas (replica, generation, manifest_sum, checkpoint_sum) VALUES ($1, $2, $3, $4)
		ON CONFLICT (replica, generation) DO UPDATE SET manifest_sum = $3, checkpoint_sum = $4, applied_at = now()`,
		a.Replica, a.Generation, a.ManifestSum, a.CheckpointSum)
	if err != nil {
		return fmt.Errorf("pglog: record replica %q at generation %d: %w", a.Replica, a.Generation, err)
	}
	return nil
}

// AppliedAt returns every replica's audit row of generation g, by replica
// name (evlog.Auditor).
func (l *Log) AppliedAt(ctx context.Context, g int64) ([]evlog.Applied, error) {
	rows, err := l.pool.Query(ctx, `SELECT replica, generation, manifest_sum, checkpoint_sum FROM evpack_replicas
		WHERE generation = $1 ORDER BY replica`, g)
	if err != nil {
		return nil, fmt.Errorf("pglog: replicas at generation %d: %w", g, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (evlog.Applied, error) {
		var a evlog.Applied
		err := r.Scan(&a.Replica, &a.Generation, &a.ManifestSum, &a.CheckpointSum)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("pglog: replicas at generation %d: %w", g, err)
	}
	return out, nil
}

var _ evlog.Auditor = (*Log)(nil)
