package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueryYearLeg is README.md's walk-through ("A question about one
// company's year"): the 10-K question with the company filter and the year
// leg gives, from a disk index made by the CLI, the golden pack the library
// gives (testdata/golden-period/capex-fy2021.json); --period overrides the
// question's, and a bad one is a usage error.
func TestQueryYearLeg(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	root := filepath.Join("..", "..", "testdata")
	code, _, errs := runCLI(t, "ingest", "--index", dir, "--connector", "jsonl", filepath.Join(root, "periods", "filings.jsonl"))
	require.Equal(t, 0, code, errs)
	q := "What were Northwind's capital expenditures in FY2021?"
	code, out, errs := runCLI(t, "query", "--index", dir, "--as-of", "2025-06-30", "--filter", "cik=northwind", "--question-periods", "--k", "3", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	want, err := os.ReadFile(filepath.Join(root, "golden-period", "capex-fy2021.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), out)
	code, out, errs = runCLI(t, "query", "--index", dir, "--as-of", "2025-06-30", "--filter", "cik=northwind", "--question-periods", "--k", "3", "--period", "FY2020", "--format", "json", q)
	require.Equal(t, 0, code, errs)
	want, err = os.ReadFile(filepath.Join(root, "golden-period", "capex-fy2021-given-2020.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), out)
	code, _, errs = runCLI(t, "query", "--index", dir, "--as-of", "2025-06-30", "--period", "fiscal 2020", q)
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "period")
}
