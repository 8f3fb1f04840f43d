package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadTokensLongLineNamesTheLine: "Errors name the file and line": a
// line over bufio's 64 KiB said only "bufio.Scanner: token too long".
func TestLoadTokensLongLineNamesTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.txt")
	require.NoError(t, os.WriteFile(path, []byte("acme-token-0123456789 acme\n"+strings.Repeat("x", 70000)+" acme\n"), 0o600))
	_, err := loadTokens(path)
	require.EqualError(t, err, "tokens "+path+":2: bufio.Scanner: token too long")
}
