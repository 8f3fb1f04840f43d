package files

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/connectors"
)

// TestFrontMatterAfterAByteOrderMark: a file saved with a UTF-8 byte order
// mark (as Windows editors do) keeps its front matter. It was read as body
// text: the chunk lost its source_url (never citable) and indexed
// "source_url: ..." as evidence.
func TestFrontMatterAfterAByteOrderMark(t *testing.T) {
	recs, err := Parse("f.md", "f.md", []byte("\ufeff---\r\nsource_url: https://example.org/m\r\nretrieved_at: 2026-01-10T00:00:00Z\r\n---\r\nHello there."))
	require.NoError(t, err)
	require.Len(t, recs, 1)
	c := recs[0].Chunk
	require.Equal(t, "https://example.org/m", c.SourceURL)
	require.Equal(t, "Hello there.", c.Text)
	require.Equal(t, "", c.MissingCitation())
}

// TestFrontMatterRefusesARepeatedKey: a key given twice (source_url, or a
// valid_to whose second value extends the first) is ErrSyntax naming the
// second line; the last one silently won.
func TestFrontMatterRefusesARepeatedKey(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"source_url", "---\nsource_url: https://x\nretrieved_at: 2026-01-10T00:00:00Z\nsource_url: https://y\n---\nbody",
			`f.md:4: connectors: syntax error: front matter key "source_url" is given twice (first on line 2)`},
		{"valid_to", "\n---\r\nvalid_to: 2020-01-01\r\n\r\nvalid_to: 2030-01-01\r\n---\r\nbody",
			`f.md:5: connectors: syntax error: front matter key "valid_to" is given twice (first on line 3)`},
		{"meta", "---\nmeta.kind: memo\nmeta.kind: law\n---\nbody",
			`f.md:3: connectors: syntax error: front matter key "meta.kind" is given twice (first on line 2)`},
	} {
		_, err := Parse("f.md", "f.md", []byte(tc.body))
		require.True(t, errors.Is(err, connectors.ErrSyntax), "%s: %v", tc.name, err)
		require.EqualError(t, err, tc.want, tc.name)
	}
}
