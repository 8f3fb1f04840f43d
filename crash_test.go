package evpack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/internal/storage"
	"github.com/evpack/evpack/internal/testsize"
	"github.com/evpack/evpack/retrieve"
)

var crashSeedFlag = flag.Uint64("crash.seed", 0, "seed of TestCrashLoop's kill delays (0: EVPACK_CRASH_SEED, else the time)")

// Environment of the crash child (see TestMain): the index directory, and
// the batches [from, upto) it ingests.
const (
	crashChildEnv = "EVPACK_CRASH_CHILD"
	crashFromEnv  = "EVPACK_CRASH_FROM"
	crashUptoEnv  = "EVPACK_CRASH_UPTO"
)

// crashMergeEvery is how many batches the child ingests between merges.
const crashMergeEvery = 4

// crashChild is the process TestCrashLoop kills: it opens the index in dir
// and ingests batches from..upto-1, merging every crashMergeEvery batches.
// It reports its progress on stdout, one line at a time (os.Stdout is not
// buffered): "opened", "committed N" after batch N's Ingest returned,
// "merging" and "merged" around a Merge, "done" after Close.
func crashChild(dir string) error {
	from, err := strconv.Atoi(os.Getenv(crashFromEnv))
	if err != nil {
		return err
	}
	upto, err := strconv.Atoi(os.Getenv(crashUptoEnv))
	if err != nil {
		return err
	}
	ctx := context.Background()
	e, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	fmt.Println("opened")
	for b := from; b < upto; b++ {
		recs := crashBatch(b)
		rep, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
		if err != nil {
			return fmt.Errorf("batch %d: %w", b, err)
		}
		if rep.Added != len(recs) {
			return fmt.Errorf("batch %d: added %d of %d (unchanged %d)", b, rep.Added, len(recs), rep.Unchanged)
		}
		fmt.Printf("committed %d\n", b)
		if (b+1)%crashMergeEvery == 0 {
			fmt.Println("merging")
			if err := e.Merge(ctx); err != nil {
				return err
			}
			fmt.Println("merged")
		}
	}
	if err := e.Close(); err != nil {
		return err
	}
	fmt.Println("done")
	return nil
}

