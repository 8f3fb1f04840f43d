// Package packcache holds what the engine's pack cache is made of: the
// cache key (a canonical encoding of everything a ranking depends on) and
// a bounded in-memory LRU store.
//
// Why a package of its own: the key is the contract's point 7 ("the
// ranking's identity is its cache key"), and it must stay one function of
// the request, the options and the scope, testable without an index.
//
// Entry points: [Key], [Memory], [Answers].
package packcache

import (
	"bytes"
	"container/list"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/evpack/evpack/evidence"
)

// Key returns the cache key of the canonical request h on options opts (a
// struct, walked by reflection, so that a field added later is in the key
// without anyone remembering to add it; a field of a kind it cannot encode
// is an error, not a silent omission; a field tagged cachekey:"-" is left
// out) in a scope whose corpus digest is corpus at generation gen.
func Key(h evidence.Header, opts any, corpus string, gen int64) (string, error) {
	var b bytes.Buffer
	b.WriteString("evpack-cache/2\n")
	if err := encodeKey(&b, "request", reflect.ValueOf(h)); err != nil {
		return "", err
	}
	if err := encodeKey(&b, "options", reflect.ValueOf(opts)); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "scope.corpus=%s\nscope.generation=%d\n", corpus, gen)
	return evidence.Sum(b.Bytes()), nil
}

// named is what an interface in the options must offer to be keyed.
type named interface{ Name() string }
type identified interface{ Identity() string }

func encodeKey(b *bytes.Buffer, path string, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Tag.Get("cachekey") == "-" {
				continue
			}
			if err := encodeKey(b, path+"."+f.Name, v.Field(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		fmt.Fprintf(b, "%s.len=%d\n", path, v.Len())
		for i := 0; i < v.Len(); i++ {
			if err := encodeKey(b, fmt.Sprintf("%s[%d]", path, i), v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("evpack: cache key: %s: map key %s", path, v.Type().Key())
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		fmt.Fprintf(b, "%s.len=%d\n", path, len(keys))
		for _, k := range keys {
			if err := encodeKey(b, path+"["+strconv.Quote(k)+"]", v.MapIndex(reflect.ValueOf(k))); err != nil {
				return err
			}
		}
		return nil
	case reflect.Interface:
		if v.IsNil() {
			fmt.Fprintf(b, "%s=nil\n", path)
			return nil
		}
		if !v.CanInterface() {
			return fmt.Errorf("evpack: cache key: %s: unexported interface", path)
		}
		switch x := v.Interface().(type) {
		case identified:
			fmt.Fprintf(b, "%s=%s\n", path, strconv.Quote(x.Identity()))
		case named:
			fmt.Fprintf(b, "%s=%s\n", path, strconv.Quote(x.Name()))
		default:
			return fmt.Errorf("evpack: cache key: %s: %T has neither Identity nor Name", path, x)
		}
		return nil
	case reflect.String:
		fmt.Fprintf(b, "%s=%s\n", path, strconv.Quote(v.String()))
	case reflect.Bool:
		fmt.Fprintf(b, "%s=%t\n", path, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fmt.Fprintf(b, "%s=%d\n", path, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		fmt.Fprintf(b, "%s=%d\n", path, v.Uint())
	case reflect.Float32, reflect.Float64:
		fmt.Fprintf(b, "%s=%s\n", path, strconv.FormatFloat(v.Float(), 'g', -1, 64))
	default:
		return fmt.Errorf("evpack: cache key: %s: cannot encode a %s", path, v.Kind())
	}
	return nil
}

// Memory is a bounded LRU Cache in memory, safe for concurrent use.
type Memory struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // front: most recently used
	entries    map[string]*list.Element
}

type cacheEntry struct {
	key  string
	pack []byte
}

// NewMemory returns a cache holding at most maxEntries packs and maxBytes
// bytes of them; both must be positive.
func NewMemory(maxEntries int, maxBytes int64) *Memory {
	return &Memory{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// Get returns the pack stored under key.
func (c *Memory) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).pack, true
}

// Put stores pack under key, evicting the least recently used. A pack larger than the byte bound is not stored.
func (c *Memory) Put(key string, pack []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(len(pack)) > c.maxBytes {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.bytes -= int64(len(el.Value.(*cacheEntry).pack))
		c.order.Remove(el)
		delete(c.entries, key)
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, pack: slices.Clone(pack)})
	c.bytes += int64(len(pack))
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		last := c.order.Back()
		e := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.entries, e.key)
		c.bytes -= int64(len(e.pack))
	}
}

// Len returns the number of cached packs and their total size.
func (c *Memory) Len() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}

// Answers reports whether pack p, read from a cache, answers the request
// whose canonical header is h on an engine whose fingerprint is now fp: the
// same question, as-of day, tenant, filters and K, and the same fingerprint
// (corpus digest, retrievers, reranker). The cache key covers all of these,
// but a cache is storage, not proof: a hit is checked before it is served.
func Answers(p *evidence.Pack, h evidence.Header, fp evidence.Fingerprint) bool {
	return p.Question == h.Question && p.AsOf == h.AsOf && p.Tenant == h.Tenant && p.K == h.K && p.Generation == h.Generation &&
		p.Period == h.Period && p.PeriodFrom == h.PeriodFrom && slices.Equal(p.Filters, h.Filters) && slices.Equal(p.Fingerprint, fp)
}
