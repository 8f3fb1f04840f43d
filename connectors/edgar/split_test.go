package edgar

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAmendmentInAnotherSubmissionsFileSupersedes: one company's filings
// listed in two submissions files (CIK0001234567.json and CIK1234567.json
// both name CIK 1234567) are one company's: the 10-K/A in one ends the
// restated items of the 10-K in the other, as in a single file. Supersession
// was decided per file, so the original stayed valid for ever beside its
// amendment.
func TestAmendmentInAnotherSubmissionsFileSupersedes(t *testing.T) {
	ctx := context.Background()
	want, err := New(root(), retrieved).Read(ctx)
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, filepath.WalkDir(root(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root(), p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755))
		return os.WriteFile(filepath.Join(dir, rel), raw, 0o644)
	}))
	// Split Northwind's submissions: the 10-K/A (entry 0) in one file, the
	// rest in the other.
	subs := filepath.Join(dir, "submissions")
	raw, err := os.ReadFile(filepath.Join(subs, "CIK0001234567.json"))
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	pick := func(keep func(i int) bool) []byte {
		recent := s["filings"].(map[string]any)["recent"].(map[string]any)
		out := map[string]any{}
		for k, v := range recent {
			var col []any
			for i, x := range v.([]any) {
				if keep(i) {
					col = append(col, x)
				}
			}
			out[k] = col
		}
		c := map[string]any{"cik": s["cik"], "name": s["name"], "tickers": s["tickers"], "filings": map[string]any{"recent": out}}
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return b
	}
	require.NoError(t, os.WriteFile(filepath.Join(subs, "CIK0001234567.json"), pick(func(i int) bool { return i != 0 }), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(subs, "CIK1234567.json"), pick(func(i int) bool { return i == 0 }), 0o644))

	got, err := New(dir, retrieved).Read(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	type end struct{ to, by string }
	wantEnds := map[string]end{}
	superseded := 0
	for _, r := range want {
		wantEnds[r.Chunk.ID] = end{r.Chunk.Valid.To.String(), r.By}
		if r.By != "" {
			superseded++
		}
	}
	require.Positive(t, superseded, "the fixture's 10-K/A restates items of the 10-K")
	for _, r := range got {
		w, ok := wantEnds[r.Chunk.ID]
		require.True(t, ok, r.Chunk.ID)
		require.Equal(t, w, end{r.Chunk.Valid.To.String(), r.By}, r.Chunk.ID)
	}
}