// crashWords is the vocabulary of the crash batches: pronounceable
// made-up words, drawn with a skew so that BM25 sees common and rare terms.
var crashWords = func() []string {
	cons, vow := "bcdfghklmnprstvz", "aeiou"
	rng := rand.New(rand.NewPCG(7, 7))
	seen := map[string]bool{}
	var out []string
	for len(out) < 600 {
		var w strings.Builder
		for range 2 + rng.IntN(3) {
			w.WriteByte(cons[rng.IntN(len(cons))])
			w.WriteByte(vow[rng.IntN(len(vow))])
		}
		if s := w.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}()

// crashBatchSize is how many chunks batch b holds.
func crashBatchSize(b int) int { return 20 + b%17 }

// crashBatch returns batch b: a function of b alone, so that the test can
// ingest it again and find it unchanged.
func crashBatch(b int) []connectors.Record {
	rng := rand.New(rand.NewPCG(uint64(b), 0xba7c4))
	day := asof.MustDate("2024-01-01").Start().AddDate(0, 0, b)
	recs := make([]connectors.Record, crashBatchSize(b))
	for c := range recs {
		n := 30 + rng.IntN(60)
		words := make([]string, n)
		for i := range words {
			// Squaring a uniform draw favours the first words of the list.
			u := rng.Float64()
			words[i] = crashWords[int(u*u*float64(len(crashWords)))]
		}
		recs[c] = connectors.Record{Where: fmt.Sprintf("batch %d chunk %d", b, c), Chunk: evidence.Chunk{
			ID: fmt.Sprintf("b%04d-c%03d", b, c), DocID: fmt.Sprintf("doc-%04d", b), Text: strings.Join(words, " "),
			SourceURL: fmt.Sprintf("https://example.test/b%04d/c%03d", b, c), Connector: "crash",
			RetrievedAt: day, Anchor: asof.Anchor{At: day, Field: "retrieved_at"}}}
	}
	return recs
}

// crashSeed returns the seed of TestCrashLoop: -crash.seed, else
// EVPACK_CRASH_SEED, else the time.
func crashSeed(t *testing.T) uint64 {
	if *crashSeedFlag != 0 {
		return *crashSeedFlag
	}
	if s := os.Getenv("EVPACK_CRASH_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "EVPACK_CRASH_SEED")
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// crashRun is what one child did before it died.
type crashRun struct {
	lines    []string
	exited   bool // the child finished on its own before the kill
	stderr   string
	phase    string // where the kill landed, from the last line the child wrote
	reported []int  // batches the child reported committed
}

// crashKill says when to kill the child: delay after it starts or, when
// merging is above 0, delay after it reports the start of that merge.
type crashKill struct {
	delay   time.Duration
	merging int
}

func (k crashKill) String() string {
	if k.merging > 0 {
		return fmt.Sprintf("%v into merge %d", k.delay, k.merging)
	}
	return fmt.Sprintf("%v after start", k.delay)
}

// runCrashChild runs the child on dir for batches [from, upto) and kills it
// with SIGKILL as k says.
func runCrashChild(t *testing.T, dir string, from, upto int, k crashKill) crashRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashFromEnv+"="+strconv.Itoa(from), crashUptoEnv+"="+strconv.Itoa(upto))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var kill *time.Timer
	if k.merging == 0 {
		kill = time.AfterFunc(k.delay, func() { cmd.Process.Kill() })
	}
	var run crashRun
	sc := bufio.NewScanner(out)
	merges := 0
	for sc.Scan() {
		run.lines = append(run.lines, sc.Text())
		if sc.Text() == "merging" {
			if merges++; merges == k.merging {
				kill = time.AfterFunc(k.delay, func() { cmd.Process.Kill() })
			}
		}
	}
	werr := cmd.Wait()
	killed := kill != nil && !kill.Stop()
	run.stderr = stderr.String()
	var exit *exec.ExitError
	switch {
	case werr == nil:
		run.exited = true
	case errors.As(werr, &exit) && killed && !exit.Exited():
		// killed by the signal: the point of the test
	default:
		t.Fatalf("crash child (batches %d..%d) failed on its own: %v\nstderr:\n%s\nstdout:\n%s", from, upto-1, werr, run.stderr, strings.Join(run.lines, "\n"))
	}
	last := ""
	for _, l := range run.lines {
		if n, ok := strings.CutPrefix(l, "committed "); ok {
			b, err := strconv.Atoi(n)
			require.NoError(t, err, l)
			run.reported = append(run.reported, b)
		}
		last = l
	}
	switch {
	case run.exited:
		run.phase = "none (the child finished)"
	case last == "":
		run.phase = "startup"
	case last == "merging":
		run.phase = "merge"
	case last == "done":
		run.phase = "exit"
	default:
		run.phase = "ingest"
	}
	return run
}

// TestCrashLoop kills a process that ingests and merges at random moments
// (SIGKILL: no deferred call, no Close) and checks after each kill that the
// index opens, passes Check, holds every batch the process reported
// committed, holds every batch wholly or not at all, and takes the whole
// sequence again, skipping what is stored. Replay a failure with the seed it
// logs: go test -run TestCrashLoop -crash.seed N .
func TestCrashLoop(t *testing.T) {
	seed := crashSeed(t)
	t.Logf("crash seed %d (replay: go test -run TestCrashLoop -crash.seed %d .)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0xc4a54))
	rounds := 18
	switch {
	case testing.Short():
		rounds = 3
	case !testsize.Long(): // CI sets EVPACK_LONG_TESTS=1
		rounds = 6
	}
	if s := os.Getenv("EVPACK_CRASH_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err, "EVPACK_CRASH_ROUNDS")
	}
	ctx := context.Background()
	phases := map[string]int{}
	inCommit, fresh := 0, 0
	var dir string
	next := 0 // the first batch not yet in the index in dir
	for round := range rounds {
		if dir == "" || rng.IntN(5) == 0 {
			dir, next = filepath.Join(t.TempDir(), "index"), 0 // Open creates it
			fresh++
		}
		// A fifth of the kills land at once, in process start-up and Open;
		// a fifth aim at a merge (which takes a few milliseconds, so few
		// kills timed from the start would land in one); the rest anywhere
		// in the ingests and merges.
		var k crashKill
		switch rng.IntN(5) {
		case 0:
			k.delay = time.Duration(rng.Int64N(int64(60 * time.Millisecond)))
		case 1:
			k.delay, k.merging = time.Duration(rng.Int64N(int64(20*time.Millisecond))), 1+rng.IntN(3)
		default:
			k.delay = time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
		}
		upto := next + 40
		run := runCrashChild(t, dir, next, upto, k)
		phases[run.phase]++
		where := fmt.Sprintf("round %d (seed %d): batches %d..%d, killed %v, in %s, last lines %q",
			round, seed, next, upto-1, k, run.phase, run.lines[max(0, len(run.lines)-3):])

		_, statErr := os.Stat(filepath.Join(dir, storage.PendingName))
		pending := statErr == nil
		if pending {
			inCommit++
		}
		e, err := Open(dir, Options{})
		require.NoError(t, err, where)
		require.NoError(t, e.Check(), where)

		// Every batch wholly present or wholly absent, the present ones a
		// prefix of the sequence, and every reported one present.
		counts := map[int]int{}
		for id := range fullState(t, e).Chunks {
			b, err := strconv.Atoi(strings.TrimPrefix(id[:strings.IndexByte(id, '-')], "b"))
			require.NoError(t, err, id)
			counts[b]++
		}
		present := 0
		for counts[present] > 0 {
			present++
		}
		for b, n := range counts {
			require.Equal(t, crashBatchSize(b), n, "%s: batch %d partly present", where, b)
			require.Less(t, b, present, "%s: batch %d present after the missing batch %d", where, b, present)
		}
		require.GreaterOrEqual(t, present, next, "%s: a batch of an earlier round was lost", where)
		for _, b := range run.reported {
			require.Positive(t, counts[b], "%s: batch %d was reported committed and is missing", where, b)
		}
		require.LessOrEqual(t, present, upto, where)
		t.Logf("%s: PENDING.json %v, %d batches present", where, pending, present)

		// The whole sequence again: stored batches unchanged, the rest added.
		last := min(upto, present+1) // the batch the child may have been committing, excluded
		for b := range last {
			recs := crashBatch(b)
			rep, err := e.Ingest(ctx, connectors.Records(recs), IngestOptions{})
			require.NoError(t, err, "%s: ingest batch %d again", where, b)
			if b < present {
				require.Equal(t, IngestReport{Read: len(recs), Unchanged: len(recs), Generation: int64(present)}, rep, "%s: batch %d", where, b)
			} else {
				require.Equal(t, len(recs), rep.Added, "%s: batch %d", where, b)
			}
		}
		require.NoError(t, e.Check(), where)
		require.NoError(t, e.Close(), where)
		next = last
	}
	t.Logf("crash loop, seed %d: %d rounds, %d fresh indexes; kills landed in %v; %d reopened with a commit in progress (PENDING.json)",
		seed, rounds, fresh, phases, inCommit)
}

// TestLexicalIsCreatedAtomically: bleve writes a new index's metadata in
// place, without a rename, so a crash while creating lexical/ in place
// would leave a directory bleve refuses for ever. The lexical index is
// built beside it and renamed into place: what a crash leaves is a
// temporary directory, a stray that Check reports and Open ignores.
func TestLexicalIsCreatedAtomically(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	require.NoError(t, err)
	tmps, err := filepath.Glob(filepath.Join(dir, ".lexical.tmp-*"))
	require.NoError(t, err)
	require.Empty(t, tmps, "nothing of the creation is left")
	require.NoError(t, e.Close())

	// What a crash in the middle of the creation leaves: the manifest of
	// generation 0, no lexical/, and a half-made one in its temporary
	// directory (bleve's metadata file created, not yet written).
	require.NoError(t, os.RemoveAll(filepath.Join(dir, storage.LexicalDir)))
	half := filepath.Join(dir, ".lexical.tmp-123", storage.LexicalDir)
	require.NoError(t, os.MkdirAll(half, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(half, "index_meta.json"), nil, 0o644))
	e, err = Open(dir, Options{})
	require.NoError(t, err)
	checked(t, e)
	rep, err := e.CheckIndex(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.Equal(t, []string{".lexical.tmp-123"}, rep.Strays)
	ingestCorpus(t, e)
	require.NoError(t, e.Close())

	// Why: the same half-made index in place is refused by bleve.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, storage.LexicalDir)))
	require.NoError(t, os.Rename(half, filepath.Join(dir, storage.LexicalDir)))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, retrieve.ErrLexical)
	require.Contains(t, err.Error(), "metadata corrupt")
}
