package files

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
)

func TestReadDirectory(t *testing.T) {
	recs, err := New(filepath.Join("..", "..", "testdata", "files")).Read(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Chunk.ID)
	}
	require.Equal(t, []string{"memos/retention-memo.md#1", "notes.html#1"}, ids)
	memo := recs[0].Chunk
	require.Equal(t, "retention-memo", memo.DocID)
	require.Equal(t, "3", memo.Version)
	require.Equal(t, "memo", memo.Meta["kind"])
	require.Equal(t, AnchorField, memo.Anchor.Field)
	require.Equal(t, "2025-12-01T00:00:00Z", asof.FormatInstant(memo.Anchor.At))
	require.Contains(t, memo.Text, "# Retention memo\n\nFrom 1 January 2026")
	note := recs[1].Chunk
	require.Empty(t, note.SourceURL)
	require.Equal(t, asof.RetrievedAtField, note.Anchor.Field, "no anchor: dated by retrieval")
	require.Contains(t, note.Text, "Record | Years\nTransactions | 10")
}

func TestUnsourcedFileIsFlaggedAndNeverCited(t *testing.T) {
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{})
	require.NoError(t, err)
	defer eng.Close()
	rep, err := eng.Ingest(ctx, New(filepath.Join("..", "..", "testdata", "files")), evpack.IngestOptions{})
	require.NoError(t, err)
	require.Equal(t, []evpack.Flag{{ChunkID: "notes.html#1", Reason: "missing source URL"}}, rep.Flagged)
	p, err := eng.Query(ctx, evpack.Request{Question: "after how many years can records be deleted?", AsOf: asof.MustDate("2026-02-01")})
	require.NoError(t, err)
	require.Len(t, p.Citations, 1)
	require.Equal(t, "memos/retention-memo.md#1", p.Citations[0].ChunkID)
	require.Contains(t, p.Trace.Steps, "dropped 1 (missing source URL: notes.html#1)")
	require.NoError(t, eng.Check())
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, body string
		want       error
		where      string
	}{
		{"unclosed front matter", "---\nsource_url: u\nretrieved_at: 2026-01-10T09:00:00Z", connectors.ErrSyntax, "f.md:1"},
		{"line without a colon", "---\nsource_url u\n---\nbody", connectors.ErrSyntax, "f.md:2"},
		{"unknown key", "---\nsorce_url: u\n---\nbody", connectors.ErrField, "f.md:2"},
		{"bad date", "---\nsource_url: u\nvalid_to: 2026-02-30\n---\nbody", asof.ErrBadDate, "f.md:3"},
		// Normalize trims the blank lines before the front matter; the line
		// numbers still count them (they said f.md:2 for line 4).
		{"blank lines first", "\n\n---\nbogus_key: 1\n---\nbody", connectors.ErrField, "f.md:4"},
		{"blank CRLF lines first", "\r\n \r\n---\r\nbogus_key: 1\r\n---\r\nbody", connectors.ErrField, "f.md:4"},
		{"blank lines first, unclosed", "\n\n---\nsource_url: u", connectors.ErrSyntax, "f.md:3"},
	}
	for _, c := range cases {
		_, err := Parse("f.md", "f.md", []byte(c.body))
		require.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		require.Contains(t, err.Error(), c.where, c.name)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a.md", []byte("---\nsource_url: u\nretrieved_at: 2026-01-10T09:00:00Z\nmeta.kind: memo\n---\nText. More text.\n\nAnother paragraph."))
	f.Add("b.html", []byte("<p>x</p><table><tr><td>a<td>b</table>"))
	f.Add("c.txt", []byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, rel string, raw []byte) {
		recs, err := Parse("f", rel, raw)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if seen[r.Chunk.ID] || r.Chunk.Text == "" {
				t.Fatalf("bad record %+v", r)
			}
			seen[r.Chunk.ID] = true
		}
	})
}
