package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
)

// The committed checkpoint testdata/pinned.ckpt is the one the engine's
// TestCheckpointBytesArePinned pins: its fixed history (chunks of the golden
// corpus and two tenants, facts, a purge, over seven commits), encoded for
// analyzers "lexical=pinned" with catalog pinnedCatalog.
const (
	pinnedSum      = "blake3:cbcc74755787d637d5a2c3ebf5a091311ade712affbacd941c805b0429caf4cf"
	pinnedIdentity = "lexical=pinned"
	pinnedCatalog  = `{"catalog":"pinned"}`
	pinnedGens     = 7
)

func pinned(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "pinned.ckpt"))
	require.NoError(t, err)
	return raw
}

// decodeBytes writes raw to a file of its own and decodes it.
func decodeBytes(t testing.TB, raw []byte, identity string, gens int) (*Head, *Table, bool, error) {
	t.Helper()
	_, h, tbl, ok, err := decodeBytesAt(t, raw, identity, gens)
	return h, tbl, ok, err
}

// decodeBytesAt is decodeBytes, with the file's path.
func decodeBytesAt(t testing.TB, raw []byte, identity string, gens int) (string, *Head, *Table, bool, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.bin")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sum, err := Sum(raw)
	if err != nil {
		sum = "none"
	}
	h, tbl, ok, err := Decode("state.bin", f, sum, identity, gens)
	return path, h, tbl, ok, err
}

// inputOf returns the input that encodes to the checkpoint h and t were
// decoded from: its figures, and its rows by document.
func inputOf(t testing.TB, h *Head, tbl *Table) Input {
	t.Helper()
	in := Input{Head: *h, Identity: pinnedIdentity, Names: h.Terms, Placed: tbl.Len(),
		Catalog: func() ([]byte, error) { return tbl.Catalog(), nil }}
	chunks := map[string]Chunk{}
	for i := 0; i < tbl.Len(); {
		w, ok := tbl.Row(i)
		require.True(t, ok, "row %d: %v", i, tbl.Err())
		e, ok := tbl.Doc(len(in.Docs))
		require.True(t, ok, "document %d: %v", len(in.Docs), tbl.Err())
		require.Equal(t, [2]int{i, int(w.DocLen)}, [2]int{e.First, e.Len}, "document %d", len(in.Docs))
		d := Doc{Key: e.Key}
		for k := range int(w.DocLen) {
			r, ok := tbl.Row(i + k)
			require.True(t, ok)
			id, ok := tbl.ID(r)
			require.True(t, ok)
			nums, ok := tbl.Nums(r)
			require.True(t, ok)
			d.IDs, d.Nums = append(d.IDs, id), append(d.Nums, nums)
			chunks[id] = Chunk{Gen: int64(r.Gen), Line: r.Line, Hash: r.Hash, AnchorDay: r.AnchorDay, From: r.From, To: r.To,
				Tenant: tbl.Tenant(r), Purged: r.Flags&NoTerms != 0}
		}
		in.Docs = append(in.Docs, d)
		i += int(w.DocLen)
	}
	require.Equal(t, tbl.Docs(), len(in.Docs))
	in.Chunk = func(id string) Chunk { return chunks[id] }
	return in
}

