package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// lexicalDamage is one way of damaging the lexical index of an index.
type lexicalDamage struct {
	name   string
	damage func(t *testing.T, dir, sibling string)
	code   int // check's exit status: 3, or 1 where check lists what differs
	// mended: rebuild-lexical mends it (not a damage outside lexical/)
	mended bool
}

// firstPart returns the first partition directory of dir's lexical index,
// in name order.
func firstPart(t *testing.T, dir string) string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "lexical", "p-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	sort.Strings(parts)
	return parts[0]
}

// segment returns the first segment file of partition part.
func segment(t *testing.T, part string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(part, "store", "*.zap"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	sort.Strings(segs)
	return segs[0]
}

func flipByte(t *testing.T, name string, at func(size int) int) {
	t.Helper()
	raw, err := os.ReadFile(name)
	require.NoError(t, err)
	raw[at(len(raw))] ^= 0x20
	require.NoError(t, os.WriteFile(name, raw, 0o644))
}

func truncateHalf(t *testing.T, name string) {
	t.Helper()
	fi, err := os.Stat(name)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(name, fi.Size()/2))
}

func lexicalDamages() []lexicalDamage {
	meta := func(t *testing.T, dir string) string { return filepath.Join(firstPart(t, dir), "index_meta.json") }
	layout := func(dir string) string { return filepath.Join(dir, "lexical", "evpack-lexical.json") }
	bolt := func(t *testing.T, dir string) string { return filepath.Join(firstPart(t, dir), "store", "root.bolt") }
	first := func(int) int { return 0 }
	return []lexicalDamage{
		{"partition metadata: its first byte flipped", func(t *testing.T, dir, _ string) { flipByte(t, meta(t, dir), first) }, 3, true},
		{"partition metadata: truncated", func(t *testing.T, dir, _ string) { truncateHalf(t, meta(t, dir)) }, 3, true},
		{"partition metadata: deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.Remove(meta(t, dir))) }, 3, true},
		{"root.bolt: truncated to half", func(t *testing.T, dir, _ string) { truncateHalf(t, bolt(t, dir)) }, 3, true},
		{"root.bolt: deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.Remove(bolt(t, dir))) }, 3, true},
		{"segment: deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.Remove(segment(t, firstPart(t, dir)))) }, 3, true},
		{"segment: truncated", func(t *testing.T, dir, _ string) { truncateHalf(t, segment(t, firstPart(t, dir))) }, 3, true},
		{"evpack-lexical.json: a byte flipped", func(t *testing.T, dir, _ string) { flipByte(t, layout(dir), func(int) int { return 3 }) }, 3, true},
		{"evpack-lexical.json: a digit of partition_days changed", func(t *testing.T, dir, _ string) {
			raw, err := os.ReadFile(layout(dir))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(layout(dir), []byte(strings.Replace(string(raw), `"partition_days":90`, `"partition_days":91`, 1)), 0o644))
		}, 3, true},
		{"evpack-lexical.json: truncated", func(t *testing.T, dir, _ string) { truncateHalf(t, layout(dir)) }, 3, true},
		{"evpack-lexical.json: deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.Remove(layout(dir))) }, 3, true},
		{"an extra partition directory", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.CopyFS(filepath.Join(dir, "lexical", "p-0000000000000000-1"), os.DirFS(firstPart(t, dir))))
		}, 3, true},
		{"a partition directory deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.RemoveAll(firstPart(t, dir))) }, 3, true},
		{"the lexical directory of a sibling index", func(t *testing.T, dir, sibling string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "lexical")))
			require.NoError(t, os.CopyFS(filepath.Join(dir, "lexical"), os.DirFS(filepath.Join(sibling, "lexical"))))
		}, 1, true}, // the same chunks, committed in the other order: check lists every document whose generation differs
		{"the checkpoint of a sibling index", func(t *testing.T, dir, sibling string) {
			ck, err := filepath.Glob(filepath.Join(sibling, "state-*.bin"))
			require.NoError(t, err)
			require.Len(t, ck, 1)
			raw, err := os.ReadFile(ck[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(ck[0])), raw, 0o644))
		}, 3, false},
		{"the lexical directory deleted", func(t *testing.T, dir, _ string) { require.NoError(t, os.RemoveAll(filepath.Join(dir, "lexical"))) }, 3, true},
	}
}

// TestLexicalDamageExitCodes: each damage to the lexical index (and the
// sibling's checkpoint) is corruption to `evpack check` and `evpack query`:
// exit 3, never 2 ("bad usage or input", as 25 such cases were), nor a
// crash, nor 0; and `evpack rebuild-lexical` mends every case where the
// batch files are whole, after which check passes again.
func TestLexicalDamageExitCodes(t *testing.T) {
	pristine := ingestTestCorpus(t)
	sibling := filepath.Join(t.TempDir(), "sibling")
	code, _, errs := runCLI(t, "ingest", "--index", sibling, "--connector", "jsonl", corpus("guidance.jsonl"))
	require.Equal(t, 0, code, errs)
	code, _, errs = runCLI(t, "ingest", "--index", sibling, "--connector", "statute", corpus("records-act.json"))
	require.Equal(t, 0, code, errs)
	q := "How long must a licensed firm retain records of client transactions?"
	_, wantPack, _ := runCLI(t, "query", "--index", pristine, "--as-of", "2026-01-15", "--format", "json", q)
	for _, d := range lexicalDamages() {
		t.Run(d.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			require.NoError(t, os.CopyFS(dir, os.DirFS(pristine)))
			d.damage(t, dir, sibling)
			code, out, errs := runCLI(t, "check", "--index", dir)
			require.Equal(t, d.code, code, "check: %s%s", out, errs)
			code, _, errs = runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", q)
			require.NotEqual(t, 2, code, "query: %s", errs)
			t.Logf("check: %s", strings.TrimSpace(errs))

			code, out, errs = runCLI(t, "rebuild-lexical", "--index", dir)
			if !d.mended {
				require.Equal(t, 3, code, "rebuild-lexical: %s%s", out, errs)
				return
			}
			require.Equal(t, 0, code, "rebuild-lexical: %s%s", out, errs)
			require.Equal(t, fmt.Sprintf("rebuilt the lexical index of %s from its batch files: 18 documents\nok: the index checks whole\n", dir), out)
			code, out, errs = runCLI(t, "check", "--index", dir)
			require.Equal(t, 0, code, "check after the rebuild: %s%s", out, errs)
			require.NotContains(t, out, "stray")
			code, pack, errs := runCLI(t, "query", "--index", dir, "--as-of", "2026-01-15", "--format", "json", q)
			require.Equal(t, 0, code, errs)
			require.Equal(t, wantPack, pack, "the rebuilt index answers as the pristine one")
		})
	}
}
