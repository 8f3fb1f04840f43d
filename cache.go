package evpack

import (
	"fmt"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/packcache"
	"github.com/evpack/evpack/internal/state"
)

// Cache stores rendered packs by key. A service can put it on its own store;
// implementations must be safe for concurrent use. Get must return exactly
// the bytes Put stored.
type Cache interface {
	Get(key string) ([]byte, bool)
	Put(key string, pack []byte)
}

// cacheKey names the ranking: BLAKE3 over a canonical encoding of the
// canonical request, every field of the effective options, and the index
// scope's state (packcache.Key), so a commit to another tenant leaves the
// entry valid. Tenant is part of the request, so two tenants can never
// share an entry.
func (e *Engine) cacheKey(h evidence.Header, sc state.Scope) (string, error) {
	return packcache.Key(h, e.opts, sc.Corpus, sc.Gen)
}

// MemoryCache is a bounded LRU Cache in memory, safe for concurrent use.
type MemoryCache = packcache.Memory

// NewMemoryCache returns a cache holding at most maxEntries packs and
// maxBytes bytes of them (each bound > 0).
func NewMemoryCache(maxEntries int, maxBytes int64) (*MemoryCache, error) {
	if maxEntries <= 0 || maxBytes <= 0 {
		return nil, fmt.Errorf("%w: cache bounds must be positive (entries %d, bytes %d)", ErrBadOptions, maxEntries, maxBytes)
	}
	return packcache.NewMemory(maxEntries, maxBytes), nil
}
