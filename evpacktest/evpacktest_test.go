package evpacktest_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/evpacktest"
)

// fakeTB records what a helper reports instead of failing the real test.
// Methods it does not override go to the embedded real TB.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	logs   []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// packs returns the pack for the same question as of two days: the answer
// changes between them (the 2018 Act said five years, the 2021 one seven).
func packs(t *testing.T) (before, after *evidence.Pack) {
	t.Helper()
	ctx := context.Background()
	eng, err := evpack.OpenMemory(evpack.Options{K: 2})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	_, err = eng.Ingest(ctx, connectors.NewStatute("../testdata/corpus/records-act.json"), evpack.IngestOptions{})
	require.NoError(t, err)
	q := "How long must a licensed firm retain records of client transactions?"
	before, err = eng.Query(ctx, evpack.Request{Question: q, AsOf: asof.MustDate("2020-06-30")})
	require.NoError(t, err)
	after, err = eng.Query(ctx, evpack.Request{Question: q, AsOf: asof.MustDate("2021-06-30")})
	require.NoError(t, err)
	return before, after
}

func TestGoldenMatchAndUpdate(t *testing.T) {
	before, _ := packs(t)
	path := filepath.Join(t.TempDir(), "golden", "retention.json")

	t.Setenv(evpacktest.EnvUpdate, "1")
	f := &fakeTB{TB: t}
	evpacktest.Golden(f, path, before)
	require.Empty(t, f.errors)
	require.Equal(t, []string{"evpacktest: wrote " + path + " (" + before.Hash() + ")"}, f.logs)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before.Bytes(), raw)

	t.Setenv(evpacktest.EnvUpdate, "")
	f = &fakeTB{TB: t}
	evpacktest.Golden(f, path, before)
	evpacktest.GoldenBytes(f, path, before.Bytes())
	require.Empty(t, f.errors)
	require.Empty(t, f.logs)
}

func TestGoldenMismatchIsReadable(t *testing.T) {
	before, after := packs(t)
	path := filepath.Join(t.TempDir(), "retention.json")
	require.NoError(t, os.WriteFile(path, before.Bytes(), 0o644))

	f := &fakeTB{TB: t}
	evpacktest.Golden(f, path, after)
	require.Len(t, f.errors, 1)
	// go-cmp varies its spacing on purpose (so that no one pins its
	// output); compare with runs of white space folded to one space.
	msg := strings.Join(strings.Fields(strings.ReplaceAll(f.errors[0], "\u00a0", " ")), " ")
	// The report names the file and both hashes, then the fields that
	// changed, as a person reads them.
	for _, want := range []string{
		"pack differs from golden file " + path,
		"golden " + before.Hash() + " got " + after.Hash(),
		"diff (-golden +got): &evidence.Pack{",
		`- AsOf: s"2020-06-30", + AsOf: s"2021-06-30",`,
		`- ChunkID: "records-act/art-2@2018", + ChunkID: "records-act/art-2@2021",`,
		`- "five", + "seven",`,
		`- From: s"2018-07-01", + From: s"2021-04-01",`,
		`- "pool 5", + "pool 6",`,
		"rerun with -update (or EVPACK_UPDATE_GOLDEN=1)",
	} {
		require.Contains(t, msg, want, "report:\n%s", f.errors[0])
	}
	require.NotContains(t, msg, `"citations"`, "raw bytes in the report:\n%s", f.errors[0])
}

func TestGoldenMissingFile(t *testing.T) {
	before, _ := packs(t)
	path := filepath.Join(t.TempDir(), "absent.json")
	f := &fakeTB{TB: t}
	evpacktest.Golden(f, path, before)
	require.Equal(t, []string{"evpacktest: golden file " + path +
		" does not exist; run the test with -update (or EVPACK_UPDATE_GOLDEN=1) to record it"}, f.errors)
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestGoldenBadEnv(t *testing.T) {
	before, _ := packs(t)
	t.Setenv(evpacktest.EnvUpdate, "yes please")
	f := &fakeTB{TB: t}
	evpacktest.Golden(f, filepath.Join(t.TempDir(), "x.json"), before)
	require.Len(t, f.errors, 1)
	require.True(t, strings.HasPrefix(f.errors[0], `evpacktest: EVPACK_UPDATE_GOLDEN="yes please": want a boolean`), f.errors[0])
}

func TestDiffNotAPack(t *testing.T) {
	before, _ := packs(t)
	require.Equal(t, "", evpacktest.Diff(before.Bytes(), before.Bytes()))
	require.True(t, strings.HasPrefix(evpacktest.Diff([]byte("{}\n"), before.Bytes()), "the golden bytes are not a pack: "))
	require.True(t, strings.HasPrefix(evpacktest.Diff(before.Bytes(), []byte("not json")), "the bytes under test are not a pack: "))
}

func TestUpdateFlag(t *testing.T) {
	t.Setenv(evpacktest.EnvUpdate, "")
	require.Equal(t, "false", flagLookup(t))
	on, err := evpacktest.Update()
	require.NoError(t, err)
	require.False(t, on)

	require.NoError(t, flag.Set("update", "true")) // as go test -update does
	t.Cleanup(func() { flag.Set("update", "false") })
	on, err = evpacktest.Update()
	require.NoError(t, err)
	require.True(t, on)
}

// flagLookup returns the -update flag's value as the flag package prints it.
func flagLookup(t *testing.T) string {
	t.Helper()
	f := flag.Lookup("update")
	require.NotNil(t, f, "evpacktest registers -update")
	return f.Value.String()
}
