package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/fsutil"
)

// testChunk returns a prepared chunk with every field set.
func testChunk(t testing.TB, id, text string) *evidence.Chunk {
	t.Helper()
	c := &evidence.Chunk{ID: id, DocID: "doc-" + id, Version: "2024-06-01", Text: text,
		SourceURL: "https://example.test/" + id, Connector: "test",
		RetrievedAt: asof.MustDate("2024-06-02").Start(),
		Anchor:      asof.Anchor{At: asof.MustDate("2024-06-01").Start(), Field: "published"},
		Valid:       asof.Interval{From: asof.MustDate("2024-06-01"), To: asof.MustDate("2025-01-01")},
		Tenant:      "acme", Meta: map[string]string{"kind": "guidance", "lang": "en"}}
	require.NoError(t, c.Prepare())
	return c
}

func testHeader() BatchHeader {
	return BatchHeader{Generation: 3, Prev: evidence.Sum([]byte("batch 2")), CommittedAt: "2024-06-03T10:00:00Z"}
}

func TestEncodeBatchRoundTrip(t *testing.T) {
	chunks := []*evidence.Chunk{
		testChunk(t, "a", "Records are kept for ten years."),
		testChunk(t, "b", "Zeilen mit Umlauten: äöü, ein Tab\tund\nzwei Zeilen, <html> & \"quotes\" \u2028."),
		{ID: "bare", DocID: "d", Text: "no dates, no meta, no tenant", ContentHash: "blake3:" + strings.Repeat("0", 64)},
	}
	raw, err := EncodeBatch(testHeader(), Contents{Chunks: chunks})
	require.NoError(t, err)
	h, c, err := DecodeBatch("b.jsonl", raw)
	back := c.Chunks
	require.NoError(t, err)
	want := testHeader()
	want.Format = ChunksOnlyFormat
	require.Equal(t, want, h)
	require.Len(t, back, len(chunks))
	for i := range chunks {
		require.Empty(t, Differs(chunks[i], back[i]), "chunk %s", chunks[i].ID)
	}
	// Encoding what was decoded gives the same bytes: the format has one
	// spelling of each batch.
	again, err := EncodeBatch(h, Contents{Chunks: back})
	require.NoError(t, err)
	require.Equal(t, string(raw), string(again))
}

