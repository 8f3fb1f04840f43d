package obliqa

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// What BenchmarkScale's figures rest on: the grown corpus holds Tenants ×
// Versions copies of every passage, each a valid chunk with a unique ID, in
// batches of the size asked; on ScaleAsOf exactly one version of each
// passage is eligible per tenant; and the same seed makes the same corpus.
func TestScaleCorpus(t *testing.T) {
	base := make([]connectors.Record, 7)
	for i := range base {
		base[i] = connectors.Record{Where: fmt.Sprintf("p%d", i), Chunk: evidence.Chunk{
			ID: fmt.Sprintf("p%d", i), DocID: "d", Version: "1", Text: fmt.Sprintf("Passage %d on records.", i),
			SourceURL: "obliqa://d/p", Connector: "obliqa", RetrievedAt: Retrieved,
			Anchor: asof.ResolveAnchor("", time.Time{}, Retrieved)}}
	}
	s := Scale{Tenants: 3, Versions: 5, Seed: 7}
	collect := func(s Scale) ([]connectors.Record, []int) {
		var all []connectors.Record
		var sizes []int
		for recs := range s.Batches(base, 10) {
			all, sizes = append(all, recs...), append(sizes, len(recs))
		}
		return all, sizes
	}
	all, sizes := collect(s)
	require.Len(t, all, s.Len(base))
	require.Equal(t, []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5}, sizes)
	again, _ := collect(s)
	require.Equal(t, all, again, "the same seed makes the same corpus")
	other, _ := collect(Scale{Tenants: 3, Versions: 5, Seed: 8})
	require.NotEqual(t, all, other, "another seed shifts the version days")

	day := s.ScaleAsOf()
	ids := map[string]bool{}
	eligible := map[string]int{} // tenant/passage -> versions eligible on day
	for _, r := range all {
		c := r.Chunk
		require.NoError(t, c.Prepare(), r.Where)
		require.False(t, ids[c.ID], "duplicate ID %s", c.ID)
		ids[c.ID] = true
		if asof.Eligible(c.Anchor, c.Valid, day) {
			eligible[c.Tenant+"/"+c.DocID+"/"+r.Where[len(r.Where)-2:]]++
		}
	}
	require.Len(t, eligible, s.Tenants*len(base))
	for k, n := range eligible {
		require.Equal(t, 1, n, "%s: versions eligible on %s", k, day)
	}
	tenants := []string{}
	for _, r := range all[:len(base)*s.Tenants] {
		if !slices.Contains(tenants, r.Chunk.Tenant) {
			tenants = append(tenants, r.Chunk.Tenant)
		}
	}
	require.Equal(t, []string{"t00", "t01", "t02"}, tenants, "version 0 of every tenant comes first")
}

// TurnOrders is a Williams design for every n it is asked: each order is a
// permutation, each system takes each place equally often, and each
// ordered pair of systems is adjacent equally often within the orders, the
// balance BenchmarkScale's fair turns rest on. Hand-checked for 4.
func TestTurnOrders(t *testing.T) {
	require.Equal(t, [][]int{{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}}, TurnOrders(4))
	require.Equal(t, [][]int{{0, 1}, {1, 0}}, TurnOrders(2))
	require.Equal(t, [][]int{{0}}, TurnOrders(1))
	require.Nil(t, TurnOrders(0))
	for n := 2; n <= 9; n++ {
		orders := TurnOrders(n)
		want := n
		if n%2 == 1 {
			want = 2 * n
		}
		require.Len(t, orders, want, "n=%d", n)
		place := make([][]int, n) // place[s][j]: orders with s in place j
		next := make([][]int, n)  // next[a][b]: orders with b right after a
		for s := range n {
			place[s], next[s] = make([]int, n), make([]int, n)
		}
		for _, o := range orders {
			sorted := slices.Sorted(slices.Values(o))
			for j := range n {
				require.Equal(t, j, sorted[j], "n=%d: %v is not a permutation", n, o)
				place[o[j]][j]++
				if j > 0 {
					next[o[j-1]][o[j]]++
				}
			}
		}
		for a := range n {
			for j := range n {
				require.Equal(t, len(orders)/n, place[a][j], "n=%d: system %d in place %d", n, a, j)
			}
			for b := range n {
				if a != b {
					require.Equal(t, len(orders)/n, next[a][b], "n=%d: system %d right after %d", n, b, a)
				}
			}
		}
	}
}
