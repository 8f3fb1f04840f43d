package evpack

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/stretchr/testify/require"
)

// maintRecords is round i's batch: two chunks sharing the corpus's words (so
// that they move its statistics and rankings) and one secret chunk whose
// words appear nowhere else (purged a round later).
func maintRecords(i int) []connectors.Record {
	at := asof.MustDate("2025-03-01").Start()
	mk := func(id, tenant, text string) connectors.Record {
		return connectors.Record{Where: id, Chunk: evidence.Chunk{ID: id, DocID: id, Version: "1", Text: text,
			SourceURL: "https://example.test/" + id, Connector: "test", Tenant: tenant, RetrievedAt: at,
			Anchor: asof.Anchor{At: at, Field: "published"}}}
	}
	return []connectors.Record{
		mk(fmt.Sprintf("maint-shared-%02d", i), "", fmt.Sprintf("A licensed firm must retain records of client transactions for %d years; fines apply to failing firms.", i+3)),
		mk(fmt.Sprintf("maint-acme-%02d", i), "acme", fmt.Sprintf("Internal policy %d: the firm retains client transaction records and chat messages.", i)),
		mk(maintSecretID(i), "acme", maintSecret(i)),
	}
}

func maintSecretID(i int) string { return fmt.Sprintf("maint-secret-%02d", i) }
func maintSecret(i int) string {
	return fmt.Sprintf("qzvelpaw%c qzvmornik%c qzvtrabble%c", 'a'+i, 'a'+i, 'a'+i)
}

type maintPack struct {
	name string
	req  Request
	raw  []byte
}

