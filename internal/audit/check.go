package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/evpack/evpack/internal/state"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/retrieve"
)

// CheckReport says what CheckIndex verified and what it found wrong.
type CheckReport struct {
	Generation int64         // the committed generation checked
	Chunks     int           // committed chunks
	Files      []CheckedFile // every stored file the manifest names, in manifest order
	// Strays are files in the index directory that the manifest does not
	// name (a temporary directory left by a crash, say): reported, never
	// deleted. One that may hold chunk text (a temp file of an atomic
	// write, or a file in chunks/) is also a problem.
	Strays   []string
	Problems []string // empty iff the index is healthy
}

// CheckedFile is a stored file whose bytes were read and found to hash to
// the checksum the manifest records.
type CheckedFile struct {
	Name   string // relative to the index directory
	Sum    string // "blake3:<hex>"
	Chunks int    // for batch files, how many chunks it holds
	Facts  int    // and how many facts
	Purges int    // and purges
}

// OK reports whether no problem was found.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// CheckTenants compares the per-tenant figures of st with a recount.
func CheckTenants(st, fresh *state.State, bad func(string, ...any)) {
	if got, want := st.TenantNames(), fresh.TenantNames(); !slices.Equal(got, want) {
		bad("tenants %q, recount gives %q", got, want)
		return
	}
	sameDF := func(a, b map[string]state.Series) bool {
		return maps.EqualFunc(a, b, func(x, y state.Series) bool { return slices.Equal(x, y) })
	}
	for _, name := range st.TenantNames() {
		a, b := st.Tenants[name], fresh.Tenants[name]
		switch {
		case !slices.Equal(a.Docs, b.Docs) || !slices.Equal(a.Tokens, b.Tokens) || !slices.Equal(a.Facts, b.Facts):
			bad("tenant %q: document, token or fact counts over generations differ from a recount", name)
		case !slices.Equal(a.Digest, b.Digest):
			bad("tenant %q: corpus digests over generations differ from a recount", name)
		case !sameDF(a.LexDF, b.LexDF) || !sameDF(a.RerankDF, b.RerankDF):
			bad("tenant %q: term document frequencies differ from a recount", name)
		}
	}
}

// CorruptLexical marks err, a failure to read the lexical index of an
// existing index, as storage.ErrCorrupt: a partition bleve refuses or panics on, a
// damaged layout file, a partition the catalog does not name. Those are
// damage to be rebuilt (evpack rebuild-lexical), not bad input. A
// cancelled context is left as it is, and a partition another holder kept
// locked (retrieve.ErrPartitionLocked) is storage.ErrLocked: nothing to
// rebuild.
func CorruptLexical(ctx context.Context, err error) error {
	switch {
	case err == nil || ctx.Err() != nil || errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrLocked) || !errors.Is(err, retrieve.ErrLexical):
		return err
	case errors.Is(err, retrieve.ErrPartitionLocked): // not damage: another holder's lock, which it may let go
		return fmt.Errorf("%w: %w", storage.ErrLocked, err)
	}
	return fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
}

// LexicalErr is err, from a request's or Preload's read of the lexical
// index, under the engine's sentinels: storage.ErrCorrupt for a partition
// damaged or at odds with the catalog, storage.ErrLocked for one another
// holder kept locked (the next call tries again). Unlike CorruptLexical it
// leaves every other lexical error as it is: a request cannot tell them
// from a closed index.
func LexicalErr(err error) error {
	switch {
	case errors.Is(err, retrieve.ErrCatalogMismatch), errors.Is(err, retrieve.ErrDamaged):
		return fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
	case errors.Is(err, retrieve.ErrPartitionLocked):
		return fmt.Errorf("%w: %w", storage.ErrLocked, err)
	}
	return err
}