// TestPinnedRoundTrip: the committed checkpoint is the pinned one, decodes
// (figures and every row, each ID found at its row), and encodes back to
// the same bytes from what was decoded.
func TestPinnedRoundTrip(t *testing.T) {
	raw := pinned(t)
	require.Equal(t, pinnedSum, evidence.Sum(raw))
	h, tbl, ok, err := decodeBytes(t, raw, pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	defer tbl.Close()
	require.Equal(t, int64(pinnedGens), h.Gen)
	require.Equal(t, pinnedCatalog, string(tbl.Catalog()))
	require.NotEmpty(t, h.Facts)
	require.NotEmpty(t, h.Purges)
	for i := range tbl.Len() {
		w, ok := tbl.Row(i)
		require.True(t, ok)
		id, ok := tbl.ID(w)
		require.True(t, ok)
		got, _, ok := tbl.Find(id)
		require.True(t, ok, "chunk %q", id)
		require.Equal(t, i, got, "chunk %q", id)
	}
	_, _, ok = tbl.Find("no such chunk")
	require.False(t, ok)
	require.NoError(t, tbl.Err())
	f, err := Encode(inputOf(t, h, tbl))
	require.NoError(t, err)
	require.Equal(t, raw, f.Bytes())
	sum, err := Sum(f.Head())
	require.NoError(t, err)
	want, err := Sum(raw)
	require.NoError(t, err)
	require.Equal(t, want, sum, "the head alone gives the manifest's checksum")

	// Stop is asked between runs: told to give up at its first question,
	// or at its third (a later run of documents or of blocks), Encode
	// stops; asked and never told, it gives the same bytes.
	for _, at := range []int64{1, 3} {
		in := inputOf(t, h, tbl)
		var asked atomic.Int64 // asked on every core
		in.Stop = func() bool { return asked.Add(1) >= at }
		_, err = Encode(in)
		require.ErrorIs(t, err, ErrStopped, "told at question %d", at)
	}
	in := inputOf(t, h, tbl)
	var asked atomic.Int64
	in.Stop = func() bool { asked.Add(1); return false }
	f, err = Encode(in)
	require.NoError(t, err)
	require.Equal(t, raw, f.Bytes())
	require.Greater(t, asked.Load(), int64(1))
}

// TestDecodePassesOver: a checkpoint of other analyzers, or of an older
// format, is passed over (not ok, no error); one whose head the manifest
// does not seal is ErrCorrupt.
func TestDecodePassesOver(t *testing.T) {
	raw := pinned(t)
	_, _, ok, err := decodeBytes(t, raw, "lexical=other", pinnedGens)
	require.NoError(t, err)
	require.False(t, ok)
	for _, magic := range Older {
		old := append([]byte(magic), raw[len(Format):]...)
		require.True(t, IsOlder(old))
		_, _, ok, err = decodeBytes(t, old, pinnedIdentity, pinnedGens)
		require.NoError(t, err, "%q", magic)
		require.False(t, ok)
	}
	path := filepath.Join(t.TempDir(), "state.bin")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, _, _, err = Decode("state.bin", f, "blake3:00", pinnedIdentity, pinnedGens)
	require.ErrorIs(t, err, storage.ErrCorrupt)
	require.ErrorContains(t, err, "state.bin: head hashes to ")
}

// TestClosedTable: Close unmaps the body; a read after it answers nothing
// and fails (Err, ErrCorrupt); what was read before stays as it was; a
// second Close does nothing. Readers racing Close (run with -race) get
// either the right answer or none, never a crash.
func TestClosedTable(t *testing.T) {
	raw := pinned(t)
	_, tbl, ok, err := decodeBytes(t, raw, pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	var ids []string
	var nums [][]uint32
	for i := range tbl.Len() {
		w, _ := tbl.Row(i)
		id, _ := tbl.ID(w)
		ns, _ := tbl.Nums(w)
		ids, nums = append(ids, id), append(nums, ns)
	}
	want := make([]string, len(ids))
	for i, id := range ids {
		want[i] = string([]byte(id))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 * len(ids) {
				i := (k + g) % len(ids)
				if got, _, ok := tbl.Find(ids[i]); ok {
					require.Equal(t, i, got)
				}
			}
		}()
	}
	require.NoError(t, tbl.Close())
	wg.Wait()
	require.NoError(t, tbl.Close())
	_, ok = tbl.Row(0)
	require.False(t, ok)
	_, _, ok = tbl.Find(ids[0])
	require.False(t, ok)
	require.ErrorIs(t, tbl.Err(), storage.ErrCorrupt)
	require.ErrorContains(t, tbl.Err(), "closed")
	require.Equal(t, want, ids, "IDs read before Close are copies")
	require.NotEmpty(t, nums[0])
}

// TestReadRows: ReadRows reads what the table's reads row by row do, the
// same IDs, terms (a purged chunk's nil, as Nums has them) and
// generations, for a whole document and for some of its rows, writing no
// other; its terms are capped, so that an append copies rather than write
// into the mapping; its IDs are copies that outlive Close; once the table
// is closed it answers false and the table's error says closed.
func TestReadRows(t *testing.T) {
	_, tbl, ok, err := decodeBytes(t, pinned(t), pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	var keep []string
	purged := 0
	for d := range tbl.Docs() {
		e, ok := tbl.Doc(d)
		require.True(t, ok)
		wantIDs, wantNums, wantGens := make([]string, e.Len), make([][]uint32, e.Len), make([]int64, e.Len)
		every := make([]int, e.Len)
		for k := range e.Len {
			w, ok := tbl.Row(e.First + k)
			require.True(t, ok)
			wantIDs[k], _ = tbl.ID(w)
			wantNums[k], _ = tbl.Nums(w)
			wantGens[k], every[k] = int64(w.Gen), k
			if wantNums[k] == nil {
				purged++
			}
		}
		ids, nums, gens := make([]string, e.Len), make([][]uint32, e.Len), make([]int64, e.Len)
		require.True(t, tbl.ReadRows(e.First, every, ids, nums, gens), "document %s", e.Key)
		require.Equal(t, wantIDs, ids, "document %s", e.Key)
		require.Equal(t, wantNums, nums, "document %s", e.Key)
		require.Equal(t, wantGens, gens, "document %s", e.Key)
		for k := range e.Len {
			require.Equal(t, wantNums[k] == nil, nums[k] == nil, "document %s, chunk %d: nil terms are a purged chunk's", e.Key, k)
			require.Equal(t, len(nums[k]), cap(nums[k]), "document %s, chunk %d: terms capped", e.Key, k)
		}
		keep = append(keep, ids...)

		last := e.Len - 1 // the last row alone: no other written
		ids, nums, gens = make([]string, e.Len), make([][]uint32, e.Len), make([]int64, e.Len)
		require.True(t, tbl.ReadRows(e.First, []int{last}, ids, nums, gens))
		require.Equal(t, wantIDs[last], ids[last])
		require.Equal(t, wantNums[last], nums[last])
		for k := range last {
			require.True(t, ids[k] == "" && nums[k] == nil && gens[k] == 0, "document %s: chunk %d written", e.Key, k)
		}
	}
	require.Positive(t, purged, "the pinned history purges a chunk")
	require.Equal(t, tbl.Len(), len(keep))
	want := slices.Clone(keep)
	require.NoError(t, tbl.Err())
	require.NoError(t, tbl.Close())
	require.Equal(t, want, keep, "copies stay as read after Close")
	require.False(t, tbl.ReadRows(0, []int{0}, make([]string, 1), make([][]uint32, 1), make([]int64, 1)))
	require.ErrorContains(t, tbl.Err(), "closed")
}

// firstDoc returns the table's first document and its rows' places in it,
// 0 to Len-1.
func firstDoc(t *testing.T, tbl *Table) (DocEntry, []int) {
	t.Helper()
	e, ok := tbl.Doc(0)
	require.True(t, ok)
	ks := make([]int, e.Len)
	for k := range ks {
		ks[k] = k
	}
	return e, ks
}

// TestPinnedTable: a Close while a request holds a pin closes the table
// (reads fail) but leaves the mapping, so the term numbers ReadRows handed
// out read as they did, until the last Unpin unmaps it; a Close with no
// pin unmaps at once; pins taken after Close (a request that found the
// state being replaced) unmap nothing twice.
func TestPinnedTable(t *testing.T) {
	mapped := func(path string) bool {
		raw, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Skipf("no /proc/self/maps here: %v", err)
		}
		return strings.Contains(string(raw), path)
	}
	open := func() (*Table, string) {
		path, _, tbl, ok, err := decodeBytesAt(t, pinned(t), pinnedIdentity, pinnedGens)
		require.NoError(t, err)
		require.True(t, ok)
		return tbl, path
	}
	readAll := func(tbl *Table) [][]uint32 {
		e, ks := firstDoc(t, tbl)
		nums := make([][]uint32, e.Len)
		require.True(t, tbl.ReadRows(e.First, ks, make([]string, e.Len), nums, make([]int64, e.Len)))
		return nums
	}

	tbl, path := open()
	require.True(t, mapped(path), "Decode maps the body")
	tbl.Pin()
	tbl.Pin()
	nums := readAll(tbl)
	want := make([][]uint32, len(nums))
	for k, ns := range nums {
		want[k] = slices.Clone(ns)
	}
	require.NotEmpty(t, slices.Concat(want...))
	require.NoError(t, tbl.Close())
	require.True(t, mapped(path), "pinned: Close leaves the mapping")
	_, ok := tbl.Row(0)
	require.False(t, ok, "reads fail after Close, pinned or not")
	tbl.Unpin()
	require.True(t, mapped(path), "one pin left")
	require.Equal(t, want, nums, "what was read reads the same while pinned")
	tbl.Unpin()
	require.False(t, mapped(path), "the last Unpin unmaps")
	tbl.Pin()
	tbl.Unpin()
	require.NoError(t, tbl.Close())

	tbl, path = open()
	tbl.Pin()
	tbl.Unpin()
	require.NoError(t, tbl.Close())
	require.False(t, mapped(path), "no pin: Close unmaps")
}

// TestPinsRaceClose: requests that pin the table, read a document's rows
// and read their term numbers before they unpin, racing a Close (run with
// -race): each either reads the numbers as they are or fails its read,
// never faults on an unmapped page; once the last unpins, the body is
// unmapped.
func TestPinsRaceClose(t *testing.T) {
	_, tbl, ok, err := decodeBytes(t, pinned(t), pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	e, ks := firstDoc(t, tbl)
	want := make([][]uint32, e.Len)
	for k := range ks {
		w, _ := tbl.Row(e.First + k)
		want[k], _ = tbl.Nums(w)
	}
	var wg sync.WaitGroup
	var read, failed atomic.Int64
	var once sync.Once
	readSome := make(chan struct{}) // closed once a request has read ten times: Close comes amid the reads
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tbl.Pin()
				nums := make([][]uint32, e.Len)
				if tbl.ReadRows(e.First, ks, make([]string, e.Len), nums, make([]int64, e.Len)) {
					for k, ns := range nums {
						if !slices.Equal(want[k], ns) {
							t.Errorf("row %d: %v, want %v", k, ns, want[k])
						}
					}
					read.Add(1)
				} else {
					failed.Add(1)
				}
				tbl.Unpin()
				if i == 10 {
					once.Do(func() { close(readSome) })
				}
			}
		}()
	}
	<-readSome
	require.NoError(t, tbl.Close())
	wg.Wait()
	require.Equal(t, int64(8*1000), read.Load()+failed.Load())
	require.GreaterOrEqual(t, read.Load(), int64(10), "reads before Close")
	t.Logf("%d reads before Close, %d after", read.Load(), failed.Load())
	require.Zero(t, tbl.pins)
	require.Nil(t, tbl.unmap, "the last Unpin unmapped the body")
}

