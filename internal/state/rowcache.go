package state

import (
	"sync"
	"sync/atomic"
)

// DocRowsCache bounds, in bytes, the documents' rows a row table keeps
// once requests have read them (docRows: their chunk IDs and generations,
// copied out of the mapped checkpoint, and their reranker terms' places in
// it). Why a bound: a request reads the rows around its candidates, about
// 280 of them at a million chunks, and requests on other days and
// questions read others; kept without one, they grew with every document
// ever read, towards the whole checkpoint in the heap (118 MB after 1,000
// questions at a million chunks, when the terms were copied too), which
// the mapped checkpoint is there to avoid, and every collection scanned
// them. A row read again after it was dropped is read from the mapping
// again, its block already checked.
const DocRowsCache = 256 << 20

// rowCacheShards splits a rowCache, so that requests on many cores rarely
// wait for one another's lookups.
const rowCacheShards = 16

// rowCache holds a row table's docRows by their first row, in shards, each
// with its share of the bound, as a CLOCK: a lookup that finds a document
// marks it used; one that makes a document, when the shard holds more than
// its share, sweeps its hand over the shard's documents, dropping those not
// used since it last passed and unmarking the others, until the shard is
// under its share. So a working set under the bound stays whole, and what
// the cache keeps stays under it (and what requests in flight still hold).
//
// Invariant: a docRows is in its shard at most once, and a lookup hands
// out the one there, so concurrent readers of a document share its reads
// (and its lock) while it stays.
type rowCache struct {
	max    int64
	shards [rowCacheShards]rowShard
}

// rowShard is one shard of a rowCache: its documents, each at its slot,
// the hand, and what they hold, roughly, in bytes (charged as their rows
// are read).
type rowShard struct {
	mu    sync.Mutex
	at    map[int]int // first row -> slot
	slots []*docRows  // nil: free
	free  []int
	hand  int
	bytes atomic.Int64
}

// docRowsSize is what a docRows of n chunks costs before any is read: its
// arrays (a string header, a slice header, a generation and a flag a
// chunk) and the struct.
func docRowsSize(n int) int64 { return int64(n)*(16+24+8+1) + 128 }

// rowSize is what reading one chunk's row adds to its docRows: its ID's
// bytes and a margin for the allocation's rounding (its term numbers stay
// in the mapping).
func rowSize(id string) int64 { return int64(len(id) + 48) }

// get returns the docRows starting at row start, made by newRows when the
// cache has none.
func (c *rowCache) get(start int, newRows func() *docRows) *docRows {
	s := &c.shards[uint(start)%rowCacheShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.at[start]; ok {
		d := s.slots[i]
		d.used.Store(true)
		return d
	}
	if s.at == nil {
		s.at = map[int]int{}
	}
	for share := c.max / rowCacheShards; s.bytes.Load() > share && len(s.at) > 0; {
		s.sweep()
	}
	d := newRows()
	i := len(s.slots)
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
		s.slots[i] = d
	} else {
		s.slots = append(s.slots, d)
	}
	s.at[start] = i
	s.bytes.Add(d.size())
	d.charge.Store(&s.bytes)
	return d
}

// sweep moves s's hand one slot: a document used since the hand last
// passed is unmarked, one that was not is dropped. The caller holds s.mu.
func (s *rowShard) sweep() {
	i := s.hand
	s.hand = (s.hand + 1) % len(s.slots)
	d := s.slots[i]
	switch {
	case d == nil:
	case d.used.Swap(false):
	default:
		// Under its lock, so that a read's charge lands before the count
		// drops what it holds, or not at all.
		d.mu.Lock()
		d.charge.Store(nil)
		s.bytes.Add(-d.size())
		d.mu.Unlock()
		delete(s.at, d.start)
		s.slots[i] = nil
		s.free = append(s.free, i)
	}
}
