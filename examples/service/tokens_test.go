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

// TestLoadTokensByteOrderMark: a tokens file an editor saved with a UTF-8
// byte-order mark kept the mark in its first token, so that token's
// caller got 401 with a right token.
func TestLoadTokensByteOrderMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.txt")
	require.NoError(t, os.WriteFile(path, []byte("\uFEFFacme-token-0123456789 acme\nglobex-token-0123456789 globex\n"), 0o600))
	tokens, err := loadTokens(path)
	require.NoError(t, err)
	tenant, ok := tokens.tenant("acme-token-0123456789")
	require.True(t, ok, "the first line's token, without the mark")
	require.Equal(t, "acme", tenant)
	_, ok = tokens.tenant("\uFEFFacme-token-0123456789")
	require.False(t, ok, "the mark is not part of the token")
}
