package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The names RebuildLexical gives, in the index directory, to the lexical
// index it builds (a temp directory) and to the old one it moves aside
// before removing it; a kill or a power cut leaves them there.
const (
	RebuildTempPrefix = "." + LexicalDir + ".rebuild-"
	RebuildOldPrefix  = "." + LexicalDir + ".damaged-"
)

// IsRebuildLeftover reports whether name, an entry of the index
// directory, is what an interrupted RebuildLexical left.
func IsRebuildLeftover(name string) bool {
	return strings.HasPrefix(name, RebuildTempPrefix) || strings.HasPrefix(name, RebuildOldPrefix)
}

// RemoveRebuildLeftovers removes what interrupted rebuilds left in dir,
// whose lock the caller holds.
func RemoveRebuildLeftovers(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if IsRebuildLeftover(e.Name()) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("evpack: remove what an interrupted rebuild left: %w", err)
			}
		}
	}
	return nil
}