// A batch with facts is written in BatchFormat, facts after chunks, and
// reads back to the same facts and bytes; a fact line that Prepare refuses,
// or a fact in a chunks-only batch, is ErrCorrupt naming file:line.
func TestEncodeBatchFacts(t *testing.T) {
	chunks := []*evidence.Chunk{testChunk(t, "a", "Records are kept for ten years.")}
	facts := []*evidence.Fact{
		{Kind: evidence.FactSuperseded, ChunkID: "a", By: "b", End: asof.MustDate("2024-05-28"), Anchor: time.Date(2024, 5, 28, 0, 0, 0, 0, time.UTC)},
		{Kind: evidence.FactRetracted, ChunkID: "x", End: asof.MustDate("2024-06-01"), Anchor: time.Date(2024, 6, 2, 9, 30, 0, 0, time.UTC)},
	}
	raw, err := EncodeBatch(testHeader(), Contents{Chunks: chunks, Facts: facts})
	require.NoError(t, err)
	h, got, err := DecodeBatch("b.jsonl", raw)
	back, backFacts := got.Chunks, got.Facts
	require.NoError(t, err)
	require.Equal(t, BatchFormat, h.Format)
	require.Len(t, back, 1)
	require.Equal(t, facts, backFacts)
	again, err := EncodeBatch(h, Contents{Chunks: back, Facts: backFacts})
	require.NoError(t, err)
	require.Equal(t, string(raw), string(again))

	body, err := fsutil.UnsealText(raw)
	require.NoError(t, err)
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown kind", `{"fact":"superseded"`, `{"fact":"forgotten"`, `b.jsonl:3: fact on chunk "a"`},
		{"end missing", `"end":"2024-06-01",`, `"end":"",`, `b.jsonl:4: fact on chunk "x"`},
		{"fact in a chunks-only batch", BatchFormat, ChunksOnlyFormat, `b.jsonl: facts, purges or redactions in a batch of format "evpack-chunks/2"`},
		{"chunk after facts", "", "", `b.jsonl:4: a chunk after the batch's facts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := strings.Replace(string(body), tc.from, tc.to, 1)
			if tc.from == "" {
				lines := strings.SplitAfter(string(body), "\n")
				edited = lines[0] + lines[2] + lines[3] + lines[1]
			}
			require.NotEqual(t, string(body), edited)
			_, _, err := DecodeBatch("b.jsonl", fsutil.SealText([]byte(edited)))
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestEncodeBatchRefusesWhatWouldChange(t *testing.T) {
	cases := []struct {
		name, reason string
		edit         func(c *evidence.Chunk)
		field        string
	}{
		{"invalid UTF-8 in the ID", "JSON would store U+FFFD: the chunk would come back under another ID",
			func(c *evidence.Chunk) { c.ID = "a\xff" }, "id"},
		{"invalid UTF-8 in a meta value", "a filter on the value would stop matching after a reopen",
			func(c *evidence.Chunk) { c.Meta["kind"] = "gu\xc3idance" }, "meta"},
		{"invalid UTF-8 in a meta key", "the key would change",
			func(c *evidence.Chunk) { c.Meta["k\xfe"] = "v" }, "meta"},
		{"invalid UTF-8 in the source URL", "the citation would point elsewhere",
			func(c *evidence.Chunk) { c.SourceURL = "https://x/\xff" }, "source_url"},
		{"sub-second retrieval time", "stored at whole seconds, it would read back earlier",
			func(c *evidence.Chunk) { c.RetrievedAt = c.RetrievedAt.Add(500_000_000) }, "retrieved_at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testChunk(t, "a", "text")
			tc.edit(c)
			_, err := EncodeBatch(testHeader(), Contents{Chunks: []*evidence.Chunk{testChunk(t, "ok", "fine"), c}})
			require.ErrorIs(t, err, ErrUnstorable, tc.reason)
			require.Contains(t, err.Error(), "its "+tc.field+" would read back changed", tc.reason)
		})
	}
}

// TestLongBatchLine stores a chunk whose line is far longer than a
// bufio.Scanner takes by default (64 KiB): nothing may limit a line's
// length, or a stored batch would become unreadable. An earlier reader
// capped lines at 64 MiB; EVPACK_LONG_LINE=1 tries 65 MiB too (7 s, 400 MB,
// too much for every run).
func TestLongBatchLine(t *testing.T) {
	sizes := []int{1 << 20}
	if os.Getenv("EVPACK_LONG_LINE") != "" {
		sizes = append(sizes, 65<<20)
	}
	for _, n := range sizes {
		text := strings.Repeat("long line ", n/10)
		c := &evidence.Chunk{ID: "long", DocID: "d", Text: text}
		c.ContentHash = c.ComputeHash()
		raw, err := EncodeBatch(testHeader(), Contents{Chunks: []*evidence.Chunk{c, testChunk(t, "after", "the line after it")}})
		require.NoError(t, err, "%d bytes", n)
		_, got, err := DecodeBatch("long.jsonl", raw)
		back := got.Chunks
		require.NoError(t, err, "%d bytes", n)
		require.Len(t, back, 2)
		require.Equal(t, len(text), len(back[0].Text))
		require.Empty(t, Differs(c, back[0]))
		require.Equal(t, "after", back[1].ID)
	}
}

// validManifest is a manifest of two batches and stored vectors.
func validManifest() *Manifest {
	sum := func(s string) string { return evidence.Sum([]byte(s)) }
	return &Manifest{Format: Format, Generation: 2, Docs: 5, Tokens: 40,
		Batches: []Batch{
			{Generation: 1, File: BatchName(1), Sum: sum("1"), Chunks: 2, CommittedAt: "2024-06-01T00:00:00Z"},
			{Generation: 2, File: BatchName(2), Sum: sum("2"), Chunks: 3, CommittedAt: "2024-06-02T00:00:00Z"},
		},
		Dense: &Dense{File: "dense-00000002.bin", Sum: sum("d"), Embedder: "sif", Graph: "graph-00000002.bin", GraphSum: sum("g"), GraphBuild: "m=16"}}
}

func TestDecodeManifest(t *testing.T) {
	raw, err := EncodeManifest(validManifest())
	require.NoError(t, err)
	m, err := DecodeManifest("MANIFEST.json", raw, nil)
	require.NoError(t, err)
	require.Equal(t, validManifest(), m)

	// A checkpoint of generation 1, then a generation of facts alone: Open
	// adds those facts to it.
	facts := validManifest()
	facts.Docs, facts.Batches[1].Chunks, facts.Batches[1].Facts = 2, 0, 1
	facts.Checkpoint, facts.CheckpointSum = CheckpointName(1), facts.Batches[0].Sum
	raw, err = EncodeManifest(facts)
	require.NoError(t, err)
	m, err = DecodeManifest("MANIFEST.json", raw, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), m.CheckpointGeneration())
	// A delta level of generation 2 over it: Open reads both.
	delta := facts.Clone()
	delta.Delta, delta.DeltaSum = DeltaName(2), facts.Batches[1].Sum
	raw, err = EncodeManifest(delta)
	require.NoError(t, err)
	m, err = DecodeManifest("MANIFEST.json", raw, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 2}, []int64{m.CheckpointGeneration(), m.DeltaGeneration(), m.LevelGeneration()})
	require.True(t, m.Names(DeltaName(2)), "the delta is one of the index's files")
	raw, err = EncodeManifest(validManifest())
	require.NoError(t, err)

	sealed := func(edit func(m *Manifest)) []byte {
		m := validManifest()
		edit(m)
		body, err := json.MarshalIndent(m, "", "  ")
		require.NoError(t, err)
		return fsutil.SealText(append(body, '\n'))
	}
	// withField is a manifest's stored form under format, with a field
	// no Manifest has, as a later format might add.
	withField := func(format string) []byte {
		m := validManifest()
		m.Format = format
		body, err := json.MarshalIndent(m, "", "  ")
		require.NoError(t, err)
		body = bytes.Replace(body, []byte("{\n"), []byte("{\n  \"levels\": [1, 2],\n"), 1)
		return fsutil.SealText(append(body, '\n'))
	}
	laterField := withField("evpack-index/12") // under this format it is damage: "unknown field" below
	cases := []struct {
		name, reason string
		raw          []byte
		want         error
		says         string
	}{
		{"a later format", "a later evpack's index is not guessed at, nor called corrupt",
			sealed(func(m *Manifest) { m.Format = "evpack-index/4" }), ErrNewerFormat,
			"format evpack-index/4, this evpack reads evpack-index/3 and earlier; open the index with the evpack that wrote it"},
		{"a later format with a field this one lacks", "what a later format adds is not what the error names",
			laterField, ErrNewerFormat, "format evpack-index/12, this evpack reads evpack-index/3 and earlier"},
		{"a format number with a leading zero", "no evpack writes it: not a later format",
			sealed(func(m *Manifest) { m.Format = "evpack-index/04" }), ErrCorrupt, `format "evpack-index/04"`},
		{"another kind of file's format", "a batch's format in a manifest is damage, not a later index",
			sealed(func(m *Manifest) { m.Format = "evpack-chunks/9" }), ErrCorrupt, `format "evpack-chunks/9"`},
		{"the unsealed format 1", "an index from before sealed storage must be rebuilt, and the error says how",
			[]byte(`{"format":"evpack-index/1","generation":1}`), ErrOldFormat, "rebuild the index by ingesting its sources"},
		{"batches not 1..N", "a gap in the chain is a lost generation",
			sealed(func(m *Manifest) { m.Batches[1].Generation = 3; m.Batches[1].File = BatchName(3) }), ErrCorrupt, "batch 2 names generation 3"},
		{"fewer batches than generations", "every generation has its batch",
			sealed(func(m *Manifest) { m.Generation = 3 }), ErrCorrupt, "generation 3 but 2 batches"},
		{"docs not the sum of the batches' chunks", "BM25 statistics would be wrong",
			sealed(func(m *Manifest) { m.Docs = 6 }), ErrCorrupt, "docs 6 but the batches hold 5 chunks"},
		{"batch file escaping the directory", "a manifest must not name files outside the index",
			sealed(func(m *Manifest) { m.Batches[0].File = "../x" }), ErrCorrupt, `"../x"`},
		{"dense file escaping the directory", "the same for the vectors",
			sealed(func(m *Manifest) { m.Dense.File = "../x" }), ErrCorrupt, "dense: bad file name"},
		{"graph file hidden", "dot files are the temp files of atomic writes",
			sealed(func(m *Manifest) { m.Dense.Graph = ".graph" }), ErrCorrupt, "dense: bad file name"},
		{"bad checksum", "a checksum that is not BLAKE3 hex checks nothing",
			sealed(func(m *Manifest) { m.Batches[0].Sum = "md5:00" }), ErrCorrupt, `bad checksum "md5:00"`},
		{"empty batch", "a commit adds at least one chunk",
			sealed(func(m *Manifest) { m.Batches[0].Chunks = 0; m.Docs = 3 }), ErrCorrupt, "0 chunks"},
		{"checkpoint before a purge", "Open adds chunks and facts to an earlier generation's state, never a purge",
			sealed(func(m *Manifest) {
				m.Checkpoint, m.CheckpointSum = CheckpointName(1), m.Batches[0].Sum
				m.Batches[1].Purges, m.Purged = 1, 1
			}), ErrCorrupt,
			`checkpoint "state-00000001.bin" is of generation 1, but generation 2 purges after it`},
		{"checkpoint after the last generation", "a state the index never had",
			sealed(func(m *Manifest) { m.Checkpoint, m.CheckpointSum = CheckpointName(3), m.Batches[0].Sum }), ErrCorrupt,
			`checkpoint "state-00000003.bin" (checksum`},
		{"checkpoint of no generation", "a name CheckpointName never gives",
			sealed(func(m *Manifest) { m.Checkpoint, m.CheckpointSum = "state-2.bin", m.Batches[0].Sum }), ErrCorrupt,
			`checkpoint "state-2.bin" (checksum`},
		{"delta without a checkpoint", "a delta level holds only what came after its checkpoint",
			sealed(func(m *Manifest) { m.Delta, m.DeltaSum = DeltaName(2), m.Batches[0].Sum }), ErrCorrupt,
			`delta "delta-00000002.bin" without a checkpoint`},
		{"delta of the checkpoint's generation", "a delta is of a later generation than the checkpoint under it",
			sealed(func(m *Manifest) {
				m.Checkpoint, m.CheckpointSum = CheckpointName(1), m.Batches[0].Sum
				m.Delta, m.DeltaSum = DeltaName(1), m.Batches[0].Sum
			}), ErrCorrupt, `delta "delta-00000001.bin" (checksum`},
		{"delta after the last generation", "a state the index never had",
			sealed(func(m *Manifest) {
				m.Checkpoint, m.CheckpointSum = CheckpointName(1), m.Batches[0].Sum
				m.Delta, m.DeltaSum = DeltaName(3), m.Batches[0].Sum
			}), ErrCorrupt, `delta "delta-00000003.bin" (checksum`},
		{"delta without a checksum", "its head's seal is what Open checks it by",
			sealed(func(m *Manifest) {
				m.Checkpoint, m.CheckpointSum = CheckpointName(1), m.Batches[0].Sum
				m.Delta = DeltaName(2)
			}), ErrCorrupt, `delta "delta-00000002.bin" (checksum ""`},
		{"unknown field", "a field this evpack does not know may change the meaning",
			fsutil.SealText([]byte(`{"format":"evpack-index/2","generation":0,"docs":0,"tokens":0,"batches":[],"extra":1}` + "\n")), ErrCorrupt, `unknown field "extra"`},
		{"two values", "data after the manifest",
			fsutil.SealText([]byte(`{"format":"evpack-index/2","generation":0,"docs":0,"tokens":0,"batches":[]} {}` + "\n")), ErrCorrupt, "data after the manifest"},
		{"truncated", "a torn write",
			raw[:len(raw)-10], ErrCorrupt, fsutil.ErrChecksum.Error()},
		{"one bit flipped", "a disk error",
			flipBit(raw, 40), ErrCorrupt, fsutil.ErrChecksum.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeManifest("MANIFEST.json", tc.raw, nil)
			require.ErrorIs(t, err, tc.want, tc.reason)
			if tc.want != ErrCorrupt {
				require.NotErrorIs(t, err, ErrCorrupt, "an index of another format is not called damaged")
			}
			require.Contains(t, err.Error(), tc.says, tc.reason)
			require.Contains(t, err.Error(), "MANIFEST.json", "the error names the file")
		})
	}
}

func flipBit(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 1
	return out
}

// committedIndex returns a closed index directory at generation 1 (one
// batch of one chunk) and its manifest.
func committedIndex(t *testing.T) (string, *Manifest) {
	t.Helper()
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true})
	require.NoError(t, err)
	defer d.Close()
	name := ChunksDir + "/" + BatchName(1)
	c, err := d.Begin(1, []string{name}, nil)
	require.NoError(t, err)
	raw, err := EncodeBatch(BatchHeader{Generation: 1, CommittedAt: "2024-06-01T00:00:00Z"}, Contents{Chunks: []*evidence.Chunk{testChunk(t, "a", "text")}})
	require.NoError(t, err)
	sum, err := c.Write(name, raw)
	require.NoError(t, err)
	m := &Manifest{Format: Format, Generation: 1, Docs: 1, Tokens: 1,
		Batches: []Batch{{Generation: 1, File: BatchName(1), Sum: sum, Chunks: 1, CommittedAt: "2024-06-01T00:00:00Z"}}}
	require.NoError(t, c.Publish(m))
	require.NoFileExists(t, filepath.Join(dir, PendingName))
	return dir, m
}

// writePending writes p as the index's commit record, as a crash in a
// commit would leave it.
func writePending(t *testing.T, dir string, p pending) {
	t.Helper()
	p.Format = pendingFormat
	raw, err := json.Marshal(&p)
	require.NoError(t, err)
	require.NoError(t, fsutil.WriteAtomic(filepath.Join(dir, PendingName), fsutil.SealText(append(raw, '\n'))))
}

func TestRecover(t *testing.T) {
	batch1, batch2 := ChunksDir+"/"+BatchName(1), ChunksDir+"/"+BatchName(2)
	cases := []struct {
		name, reason string
		pending      *pending // nil: no record
		above        uint64   // lexical documents after the manifest's generation
		beyond       uint64   // of those, documents after the record's generation
		rollbackErr  error
		wantErr      error
		wantRollback bool
		removed      []string // files gone after Recover (the record among them when it was settled)
		kept         []string // files still there
	}{
		{name: "no record, nothing above", reason: "a clean shutdown: nothing to do",
			kept: []string{batch1}},
		{name: "no record, documents above", reason: "lexical documents no commit explains: refuse, delete nothing",
			above: 3, wantErr: ErrCorrupt, kept: []string{batch1}},
		{name: "record of the manifest's generation", reason: "the crash came after the manifest: the generation stays, its obsolete files and the record go",
			pending: &pending{Generation: 1, Writes: []string{batch1}, Obsolete: []string{"dense-00000000.bin"}},
			removed: []string{"dense-00000000.bin", PendingName}, kept: []string{batch1}},
		{name: "record of the manifest's generation, documents above", reason: "documents after a committed generation: nothing explains them",
			pending: &pending{Generation: 1, Writes: []string{batch1}}, above: 2, wantErr: ErrCorrupt,
			kept: []string{batch1, PendingName}},
		{name: "record of the next generation", reason: "the crash came before the manifest: roll back the lexical index and remove what the commit wrote",
			pending: &pending{Generation: 2, Writes: []string{batch2, "dense-00000002.bin"}, Obsolete: []string{"dense-00000001.bin"}}, above: 4,
			wantRollback: true, removed: []string{batch2, "dense-00000002.bin", PendingName}, kept: []string{batch1, "dense-00000001.bin"}},
		{name: "record of the next generation, documents beyond it", reason: "documents of a generation no record names: refuse, delete nothing",
			pending: &pending{Generation: 2, Writes: []string{batch2}}, above: 5, beyond: 1, wantErr: ErrCorrupt,
			kept: []string{batch1, batch2, PendingName}},
		{name: "record of the next generation, nothing above", reason: "no document above, but a purge deletes documents: the caller rolls back, then the files go",
			pending: &pending{Generation: 2, Writes: []string{batch2}}, wantRollback: true,
			removed: []string{batch2, PendingName}, kept: []string{batch1}},
		{name: "record of the next generation, rollback fails", reason: "the record must stay for the next Open to try again",
			pending: &pending{Generation: 2, Writes: []string{batch2}}, above: 1, rollbackErr: errors.New("disk on fire"),
			wantRollback: true, kept: []string{batch1, batch2, PendingName}},
		{name: "record of another generation", reason: "a record the manifest cannot explain: refuse, delete nothing",
			pending: &pending{Generation: 3, Writes: []string{ChunksDir + "/" + BatchName(3)}}, above: 1, wantErr: ErrCorrupt,
			kept: []string{batch1, ChunksDir + "/" + BatchName(3), PendingName}},
		{name: "record of an earlier generation", reason: "likewise",
			pending: &pending{Generation: 0, Writes: []string{batch1}}, wantErr: ErrCorrupt,
			kept: []string{batch1, PendingName}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, m := committedIndex(t)
			if p := tc.pending; p != nil {
				writePending(t, dir, *p)
				for _, f := range append(append([]string(nil), p.Writes...), p.Obsolete...) {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("data of "+f), 0o644))
					}
				}
			}
			d, err := Open(dir, Options{})
			require.NoError(t, err, "Open reads the record; Recover decides")
			defer d.Close()
			rolledBack := 0
			above := func(g int64) (uint64, error) {
				if g > m.Generation {
					return tc.beyond, nil
				}
				return tc.above, nil
			}
			did, err := d.Recover(above, func() error { rolledBack++; return tc.rollbackErr })
			switch {
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr, tc.reason)
				require.Contains(t, err.Error(), "nothing was deleted", tc.reason)
			case tc.rollbackErr != nil:
				require.ErrorIs(t, err, tc.rollbackErr, tc.reason)
			default:
				require.NoError(t, err, tc.reason)
				if tc.pending != nil {
					require.NotEmpty(t, did, "Recover says what it did")
				}
			}
			require.Equal(t, map[bool]int{true: 1, false: 0}[tc.wantRollback], rolledBack, "rollback calls: %s", tc.reason)
			for _, f := range tc.removed {
				require.NoFileExists(t, filepath.Join(dir, f), tc.reason)
			}
			for _, f := range tc.kept {
				require.FileExists(t, filepath.Join(dir, f), tc.reason)
			}
			require.Equal(t, m, d.Manifest(), "Recover never changes the manifest")
		})
	}
}

// TestOpenAfterInterruptedCreate: creating an index makes the lock file and
// chunks/ before the manifest, so a crash there leaves a directory with no
// manifest. Only that exact residue may be taken as a new index; anything
// more is an index that lost its manifest.
func TestOpenAfterInterruptedCreate(t *testing.T) {
	cases := []struct {
		name, reason string
		residue      func(dir string) error
		want         error // nil: Open creates the index
	}{
		{"lock file only", "the first step of a creation",
			func(dir string) error { return os.WriteFile(filepath.Join(dir, LockName), nil, 0o644) }, nil},
		{"lock and an empty chunks directory", "a crash between mkdir chunks/ and the manifest's write",
			func(dir string) error {
				os.WriteFile(filepath.Join(dir, LockName), nil, 0o644)
				os.WriteFile(filepath.Join(dir, "."+ManifestName+".tmp-123"), []byte("{"), 0o644)
				return os.Mkdir(filepath.Join(dir, ChunksDir), 0o755)
			}, nil},
		{"a batch file but no manifest", "the manifest of a real index was lost: never start over on top of it",
			func(dir string) error {
				os.Mkdir(filepath.Join(dir, ChunksDir), 0o755)
				return os.WriteFile(filepath.Join(dir, ChunksDir, BatchName(1)), []byte("x"), 0o644)
			}, ErrCorrupt},
		{"a lexical directory but no manifest", "likewise",
			func(dir string) error { return os.Mkdir(filepath.Join(dir, LexicalDir), 0o755) }, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, tc.residue(dir))
			d, err := Open(dir, Options{Create: true})
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want, tc.reason)
				require.NoFileExists(t, filepath.Join(dir, ManifestName), "nothing written")
				return
			}
			require.NoError(t, err, tc.reason)
			defer d.Close()
			require.Zero(t, d.Manifest().Generation)
			require.DirExists(t, filepath.Join(dir, ChunksDir))
		})
	}
}

// A purge generation's batch holds purge lines; a rewritten batch keeps
// every field of a purged chunk but its text, with the counts its text gave.
// Both read back to the same contents and bytes; a redaction that keeps
// text, or claims an earlier generation, is ErrCorrupt.
func TestEncodeBatchPurges(t *testing.T) {
	purge, err := EncodeBatch(testHeader(), Contents{Purges: []Purge{{ChunkID: "a", ContentHash: evidence.Sum([]byte("a")), Reason: "erasure request 17"}}})
	require.NoError(t, err)
	h, c, err := DecodeBatch("p.jsonl", purge)
	require.NoError(t, err)
	require.Equal(t, BatchFormat, h.Format)
	require.Equal(t, []Purge{{ChunkID: "a", ContentHash: evidence.Sum([]byte("a")), Reason: "erasure request 17"}}, c.Purges)

	gone := testChunk(t, "a", "Records are kept for ten years.")
	gone.Text = ""
	kept := testChunk(t, "b", "Other text.")
	red := Contents{Chunks: []*evidence.Chunk{gone, kept}, Redacted: map[string]Redaction{"a": {Generation: 5, Tokens: 6, Terms: 4}}}
	raw, err := EncodeBatch(testHeader(), red)
	require.NoError(t, err)
	h, back, err := DecodeBatch("r.jsonl", raw)
	require.NoError(t, err)
	require.Equal(t, BatchFormat, h.Format)
	require.Equal(t, red.Redacted, back.Redacted)
	require.Empty(t, Differs(gone, back.Chunks[0]))
	again, err := EncodeBatch(h, back)
	require.NoError(t, err)
	require.Equal(t, string(raw), string(again))

	_, err = EncodeBatch(testHeader(), Contents{Chunks: []*evidence.Chunk{kept}, Redacted: map[string]Redaction{"b": {Generation: 5}}})
	require.ErrorIs(t, err, ErrUnstorable, "a redacted chunk keeps no text")
	body, err := fsutil.UnsealText(raw)
	require.NoError(t, err)
	early := strings.Replace(string(body), `"purged":{"generation":5`, `"purged":{"generation":3`, 1)
	require.NotEqual(t, string(body), early)
	_, _, err = DecodeBatch("r.jsonl", fsutil.SealText([]byte(early)))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "r.jsonl:2: chunk \"a\": a redaction keeps no text and comes from a later generation")
}

// volumeHistory builds, as commit.Write would, the manifest of n
// generations of one chunk each, and the volume files its commits wrote (by
// name).
func volumeHistory(t *testing.T, n int64) (*Manifest, map[string][]byte) {
	t.Helper()
	m := &Manifest{Format: Format}
	files := map[string][]byte{}
	for g := int64(1); g <= n; g++ {
		m.Generation = g
		write, obsolete := m.PlanVolumes(nil)
		require.Empty(t, obsolete, "generation %d: only a rewrite replaces a volume", g)
		m.Batches = append(m.Batches, Batch{Generation: g, File: BatchName(g), Sum: evidence.Sum([]byte(BatchName(g))), Chunks: 1, CommittedAt: "2024-06-01T00:00:00Z"})
		m.Docs++
		for _, i := range write {
			raw, err := EncodeVolume(m.VolumeEntries(i))
			require.NoError(t, err)
			m.Volumes[i].Sum = evidence.Sum(raw)
			files[m.Volumes[i].File] = raw
		}
	}
	return m, files
}

// TestManifestVolumes (issue 30): the stored manifest holds the batch
// entries after its volumes, fewer than VolumeSize whatever the history;
// it decodes, volumes read back, to the manifest in memory; a rewrite of an
// entry in a volume writes that volume again under a new name; and a
// volume that is missing, edited or of the wrong span makes the manifest
// corrupt, naming the volume.
func TestManifestVolumes(t *testing.T) {
	n := int64(2*VolumeSize + 10)
	m, files := volumeHistory(t, n)
	require.Equal(t, []Volume{
		{File: "batches-00000256.00000256.json", Sum: m.Volumes[0].Sum, Last: 256},
		{File: "batches-00000512.00000512.json", Sum: m.Volumes[1].Sum, Last: 512},
	}, m.Volumes)
	require.Len(t, files, 2)
	raw, err := EncodeManifest(m)
	require.NoError(t, err)
	body, err := fsutil.UnsealText(raw)
	require.NoError(t, err)
	var stored Manifest
	require.NoError(t, json.Unmarshal(body, &stored))
	require.Len(t, stored.Batches, 10, "the stored manifest holds the entries after the last volume")
	require.Equal(t, int64(513), stored.Batches[0].Generation)
	read := func(files map[string][]byte) func(string) ([]byte, error) {
		return func(f string) ([]byte, error) {
			if raw, ok := files[f]; ok {
				return raw, nil
			}
			return nil, fmt.Errorf("open %s: %w", f, fs.ErrNotExist)
		}
	}
	back, err := DecodeManifest("MANIFEST.json", raw, read(files))
	require.NoError(t, err)
	require.Equal(t, m, back)
	require.Equal(t, []string{"batches-00000256.00000256.json", "batches-00000512.00000512.json", "chunks/00000001.jsonl"}, namedFiles(back)[:3])

	// Names answers as Files does, without listing: every file named, and
	// none of the near misses.
	named := back.Clone()
	named.Batches[2].Analysis, named.Batches[2].AnalysisSum = AnalysisName(3), named.Batches[2].Sum
	named.Batches[4].File, named.Batches[4].Chain = RedactedName(5, 9), named.Batches[4].Sum
	named.Checkpoint, named.CheckpointSum = CheckpointName(n), named.Batches[0].Sum
	named.Dense = &Dense{File: DenseName(n), Sum: named.Batches[0].Sum, Graph: GraphName(n), GraphSum: named.Batches[0].Sum}
	for _, f := range namedFiles(named) {
		require.True(t, named.Names(f), "%s is named", f)
	}
	for _, f := range []string{"chunks/" + BatchName(5), "chunks/" + AnalysisName(4), "chunks/" + BatchName(n+1), "chunks/00000000.jsonl",
		"chunks/x", "chunks/", "chunks/99999999999999999999999.jsonl", BatchName(1), "batches-00000256.00000300.json",
		CheckpointName(n - 1), DenseName(1), GraphName(1), ManifestName, "chunks/../" + BatchName(1)} {
		require.False(t, named.Names(f), "%s is not named", f)
		require.NotContains(t, namedFiles(named), f)
	}

	// A purge at generation n+1 rewrites the entry of generation 300, in
	// the second volume: that volume is written again, the first is not.
	p := m.Clone()
	p.Generation = n + 1
	write, obsolete := p.PlanVolumes([]int64{300, 301, 511})
	require.Equal(t, []int{1}, write)
	require.Equal(t, []string{"batches-00000512.00000512.json"}, obsolete)
	require.Equal(t, "batches-00000512.00000523.json", p.Volumes[1].File)
	require.Equal(t, m.Volumes[1].File, "batches-00000512.00000512.json", "the plan changes its own copy of the volumes")
	write, obsolete = m.Clone().PlanVolumes([]int64{n}) // an entry of the manifest's own
	require.Empty(t, write)
	require.Empty(t, obsolete)

	// An index of the format before volumes holds any number of entries in
	// its manifest: its next commit cuts them where an index that had
	// volumes all along has them, and names them alike: by their last
	// generation, or by the latest purge up to now that redacted an entry
	// (generation 10's by 280; generation 20's by 700, which a replica
	// may hold before it applies that purge, does not count yet).
	h, _ := volumeHistory(t, 600)
	long := &Manifest{Format: Format, Generation: 600, Docs: 600, Batches: slices.Clone(h.Batches)}
	long.Batches[9].File, long.Batches[9].Chain = RedactedName(10, 280), long.Batches[9].Sum
	long.Batches[19].File, long.Batches[19].Chain = RedactedName(20, 700), long.Batches[19].Sum
	long.Generation = 601
	write, obsolete = long.PlanVolumes(nil)
	require.Equal(t, []int{0, 1}, write)
	require.Empty(t, obsolete)
	require.Equal(t, []Volume{{File: "batches-00000256.00000280.json", Last: 256}, {File: "batches-00000512.00000512.json", Last: 512}}, long.Volumes)

	// A manifest of the format before volumes is read as this one's.
	old := validManifest()
	old.Format = formatNoVolumes
	oldRaw, err := json.MarshalIndent(old, "", "  ")
	require.NoError(t, err)
	got, err := DecodeManifest("MANIFEST.json", fsutil.SealText(append(oldRaw, '\n')), nil)
	require.NoError(t, err)
	require.Equal(t, validManifest(), got)

	edited := func(name string, edit func([]byte) []byte) map[string][]byte {
		out := maps.Clone(files)
		out[name] = edit(bytes.Clone(out[name]))
		return out
	}
	first := "batches-00000256.00000256.json"
	reseal := func(edit func(*storedVolume)) func([]byte) []byte {
		return func(raw []byte) []byte {
			body, err := fsutil.UnsealText(raw)
			require.NoError(t, err)
			var sl storedVolume
			require.NoError(t, json.Unmarshal(body, &sl))
			edit(&sl)
			out, err := json.MarshalIndent(&sl, "", "  ")
			require.NoError(t, err)
			return fsutil.SealText(append(out, '\n'))
		}
	}
	storedWith := func(edit func(*Manifest)) []byte {
		s := stored
		s.Volumes = slices.Clone(stored.Volumes)
		edit(&s)
		out, err := json.MarshalIndent(&s, "", "  ")
		require.NoError(t, err)
		return fsutil.SealText(append(out, '\n'))
	}
	resum := func(files map[string][]byte) []byte {
		return storedWith(func(s *Manifest) { s.Volumes[0].Sum = evidence.Sum(files[first]) })
	}
	missing := maps.Clone(files)
	delete(missing, first)
	renamed := maps.Clone(files)
	renamed["batches-00000256.00000300.json"] = files[first]
	fewer := edited(first, reseal(func(sl *storedVolume) { sl.Batches = sl.Batches[1:] }))
	otherFormat := edited(first, reseal(func(sl *storedVolume) { sl.Format = "evpack-batches/2" }))
	cases := []struct {
		name, reason string
		raw          []byte
		files        map[string][]byte
		says         string
	}{
		{"volume missing", "a lost volume is lost history",
			raw, missing, first},
		{"volume edited", "the manifest's checksum of it fails",
			raw, edited(first, func(b []byte) []byte { return flipBit(b, 50) }), first + " hashes to"},
		{"volume of fewer entries, re-summed", "one generation per entry, from 1",
			resum(fewer), fewer, "lists 255 entries for generations 1..256"},
		{"volume of another format", "a newer evpack's volume is not guessed at",
			resum(otherFormat), otherFormat, `format "evpack-batches/2", this evpack reads "evpack-batches/1"`},
		{"volume not named for its span", "the name is the span and the generation that wrote it",
			storedWith(func(s *Manifest) { s.Volumes[0].File = "batches-00000255.00000256.json" }), files, `volume "batches-00000255.00000256.json" of generations 1..256`},
		{"volume written after the manifest's generation", "a volume of a commit that never was",
			storedWith(func(s *Manifest) { s.Volumes[0].File = "batches-00000256.00009999.json" }), files, "is not one a commit up to 522 wrote"},
		{"volumes in the format before them", "format 2 had none",
			storedWith(func(s *Manifest) { s.Format = formatNoVolumes }), files, `format "evpack-index/2"`},
		{"volume named for another writer", "the name is a function of the entries, so a replica's is the writer's",
			storedWith(func(s *Manifest) { s.Volumes[0].File = "batches-00000256.00000300.json" }), renamed, "is named for generation 300, its entries for 256"},
		{"no reader", "a manifest with volumes cannot be read from its bytes alone",
			raw, nil, "no reader for volumes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := read(tc.files)
			if tc.files == nil {
				r = nil
			}
			_, err := DecodeManifest("MANIFEST.json", tc.raw, r)
			require.ErrorIs(t, err, ErrCorrupt, tc.reason)
			require.Contains(t, err.Error(), tc.says, tc.reason)
			require.Contains(t, err.Error(), "MANIFEST.json", "the error names the manifest")
		})
	}
}

// TestPublishChecksWhatChanged: Publish checks the entries a commit adds or
// rewrites (an entry unchanged from the committed manifest was checked when
// it was committed), so a bad new entry and a bad rewrite of an old one are
// both refused, and nothing is published.
func TestPublishChecksWhatChanged(t *testing.T) {
	dir, m := committedIndex(t)
	d, err := Open(dir, Options{})
	require.NoError(t, err)
	defer d.Close()
	next := func(edit func(m *Manifest)) *Manifest {
		n := m.Clone()
		n.Generation, n.Docs = 2, 2
		n.Batches = append(n.Batches, Batch{Generation: 2, File: BatchName(2), Sum: m.Batches[0].Sum, Chunks: 1, CommittedAt: "2024-06-02T00:00:00Z"})
		edit(n)
		return n
	}
	for _, tc := range []struct {
		name, reason string
		m            *Manifest
		says         string
	}{
		{"bad new entry", "the commit's own entry is checked",
			next(func(n *Manifest) { n.Batches[1].Sum = "md5:00" }), `bad checksum "md5:00"`},
		{"bad rewrite of an old entry", "an entry that differs from the committed one is checked again",
			next(func(n *Manifest) { n.Batches[0].File = "../x" }), `"../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := d.Begin(2, []string{ChunksDir + "/" + BatchName(2)}, nil)
			require.NoError(t, err)
			err = c.Publish(tc.m)
			require.ErrorContains(t, err, tc.says, tc.reason)
			require.NoError(t, c.Abort())
			require.Equal(t, int64(1), d.Manifest().Generation, "nothing published")
		})
	}
}

// namedFiles lists every file m names, relative to the index directory, in
// a fixed order: what Names must answer true for, and nothing else.
func namedFiles(m *Manifest) []string {
	var out []string
	for _, v := range m.Volumes {
		out = append(out, v.File)
	}
	for _, b := range m.Batches {
		out = append(out, ChunksDir+"/"+b.File)
		if b.Analysis != "" {
			out = append(out, ChunksDir+"/"+b.Analysis)
		}
	}
	if m.Dense != nil {
		out = append(out, m.Dense.File)
		if m.Dense.Graph != "" {
			out = append(out, m.Dense.Graph)
		}
	}
	if m.Checkpoint != "" {
		out = append(out, m.Checkpoint)
	}
	return out
}

// temps lists the temp files of atomic writes in dir (not in chunks/).
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if fsutil.IsTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// secondCommit begins generation 2 of the index committedIndex made, at
// generation 1 with manifest m1, in d, writing batch2 (and announcing
// writes and obsolete besides), and returns the commit and the manifest
// that publishes it.
func secondCommit(t *testing.T, d *Dir, m1 *Manifest, writes, obsolete []string) (*Commit, *Manifest) {
	t.Helper()
	batch2 := ChunksDir + "/" + BatchName(2)
	c, err := d.Begin(2, append([]string{batch2}, writes...), obsolete)
	require.NoError(t, err)
	sum, err := c.Write(batch2, []byte("a batch\n"))
	require.NoError(t, err)
	m := m1.Clone()
	m.Generation, m.Docs = 2, 2
	m.Batches = append(m.Batches, Batch{Generation: 2, File: BatchName(2), Sum: sum, Chunks: 1, CommittedAt: "2024-06-02T00:00:00Z"})
	return c, m
}

// TestPrepare: Prepare stages one manifest at a time, Publish publishes
// the one it is given and makes durable the names written since the last
// Prepare, and Abort and a finished commit leave no staged manifest.
func TestPrepare(t *testing.T) {
	batch2, analysis2 := ChunksDir+"/"+BatchName(2), ChunksDir+"/"+AnalysisName(2)
	cases := []struct {
		name, reason string
		run          func(t *testing.T, d *Dir, c *Commit, m *Manifest)
	}{
		{"prepared twice", "the second manifest replaces the first's temp file, and Publish publishes the one it is given",
			func(t *testing.T, d *Dir, c *Commit, m *Manifest) {
				other := m.Clone()
				other.Tokens = 7
				require.NoError(t, c.Prepare(other))
				require.NoError(t, c.Prepare(m))
				require.Len(t, temps(t, d.Path()), 1, "one staged manifest")
				require.NoError(t, c.Prepare(other))
				require.NoError(t, c.Publish(m))
				require.Empty(t, temps(t, d.Path()))
				require.Equal(t, m.Tokens, d.Manifest().Tokens)
				name := filepath.Join(d.Path(), ManifestName)
				raw, err := os.ReadFile(name)
				require.NoError(t, err)
				onDisk, err := DecodeManifest(name, raw, func(f string) ([]byte, error) { return os.ReadFile(filepath.Join(d.Path(), f)) })
				require.NoError(t, err)
				require.Equal(t, m.Tokens, onDisk.Tokens, "the manifest on disk is the one given to Publish")
			}},
		{"a file written after Prepare", "Publish makes its name durable before the commit point: with chunks/ gone its fsync fails, and nothing is published",
			func(t *testing.T, d *Dir, c *Commit, m *Manifest) {
				require.NoError(t, c.Prepare(m))
				_, err := c.Write(analysis2, []byte("analysis\n"))
				require.NoError(t, err)
				chunks := filepath.Join(d.Path(), ChunksDir)
				require.NoError(t, os.Rename(chunks, chunks+".away"))
				require.Error(t, c.Publish(m))
				require.NoError(t, os.Rename(chunks+".away", chunks))
				require.Equal(t, int64(1), d.Manifest().Generation, "nothing published")
				require.NoError(t, c.Abort())
				require.Empty(t, temps(t, d.Path()))
			}},
		{"aborted after Prepare", "Abort removes the staged manifest with the commit's files",
			func(t *testing.T, d *Dir, c *Commit, m *Manifest) {
				require.NoError(t, c.Prepare(m))
				require.NoError(t, c.Abort())
				require.Empty(t, temps(t, d.Path()))
				require.NoFileExists(t, filepath.Join(d.Path(), batch2))
				require.NoFileExists(t, filepath.Join(d.Path(), PendingName))
				require.Equal(t, int64(1), d.Manifest().Generation)
			}},
		{"another generation", "a manifest must be the commit's generation",
			func(t *testing.T, d *Dir, c *Commit, m *Manifest) {
				other := m.Clone()
				other.Generation = 3
				require.ErrorContains(t, c.Prepare(other), "commit of generation 2: a manifest of generation 3")
				require.Empty(t, temps(t, d.Path()))
				require.NoError(t, c.Abort())
			}},
		{"after Publish", "a finished commit stages nothing",
			func(t *testing.T, d *Dir, c *Commit, m *Manifest) {
				require.NoError(t, c.Publish(m))
				require.ErrorContains(t, c.Prepare(m), "already finished")
				require.Empty(t, temps(t, d.Path()))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, m1 := committedIndex(t)
			d, err := Open(dir, Options{})
			require.NoError(t, err)
			defer d.Close()
			c, m := secondCommit(t, d, m1, []string{analysis2}, nil)
			tc.run(t, d, c, m)
		})
	}
}

// TestTidyingSyncsTheManifestFirst: a commit whose manifest was renamed
// into place and whose index directory's fsync failed (ErrNotDurable) is
// done in this process, its record and files kept. Whoever tidies up after
// it, the next Begin or Recover at the next Open, fsyncs the index
// directory before removing the files it made obsolete: until then a power
// cut may bring back the manifest before, which names them.
func TestTidyingSyncsTheManifestFirst(t *testing.T) {
	obsolete := CheckpointName(1)
	for _, by := range []string{"the next Begin", "Recover at the next Open"} {
		t.Run(by, func(t *testing.T) {
			dir, m1 := committedIndex(t)
			require.NoError(t, os.WriteFile(filepath.Join(dir, obsolete), []byte("the state the manifest before may name"), 0o644))
			d, err := Open(dir, Options{})
			require.NoError(t, err)
			defer func() { d.Close() }()
			batch2 := ChunksDir + "/" + BatchName(2)
			c, m := secondCommit(t, d, m1, nil, []string{obsolete})
			errEIO := errors.New("test: I/O error")
			d.Hooks.BeforeSyncDir = func(p string) error {
				if p == dir {
					return errEIO
				}
				return nil
			}
			err = c.Publish(m)
			require.ErrorIs(t, err, ErrNotDurable)
			require.ErrorIs(t, err, errEIO)
			require.Equal(t, int64(2), d.Manifest().Generation, "the manifest on disk is generation 2's")
			require.NoError(t, c.Abort(), "a commit past its rename is not undone")
			for _, f := range []string{PendingName, batch2, obsolete} {
				require.FileExists(t, filepath.Join(dir, f), "kept for whoever settles the commit")
			}

			var synced []bool // at each fsync of the index directory: was the obsolete file still there?
			watch := func(d *Dir) {
				d.Hooks.BeforeSyncDir = func(p string) error {
					if p == dir {
						_, err := os.Stat(filepath.Join(dir, obsolete))
						synced = append(synced, err == nil)
					}
					return nil
				}
			}
			if by == "the next Begin" {
				watch(d)
				c, err := d.Begin(3, []string{ChunksDir + "/" + BatchName(3)}, nil)
				require.NoError(t, err)
				require.NoError(t, c.Abort())
			} else {
				require.NoError(t, d.Close())
				d, err = Open(dir, Options{})
				require.NoError(t, err)
				watch(d)
				did, err := d.Recover(func(int64) (uint64, error) { return 0, nil }, func() error { return errors.New("test: no rollback") })
				require.NoError(t, err)
				require.Contains(t, did, "generation 2 was committed")
			}
			require.NotEmpty(t, synced, "the index directory was synced")
			require.True(t, synced[0], "the index directory was synced before %s was removed", obsolete)
			require.NoFileExists(t, filepath.Join(dir, obsolete))
			require.NoFileExists(t, filepath.Join(dir, PendingName))
		})
	}
}
