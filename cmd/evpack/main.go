// Command evpack ingests sources, answers questions as of a date with
// evidence packs, verifies packs by replay, says what changed since a pack
// was made, and evaluates rankings.
//
//	evpack ingest --index DIR --connector jsonl|statute|edgar|fred|files [--retrieved-at RFC3339] [--log DSN [--holder NAME] [--lease 30s]] PATH...
//	evpack follow --index DIR --log DSN [--until GEN] [--name NAME]
//	evpack query  --index DIR --as-of YYYY-MM-DD [--tenant T] [--filter KEY=VALUE]... [--k N] [--generation G | --known-at RFC3339] [--period P] [--question-periods] [--format json|text] [--cross-encoder MODEL_DIR [--cuda]] QUESTION
//	evpack verify --index DIR [--cross-encoder MODEL_DIR [--cuda]] PACK.json
//	evpack diff   --index DIR [--format text|json] [--cross-encoder MODEL_DIR [--cuda]] PACK.json
//	evpack check  --index DIR [--log DSN]
//	evpack rebuild-lexical --index DIR
//	evpack history --index DIR [--tenant T] [--json]
//	evpack purge  --index DIR --reason TEXT CHUNK_ID...
//	evpack eval obliqa --docs DIR --questions FILE [--pool N] [--reranker learned|arithmetic|none] [--json]
//	evpack eval ablate --docs DIR --questions FILE [--cross-encoder MODEL_DIR]
//	evpack vectors import --format wink-json IN OUT [--max-words N]
//	evpack rerank train (--docs DIR | --corpus FILE.jsonl...) --questions FILE --out MODEL [--folds 5] [--seed 1]
//	  [--group-by gold-document|gold-passage|field | --split-by date] [--pool N]
//	evpack eval asof   --docs DIR --questions FILE [--histories N] [--seed N] [--json]
//	evpack eval financebench --dir DIR [--companies CIK,...] [--boost N] [--depth N] [--index DIR] [--json]
//
// diff verifies the pack at its own generation, runs its request again at
// the latest generation and prints one line per citation (unchanged, moved,
// outranked, superseded, ended, retracted, text changed) and one per chunk
// cited now that the pack did not ("new", marked "backfill" when committed
// after the pack but dated on or before its as-of day).
//
// Exit status: 0 success; 1 a pack or an index that does not verify, or
// (diff) a pack whose citations changed; 2 bad usage or input (an --index
// path that holds no index included); 3 an index that is corrupt, locked by
// another process or unreadable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/retrieve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  evpack ingest --index DIR --connector jsonl|statute|edgar|fred|files [--retrieved-at RFC3339] [--log DSN [--holder NAME] [--lease 30s]] PATH...
  evpack follow --index DIR --log DSN [--until GEN] [--name NAME]   (a replica: apply the shared log's generations)
  evpack query  --index DIR --as-of YYYY-MM-DD [--tenant T] [--filter KEY=VALUE]... [--k N] [--generation G | --known-at RFC3339] [--period P] [--question-periods] [--format json|text] [--cross-encoder MODEL_DIR [--cuda]] QUESTION
  evpack verify --index DIR [--cross-encoder MODEL_DIR [--cuda]] PACK.json
  evpack diff   --index DIR [--format text|json] [--cross-encoder MODEL_DIR [--cuda]] PACK.json
  evpack check  --index DIR [--log DSN]
  evpack rebuild-lexical --index DIR   (rebuild the lexical index from the batch files, when check finds it damaged)
  evpack history --index DIR [--tenant T] [--json]
  evpack purge  --index DIR --reason TEXT CHUNK_ID...
  evpack eval obliqa --docs DIR --questions FILE [--pool N] [--reranker learned|arithmetic|none] [--embedder static:PATH] [--legs L] [--json] [--per-question FILE]
  evpack eval shapes --docs DIR --questions FILE [--shape NAME] [--seed 1] [--folds K [--group-by KEY | --split-by date] [trainer flags]]
  evpack eval ablate --docs DIR --questions FILE [--cross-encoder MODEL_DIR] [--folds 5] [--seed 1] [trainer flags]
  evpack eval asof   --docs DIR --questions FILE [--histories N] [--seed N] [--json]
  evpack eval financebench --dir DIR [--companies CIK,...] [--boost N] [--depth N] [--index DIR] [--json]
  evpack vectors import --format wink-json IN OUT [--max-words N]
  evpack rerank train (--docs DIR | --corpus FILE.jsonl... [--as-of D]) --questions FILE --out MODEL [--folds 5] [--seed 1]
      [--group-by gold-document|gold-passage|field | --split-by date] [--pool N]
        [--trees N] [--leaves N] [--lr F] [--min-leaf N] [--l2 F] [--subsample F]

ingest, query, verify, diff and eval take --embedder static:PATH|onnx:MODEL_DIR|http://HOST (with --embedder-model,
--embedder-dims), --legs lexical|dense|lexical,dense and --dense-index exact|hnsw (with --ef-search N);
query, verify, diff and eval obliqa take --reranker learned[:MODEL]|arithmetic|none|smoothed|cross-encoder:MODEL_DIR; the default is
learned, the model embedded in evpack (trained on ObliQA dev); arithmetic is the reranker before it. ONNX models need EVPACK_ORT_LIB.
query --cross-encoder (which overrides --reranker) reranks the pool with the model and records its scores in the pack's ledger; verify replays
such a pack from its ledger without the model, and with --cross-encoder also runs the model once to say whether a
fresh run would cite the same chunks. --cuda runs the cross-encoder on CUDA (an error if unavailable).
diff verifies a pack at its own generation, runs its request at the latest one and prints what became of each
citation (unchanged, moved, outranked, superseded, ended, retracted, text changed) and what is cited now that
was not (new; backfill: committed after the pack, dated on or before its as-of day); a pack a model reranked
needs the model (--cross-encoder) for the latest run.
history lists the generations, oldest first: each one's commit time and what it added, superseded, ended,
retracted or purged per tenant (chunk IDs named when a kind has at most 3; --json names them all).
--known-at reads these commit times, the index's own clock, not the sources' dates: in an index backfilled
today every generation is committed today, so pin --generation N (found with evpack history) instead.
Commands that open an index take --lock-wait DURATION, read as Options.LockWait: 0 (the default) waits 2s
for another process that has the index open, a negative duration (-1s) fails at once.

