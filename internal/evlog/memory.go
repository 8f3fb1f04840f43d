package evlog

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is a Log and Fence held in memory: the reference implementation the
// conformance suite is written against, and a log for tests. Nothing
// survives the process.
type Memory struct {
	now func() time.Time

	mu      sync.Mutex
	entries []Entry
	grew    chan struct{} // closed and replaced at every append
	epoch   int64
	holder  string
	expires time.Time
}

// NewMemory returns an empty log whose lease expiry reads the clock now
// (time.Now when nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, grew: make(chan struct{})}
}

func (m *Memory) head() Head {
	if len(m.entries) == 0 {
		return Head{}
	}
	e := m.entries[len(m.entries)-1]
	return Head{Generation: e.Generation, Sum: e.Sum, CommittedAt: e.CommittedAt}
}

// Head implements Log.
func (m *Memory) Head(ctx context.Context) (Head, error) {
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.head(), nil
}

// current reports whether epoch holds an unexpired lease.
func (m *Memory) current(epoch int64) error {
	if epoch != m.epoch || epoch == 0 {
		return fmt.Errorf("%w: epoch %d, the writer's is %d", ErrStaleEpoch, epoch, m.epoch)
	}
	if !m.now().Before(m.expires) {
		return fmt.Errorf("%w: epoch %d's lease expired at %s", ErrStaleEpoch, epoch, m.expires.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Append implements Log.
func (m *Memory) Append(ctx context.Context, e Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.current(e.Epoch); err != nil {
		return fmt.Errorf("append generation %d: %w", e.Generation, err)
	}
	if err := Check(m.head(), e); err != nil {
		return err
	}
	e.Body = slices.Clone(e.Body)
	e.Tenants = slices.Clone(e.Tenants)
	for _, r := range e.Redactions {
		m.entries[r.Generation-1].Body = slices.Clone(r.Body)
		m.entries[r.Generation-1].RedactedBy = e.Generation
	}
	e.Redactions = nil
	m.entries = append(m.entries, e)
	close(m.grew)
	m.grew = make(chan struct{})
	return nil
}

// Read implements Log.
func (m *Memory) Read(ctx context.Context, from int64, fn func(Entry) error) error {
	m.mu.Lock()
	if from < 1 || from > int64(len(m.entries))+1 {
		n := len(m.entries)
		m.mu.Unlock()
		return fmt.Errorf("%w: read from %d, head %d", ErrGap, from, n)
	}
	got := slices.Clone(m.entries[from-1:])
	m.mu.Unlock()
	for _, e := range got {
		if err := ctx.Err(); err != nil {
			return err
		}
		e.Body, e.Tenants = slices.Clone(e.Body), slices.Clone(e.Tenants)
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Wait implements Log.
func (m *Memory) Wait(ctx context.Context, after int64) (Head, error) {
	for {
		m.mu.Lock()
		h, grew := m.head(), m.grew
		m.mu.Unlock()
		if h.Generation > after {
			return h, nil
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return Head{}, ctx.Err()
		}
	}
}

// Acquire implements Fence.
func (m *Memory) Acquire(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if holder == "" || lease <= 0 {
		return 0, fmt.Errorf("%w: acquire needs a holder and a positive lease (%q, %s)", ErrBadEntry, holder, lease)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.epoch != 0 && m.holder != holder && now.Before(m.expires) {
		return 0, fmt.Errorf("%w: %q holds epoch %d until %s", ErrLeaseHeld, m.holder, m.epoch, m.expires.UTC().Format(time.RFC3339Nano))
	}
	m.epoch++
	m.holder = holder
	m.expires = now.Add(lease)
	return m.epoch, nil
}

// Renew implements Fence.
func (m *Memory) Renew(ctx context.Context, epoch int64, lease time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.current(epoch); err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	m.expires = m.now().Add(lease)
	return nil
}

// Release implements Fence.
func (m *Memory) Release(ctx context.Context, epoch int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.current(epoch); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	m.expires = m.now()
	return nil
}