// TestMaintenanceBesideQueriesAndCommits runs commits, purges, Merge,
// Preload, Check and CheckIndex beside queries on one on-disk engine: no
// call fails, every pack taken replays byte for byte at its generation
// (during the run and after it), and no pack asked after a purge returned
// cites the purged chunk.
func TestMaintenanceBesideQueriesAndCommits(t *testing.T) {
	for _, tc := range []struct{ cache, reopen, dense bool }{{false, false, false}, {true, false, false}, {false, true, false}, {true, true, false}, {false, false, true}, {true, true, true}} {
		cache := tc.cache
		t.Run(fmt.Sprintf("cache=%v,reopen=%v,dense=%v", cache, tc.reopen, tc.dense), func(t *testing.T) {
			ctx := context.Background()
			opts := Options{WarmTenants: tc.reopen}
			if tc.dense { // a purge moves every dense pack of its scope (its pool): no purges then
				opts.Embedder, opts.DenseIndex = testEmbedder(t, testVectors(t)), "hnsw"
			}
			if cache {
				c, err := NewMemoryCache(1000, 1<<26)
				require.NoError(t, err)
				opts.Cache = c
			}
			e, err := Open(t.TempDir(), opts)
			require.NoError(t, err)
			ingestCorpus(t, e)
			if tc.reopen { // a state read from the checkpoint, which the first write unfolds
				_, err := e.Ingest(ctx, connectors.Records([]connectors.Record{secretRecord(t)}), IngestOptions{})
				require.NoError(t, err)
				_, err = e.Purge(ctx, []string{"memo-roe"}, "maintenance test setup")
				require.NoError(t, err)
				_, err = e.Ingest(ctx, connectors.Records(maintRecords(99)), IngestOptions{})
				require.NoError(t, err)
				dir := e.dir
				require.NoError(t, e.Close())
				e, err = Open(dir, opts)
				require.NoError(t, err)
				require.Equal(t, !tc.dense, e.st.Rows != nil)
			}
			checked(t, e)
			reqs, err := loadRequests()
			require.NoError(t, err)
			v1 := oldPack(t, "pack1-5fda4c6-retention.json")

			const rounds = 8
			var mu sync.Mutex
			var purged []string             // chunks whose Purge returned
			secretGen := map[string]int64{} // the generation that committed each secret
			var packs []maintPack
			done := make(chan struct{})
			errs := make(chan error, 100)
			var wg sync.WaitGroup

			wg.Add(1)
			go func() { // the writer
				defer wg.Done()
				defer close(done)
				for i := range rounds {
					rep, err := e.Ingest(ctx, connectors.Records(maintRecords(i)), IngestOptions{})
					if err != nil {
						errs <- fmt.Errorf("ingest %d: %w", i, err)
						return
					}
					// Cache the secret's pack, pinned there and latest.
					for _, g := range []int64{rep.Generation, 0} {
						sp, err := e.Query(ctx, Request{Question: maintSecret(i), AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", Generation: g})
						if err != nil || !slices.Contains(citedIDs(sp), maintSecretID(i)) {
							errs <- fmt.Errorf("secret %d before its purge: %v %v", i, err, citedIDs(sp))
							return
						}
					}
					mu.Lock()
					secretGen[maintSecretID(i)] = rep.Generation
					mu.Unlock()
					if i > 0 && !tc.dense {
						id := maintSecretID(i - 1)
						if _, err := e.Purge(ctx, []string{id}, "maintenance test erasure"); err != nil {
							errs <- fmt.Errorf("purge %s: %w", id, err)
							return
						}
						mu.Lock()
						purged = append(purged, id)
						mu.Unlock()
					}
				}
			}()
			wg.Add(1)
			go func() { // maintenance
				defer wg.Done()
				for k := 0; ; k++ {
					select {
					case <-done:
						return
					default:
					}
					var err error
					switch k % 4 {
					case 0:
						err = e.Merge(ctx)
					case 1:
						_, err = e.Preload(ctx)
					case 2:
						err = e.Check()
					case 3:
						var rep *CheckReport
						rep, err = e.CheckIndex(ctx)
						if err == nil && !rep.OK() {
							err = fmt.Errorf("CheckIndex: %+v", rep)
						}
					}
					if err != nil {
						errs <- fmt.Errorf("maintenance %d: %w", k%4, err)
						return
					}
				}
			}()
			for q := range 2 {
				wg.Add(1)
				go func() { // queries
					defer wg.Done()
					for k := q; ; k++ {
						select {
						case <-done:
							return
						default:
						}
						r := reqs[k%len(reqs)]
						p, err := e.Query(ctx, r.request())
						if err != nil {
							errs <- fmt.Errorf("query %s: %w", r.Name, err)
							return
						}
						mu.Lock()
						packs = append(packs, maintPack{r.Name, r.request(), p.Bytes()})
						gone := slices.Clone(purged)
						gens := make([]int64, len(gone))
						for j, id := range gone {
							gens[j] = secretGen[id]
						}
						mu.Unlock()
						// A replay at the pack's generation, beside the writer.
						pin := r.request()
						pin.Generation = p.Generation
						again, err := e.Query(ctx, pin)
						if err != nil {
							errs <- fmt.Errorf("replay %s: %w", r.Name, err)
							return
						}
						if !bytes.Equal(again.Bytes(), p.Bytes()) {
							errs <- fmt.Errorf("replay of %s at generation %d differs:\n%s\n%s", r.Name, p.Generation, p.Bytes(), again.Bytes())
							return
						}
						// Ask for every purged secret: none is cited.
						for j, id := range gone {
							var i int
							fmt.Sscanf(id, "maint-secret-%d", &i)
							for _, g := range []int64{0, gens[j]} {
								sp, err := e.Query(ctx, Request{Question: maintSecret(i), AsOf: asof.MustDate("2026-02-01"), Tenant: "acme", Generation: g})
								if err != nil {
									errs <- fmt.Errorf("secret query: %w", err)
									return
								}
								if slices.Contains(citedIDs(sp), id) {
									errs <- fmt.Errorf("pack at generation %d (asked %d) cites %s after its purge returned", sp.Generation, g, id)
									return
								}
							}
						}
						// An evpack-pack/1 pack (checked, not replayed) and History, beside the writer.
						if rep, err := e.Verify(ctx, v1); err != nil || !rep.OK() {
							errs <- fmt.Errorf("verify of an evpack-pack/1 pack beside the writer: %v %v", err, rep)
							return
						}
						if _, err := e.History(); err != nil {
							errs <- fmt.Errorf("history: %w", err)
							return
						}
						// Diff and Verify of the pack, beside the writer.
						if _, err := e.Diff(ctx, p.Bytes()); err != nil {
							errs <- fmt.Errorf("diff %s: %w", r.Name, err)
							return
						}
						if rep, err := e.Verify(ctx, p.Bytes()); err != nil || !rep.OK() {
							errs <- fmt.Errorf("verify %s beside the writer: %v %v", r.Name, err, rep)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if t.Failed() {
				return
			}
			t.Logf("%d packs", len(packs))
			for _, p := range packs {
				rep, err := e.Verify(ctx, p.raw)
				require.NoError(t, err, p.name)
				require.True(t, rep.OK(), "%s: %v", p.name, rep.Problems)
			}
			// And in a fresh engine on the same directory.
			dir := e.dir
			require.NoError(t, e.Close())
			e2, err := Open(dir, Options{Embedder: opts.Embedder, DenseIndex: opts.DenseIndex})
			require.NoError(t, err)
			defer e2.Close()
			for _, p := range packs {
				rep, err := e2.Verify(ctx, p.raw)
				require.NoError(t, err, p.name)
				require.True(t, rep.OK(), "%s: %v", p.name, rep.Problems)
			}
		})
	}
}