ingest --log appends each commit to a shared PostgreSQL log first, as the log's one fenced writer (another
writer's live lease: exit 3); follow applies the log's generations to a replica, byte for byte the writer's
index, recording its audit row under --name; query, verify, diff and check work on any replica.

exit status: 0 success; 1 a pack or index that does not verify, or (diff) a pack whose citations changed;
2 bad usage or input (a path that holds no index included); 3 an index that is corrupt, locked by another
process, or unreadable.
`

// exitError carries an exit status out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// A command's report is its result: one that could not be written
	// (a full disk, a closed pipe) fails the command, whatever its
	// verdict, where history, check and verify exited 0 having written
	// nothing.
	out := &stickyWriter{w: stdout}
	stdout = out
	var err error
	switch args[0] {
	case "ingest":
		err = cmdIngest(ctx, args[1:], stdout, stderr)
	case "follow":
		err = cmdFollow(ctx, args[1:], stdout, stderr)
	case "query":
		err = cmdQuery(ctx, args[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(ctx, args[1:], stdout, stderr)
	case "purge":
		err = cmdPurge(ctx, args[1:], stdout, stderr)
	case "diff":
		err = cmdDiff(ctx, args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(ctx, args[1:], stdout, stderr)
	case "rebuild-lexical":
		err = cmdRebuildLexical(ctx, args[1:], stdout, stderr)
	case "history":
		err = cmdHistory(ctx, args[1:], stdout, stderr)
	case "eval":
		err = cmdEval(ctx, args[1:], stdout, stderr)
	case "vectors":
		err = cmdVectors(ctx, args[1:], stdout, stderr)
	case "rerank":
		err = cmdRerank(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageErr("unknown command %q\n%s", args[0], usage)
	}
	if err == nil && out.err != nil {
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	if err == nil || errors.Is(err, flag.ErrHelp) { // -h: the flag package printed the usage
		return 0
	}
	fmt.Fprintf(stderr, "evpack %s: %v\n", args[0], err)
	return exitCode(err)
}

// stickyWriter keeps the first error of its writer and refuses every write
// after it.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	s.err = err
	return n, err
}

// noArgs refuses positional arguments a command does not take: they were
// dropped without a word ("rerank train --corpus a.jsonl b.jsonl" trained on
// a.jsonl alone).
func noArgs(pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	return usageErr("unexpected argument %q (every input of this command is a flag; a repeatable flag is given once per value, as --corpus A --corpus B)", pos[0])
}

// exitCode maps an error to the documented exit status.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, evpack.ErrCorrupt), errors.Is(err, evpack.ErrOldFormat), errors.Is(err, evpack.ErrNewerFormat), errors.Is(err, evpack.ErrLocked),
		errors.Is(err, evpack.ErrBroken), errors.Is(err, fs.ErrPermission), errors.Is(err, retrieve.ErrLexical),
		errors.Is(err, evpack.ErrFenced), errors.Is(err, evpack.ErrLeaseHeld):
		// A lexical index that cannot be read is damage (rebuild-lexical
		// mends it), never bad usage.
		return 3
	}
	return 2
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterleaved parses flags that may follow positional arguments
// ("query --index d 'question' --k 3"), returning the positionals in order.
// "--" ends the flags: everything after it is positional ("purge ... --
// -a -b" purges chunks -a and -b; only -a was, and -b was an unknown flag).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if endedByDashes(fs, args[:len(args)-len(rest)]) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// endedByDashes reports whether the flag package stopped at "--" (the end
// of the flags) after reading consumed, rather than reading "--" as the
// value of the flag before it ("--reason --").
func endedByDashes(fs *flag.FlagSet, consumed []string) bool {
	n := len(consumed)
	if n == 0 || consumed[n-1] != "--" {
		return false
	}
	if n >= 2 {
		prev := consumed[n-2]
		name := strings.TrimLeft(prev, "-")
		if dashes := len(prev) - len(name); (dashes == 1 || dashes == 2) && !strings.Contains(name, "=") {
			if f := fs.Lookup(name); f != nil {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					return false // the flag's value
				}
			}
		}
	}
	return true
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
