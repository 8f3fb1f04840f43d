package evpack

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDesignPackageTable holds docs/design.md's package table to the source
// tree: one row per package of the module, no row for a package that is not
// there. A package is a directory (outside testdata and hidden ones) with a
// Go file that is not a test.
func TestDesignPackageTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("docs", "design.md"))
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "## 3. Packages and what each owns")
	end := strings.Index(doc, "## 4. ")
	require.True(t, start >= 0 && end > start, "design.md has its section 3")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)`( \\(root\\))? \\|")
	var table []string
	for _, m := range row.FindAllStringSubmatch(doc[start:end], -1) {
		name := m[1]
		if m[2] != "" {
			name = "."
		}
		table = append(table, name)
	}
	var tree []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			tree = append(tree, filepath.ToSlash(filepath.Dir(path)))
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(tree)
	tree = slices.Compact(tree)
	slices.Sort(table)
	require.Equal(t, tree, table, "docs/design.md §3 lists every package once (root as `evpack` (root))")
}
