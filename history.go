package evpack

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/evpack/evpack/evidence"
)

// What each commit did, tenant by tenant: the index's history as a person
// reads it (evpack history), and the commits Diff names as the causes of a
// change.

// TenantCommit is what one commit did to one tenant's evidence. Every list
// holds chunk IDs, sorted.
type TenantCommit struct {
	Tenant string // "" is the shared tenant
	// Added holds the chunks the commit added.
	Added []string
	// Superseded, Ended and Retracted hold the chunks that a fact the
	// commit added says were superseded, ended or retracted.
	Superseded, Ended, Retracted []string
	// Purged holds the chunks whose text the commit deleted (Engine.Purge).
	Purged []string
}

// Count returns how many chunks the commit added or changed in the tenant.
func (t TenantCommit) Count() int {
	return len(t.Added) + len(t.Superseded) + len(t.Ended) + len(t.Retracted) + len(t.Purged)
}

// Summary renders the tenant's part of a commit in words: a count per kind
// of change, in a fixed order, with the chunk IDs of a kind when there are
// at most names of them ("3 added (a, b, c), 1 superseded (d)").
func (t TenantCommit) Summary(names int) string {
	var parts []string
	for _, k := range []struct {
		what string
		ids  []string
	}{{"added", t.Added}, {"superseded", t.Superseded}, {"ended", t.Ended}, {"retracted", t.Retracted}, {"purged", t.Purged}} {
		if len(k.ids) == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s", len(k.ids), k.what)
		if len(k.ids) <= names {
			s += " (" + strings.Join(k.ids, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// commitsByTenant returns, for each generation in (from, to] of st, what
// it did per tenant: out[g-from-1] lists the tenants it touched, sorted by
// name. Chunks, facts and purges are read from the full state (st.rows
// nil).
func (st *state) commitsByTenant(from, to int64) [][]TenantCommit {
	if to <= from {
		return nil
	}
	type key struct {
		gen    int64
		tenant string
	}
	acc := map[key]*TenantCommit{} // assembled, then read in sorted order below
	at := func(gen int64, id string) *TenantCommit {
		tenant := ""
		if c, ok := st.chunks[id]; ok {
			tenant = c.Tenant
		}
		k := key{gen, tenant}
		tc := acc[k]
		if tc == nil {
			tc = &TenantCommit{Tenant: tenant}
			acc[k] = tc
		}
		return tc
	}
	for id, g := range st.committed {
		if g > from && g <= to {
			tc := at(g, id)
			tc.Added = append(tc.Added, id)
		}
	}
	for _, fa := range st.factLog {
		if fa.gen <= from || fa.gen > to {
			continue
		}
		tc := at(fa.gen, fa.f.ChunkID)
		switch fa.f.Kind {
		case evidence.FactSuperseded:
			tc.Superseded = append(tc.Superseded, fa.f.ChunkID)
		case evidence.FactRetracted:
			tc.Retracted = append(tc.Retracted, fa.f.ChunkID)
		default:
			tc.Ended = append(tc.Ended, fa.f.ChunkID)
		}
	}
	for _, id := range st.purgeLog {
		if pa := st.purged[id]; pa.gen > from && pa.gen <= to {
			tc := at(pa.gen, id)
			tc.Purged = append(tc.Purged, id)
		}
	}
	keys := make([]key, 0, len(acc))
	for k := range acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.gen, b.gen); c != 0 {
			return c
		}
		return strings.Compare(a.tenant, b.tenant)
	})
	out := make([][]TenantCommit, to-from)
	for _, k := range keys {
		tc := acc[k]
		for _, ids := range [][]string{tc.Added, tc.Superseded, tc.Ended, tc.Retracted, tc.Purged} {
			slices.Sort(ids)
		}
		tc.Superseded, tc.Ended, tc.Retracted = slices.Compact(tc.Superseded), slices.Compact(tc.Ended), slices.Compact(tc.Retracted)
		out[k.gen-from-1] = append(out[k.gen-from-1], *tc)
	}
	return out
}

// inScope reports whether a commit's tenants touch the scope of tenant (its
// own evidence and the shared corpus).
func inScope(tcs []TenantCommit, tenant string) bool {
	for _, tc := range tcs {
		if tc.Tenant == "" || tc.Tenant == tenant {
			return true
		}
	}
	return false
}