// FuzzDecode decodes mutations of the pinned checkpoint and reads every
// row, ID, term list and lookup of what decodes: nothing may panic or read
// out of bounds, and a lookup that answers answers the right row. With
// reseal set the harness seals the head anew and, once decoded, every
// body block, as a forger would, so that the mutations reach the parser
// and the block validators rather than stopping at a checksum.
func FuzzDecode(f *testing.F) {
	raw := pinned(f)
	f.Add(raw, false)
	f.Add(raw, true)
	f.Add(raw[:len(raw)/2], true)
	f.Fuzz(func(t *testing.T, raw []byte, reseal bool) {
		if reseal && len(raw) >= len(Format)+8 {
			n := len(Format) + 8 + int(min(uint64(len(raw)), leUint64(raw[len(Format):])))
			if n+32 <= len(raw) {
				seal := blake3.Sum256(raw[:n])
				copy(raw[n:], seal[:])
			}
		}
		_, tbl, ok, err := decodeBytes(t, raw, pinnedIdentity, pinnedGens)
		if err != nil {
			require.ErrorIs(t, err, storage.ErrCorrupt)
			return
		}
		if !ok {
			return
		}
		defer tbl.Close()
		if reseal {
			for _, s := range []*section{&tbl.rows, &tbl.byID, &tbl.ids, &tbl.numSec, &tbl.docs, &tbl.keys} {
				for b := 0; b*s.block < s.length; b++ {
					sum := blake3.Sum256(s.data[b*s.block : min((b+1)*s.block, s.length)])
					copy(s.sums[32*b:], sum[:])
				}
			}
		}
		for i := range tbl.Len() {
			w, ok := tbl.Row(i)
			if !ok {
				break
			}
			_ = tbl.Tenant(w)
			_, _ = tbl.Nums(w)
			id, ok := tbl.ID(w)
			if !ok {
				break
			}
			if got, r, ok := tbl.Find(id); ok {
				have, _ := tbl.ID(r)
				require.Equal(t, id, have)
				_ = got
			}
		}
		for k := range tbl.Docs() {
			e, ok := tbl.Doc(k)
			if !ok {
				break
			}
			if got, ok := tbl.FindDoc(e.Key); ok {
				require.Equal(t, e.Key, got.Key)
			}
			require.LessOrEqual(t, e.First+e.Len, tbl.Len(), "a validated entry's rows")
		}
		if err := tbl.Err(); err != nil && !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("a failed read is not ErrCorrupt: %v", err)
		}
	})
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestDocumentTable: every document of the pinned checkpoint is found by
// its key at its rows, a key between two (or past the last) is not, and
// Encode refuses documents out of key order, or a tenant without figures.
func TestDocumentTable(t *testing.T) {
	h, tbl, ok, err := decodeBytes(t, pinned(t), pinnedIdentity, pinnedGens)
	require.NoError(t, err)
	require.True(t, ok)
	defer tbl.Close()
	require.Greater(t, tbl.Docs(), 2)
	for k := range tbl.Docs() {
		e, ok := tbl.Doc(k)
		require.True(t, ok)
		got, ok := tbl.FindDoc(e.Key)
		require.True(t, ok, "document %q", e.Key)
		require.Equal(t, e, got)
		_, ok = tbl.FindDoc(e.Key + "\x00") // sorts after e, before the next
		require.False(t, ok, "a key just after %q", e.Key)
		w, ok := tbl.Row(e.First)
		require.True(t, ok)
		require.Equal(t, [2]int{e.First, e.Len}, [2]int{int(w.DocStart), int(w.DocLen)})
	}
	_, ok = tbl.FindDoc("")
	require.False(t, ok)
	require.NoError(t, tbl.Err())

	in := inputOf(t, h, tbl)
	in.Docs[0], in.Docs[1] = in.Docs[1], in.Docs[0]
	_, err = Encode(in)
	require.ErrorContains(t, err, "out of order")
	in = inputOf(t, h, tbl)
	in.Head.Tenants = in.Head.Tenants[1:]
	_, err = Encode(in)
	require.ErrorContains(t, err, "has no figures")
}
