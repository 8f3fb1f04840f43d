package evpacktest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/evpacktest"
)

// TestGoldenBytesRefusesWhatIsNotAPack: bytes under test that are not a
// pack (an empty response body, an error page) are reported, and -update
// does not record them. They were written as the golden, and then compared
// equal to it for ever: a golden test that could not fail.
func TestGoldenBytesRefusesWhatIsNotAPack(t *testing.T) {
	for _, got := range [][]byte{nil, []byte("internal server error\n"), []byte("{}")} {
		path := filepath.Join(t.TempDir(), "g.json")

		t.Setenv(evpacktest.EnvUpdate, "1")
		f := &fakeTB{TB: t}
		evpacktest.GoldenBytes(f, path, got)
		require.Len(t, f.errors, 1, "%q", got)
		require.True(t, strings.HasPrefix(f.errors[0], "evpacktest: golden "+path+": the bytes under test are not a pack: "), f.errors[0])
		_, err := os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "%q was recorded", got)

		t.Setenv(evpacktest.EnvUpdate, "")
		require.NoError(t, os.WriteFile(path, got, 0o644))
		f = &fakeTB{TB: t}
		evpacktest.GoldenBytes(f, path, got)
		require.Len(t, f.errors, 1, "%q", got)
		require.True(t, strings.HasPrefix(f.errors[0], "evpacktest: golden "+path+": the bytes under test are not a pack: "), f.errors[0])
	}
}
