package evpack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/internal/storage"
)

// corpusIndexOnDisk ingests the test corpus into a new on-disk index,
// closes it, and returns its directory and its golden packs.
func corpusIndexOnDisk(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	ingestCorpus(t, e)
	want := packsFor(t, e)
	require.NoError(t, e.Close())
	return dir, want
}

// flipSegmentBit flips the low bit of the byte at at(size) of the one
// segment of partition part (names are the tenant's hash and the epoch:
// the same on every run with the test corpus).
func flipSegmentBit(t *testing.T, dir, part string, at func(n int) int) {
	t.Helper()
	zaps, err := filepath.Glob(filepath.Join(dir, storage.LexicalDir, part, "store", "*.zap"))
	require.NoError(t, err)
	require.Len(t, zaps, 1)
	raw, err := os.ReadFile(zaps[0])
	require.NoError(t, err)
	raw[at(len(raw))] ^= 0x01
	require.NoError(t, os.WriteFile(zaps[0], raw, 0o600))
}

// namedRequest returns the golden request called name.
func namedRequest(t *testing.T, name string) Request {
	reqs, err := loadRequests()
	require.NoError(t, err)
	for _, r := range reqs {
		if r.Name == name {
			return r.request()
		}
	}
	t.Fatalf("no request %s", name)
	return Request{}
}

// TestDamagedSegmentReadsAreErrCorrupt: one flipped bit in a bleve segment
// made zapx panic as a request read it, and the panic ended the process
// (the caller's goroutine, no recover on the read path), Check's walk too;
// and a panic in Preload's read of one partition marked the lexical index
// failed, so that the next commit stopped the engine and every request
// after failed. Each is now ErrCorrupt for the call that read the
// partition, and the index goes on serving (an adversarial review, stop 79).
func TestDamagedSegmentReadsAreErrCorrupt(t *testing.T) {
	ctx := context.Background()
	t.Run("a request reads it", func(t *testing.T) {
		dir, _ := corpusIndexOnDisk(t)
		flipSegmentBit(t, dir, "p-af1349b9f5f9a1a6-199", func(n int) int { return 2 * n / 60 })
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		_, err = e.Query(ctx, namedRequest(t, "retention-2020"))
		require.ErrorIs(t, err, ErrCorrupt)
		require.Error(t, e.Check(), "Check reads the damaged segment and says so")
	})
	t.Run("Preload reads it", func(t *testing.T) {
		dir, want := corpusIndexOnDisk(t)
		flipSegmentBit(t, dir, "p-8567980b0a5babca-221", func(n int) int { return int(float64(n-1) * 0.33) })
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		require.Equal(t, want, packsFor(t, e), "no golden request reads what the bit changed")
		_, err = e.Preload(ctx)
		require.ErrorIs(t, err, ErrCorrupt)
		_, err = e.Ingest(ctx, connectors.Records([]connectors.Record{strayRecord(t)}), IngestOptions{})
		require.NoError(t, err, "a damaged read stops no write")
		_, err = e.Query(ctx, namedRequest(t, "retention-2020"))
		require.NoError(t, err, "nor the requests of other partitions")
	})
	t.Run("Preload opens a partition without its metadata", func(t *testing.T) {
		// A request that opens it says ErrCorrupt; Preload said only that
		// the partition was damaged.
		dir, _ := corpusIndexOnDisk(t)
		require.NoError(t, os.Remove(filepath.Join(dir, storage.LexicalDir, "p-8567980b0a5babca-221", "index_meta.json")))
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		_, err = e.Preload(ctx)
		require.ErrorIs(t, err, ErrCorrupt)
	})
}

// TestSegmentEditedUnseen: a bit flipped in a segment where bleve reads it
// without failing (here its first byte, in the stored fields) moved the
// pack of a request that read it, and neither Check nor Preload saw it:
// bleve never reads the CRC-32 zapx writes at a segment's end. Check and
// Preload now compare every segment with it; the partition is then kept
// damaged, so the requests that read it fail with ErrCorrupt rather than
// rank from the edited bytes, and the others are answered as before.
func TestSegmentEditedUnseen(t *testing.T) {
	ctx := context.Background()
	t.Run("a request's read fails", func(t *testing.T) {
		// A flipped bit in a term's postings, 852 bytes before the end: bleve
		// fails to read them. It was an error of the lexical index, and not
		// ErrCorrupt, in a request with neither Preload nor Check before it.
		dir, _ := corpusIndexOnDisk(t)
		flipSegmentBit(t, dir, "p-af1349b9f5f9a1a6-199", func(n int) int { return n - 852 })
		e, err := Open(dir, Options{})
		require.NoError(t, err)
		defer e.Close()
		_, err = e.Query(ctx, namedRequest(t, "retention-2020"))
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, "lexical/p-af1349b9f5f9a1a6-199")
	})
	for _, find := range []string{"Preload", "Check"} {
		t.Run(find, func(t *testing.T) {
			dir, want := corpusIndexOnDisk(t)
			flipSegmentBit(t, dir, "p-af1349b9f5f9a1a6-199", func(int) int { return 0 })
			e, err := Open(dir, Options{})
			require.NoError(t, err)
			defer e.Close()
			if find == "Preload" {
				_, err = e.Preload(ctx)
			} else {
				err = e.Check()
			}
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, "p-af1349b9f5f9a1a6-199")
			require.ErrorContains(t, err, "do not match its checksum")
			_, err = e.Query(ctx, namedRequest(t, "retention-2020"))
			require.ErrorIs(t, err, ErrCorrupt, "the request reads the edited partition")
			reqs, err := loadRequests()
			require.NoError(t, err)
			answered := 0
			for _, r := range reqs {
				p, err := e.Query(ctx, r.request())
				if errors.Is(err, ErrCorrupt) {
					continue
				}
				require.NoError(t, err, r.Name)
				require.Equal(t, string(want[r.Name]), string(p.Bytes()), "%s: every pack is the golden one or none", r.Name)
				answered++
			}
			require.NotZero(t, answered, "the requests of other partitions are answered")
			require.Less(t, answered, len(reqs))
		})
	}
}
