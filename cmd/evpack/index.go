package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/bert"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/connectors/edgar"
	"github.com/evpack/evpack/connectors/files"
	"github.com/evpack/evpack/connectors/fred"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/rerank"
)

func cmdIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ingest", stderr)
	dir := fs.String("index", "", "index directory (created if absent)")
	conn := fs.String("connector", "", "jsonl, statute, edgar, fred or files")
	retrievedAt := fs.String("retrieved-at", "", "retrieval time stamped on edgar and fred chunks (RFC 3339; default now)")
	logDSN := fs.String("log", "", "PostgreSQL DSN of a shared log: append the commit there first, as its fenced writer")
	holder := fs.String("holder", defaultHolder(), "with --log: this writer's name in the lease")
	lease := fs.Duration("lease", 30*time.Second, "with --log: how long the lease lasts without renewal")
	dense := denseFlags(fs)
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(paths) == 0 {
		return usageErr("need --index DIR and at least one PATH")
	}
	retrieved := time.Now().UTC().Truncate(time.Second)
	if *retrievedAt != "" {
		if retrieved, err = asof.ParseInstant(*retrievedAt); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--retrieved-at: %w", err)}
		}
	}
	var c connectors.Connector
	switch *conn {
	case "jsonl":
		c = connectors.NewJSONL(paths...)
	case "statute":
		c = connectors.NewStatute(paths...)
	case "fred":
		c = fred.New(retrieved, paths...)
	case "edgar", "files":
		if len(paths) != 1 {
			return usageErr("--connector %s takes one directory", *conn)
		}
		if *conn == "edgar" {
			c = edgar.New(paths[0], retrieved)
		} else {
			c = files.New(paths[0])
		}
	default:
		return usageErr("--connector %q: want jsonl, statute, edgar, fred or files", *conn)
	}
	opts, err := dense()
	if err != nil {
		return err
	}
	// The sources are read, and the log reached, before Open, which
	// creates the index: a refused ingest leaves no empty index behind.
	recs, err := c.Read(ctx)
	if err != nil {
		return err
	}
	var log *evpack.PostgresLog
	if *logDSN != "" {
		if log, err = evpack.OpenPostgresLog(ctx, *logDSN); err != nil {
			return err
		}
		defer log.Close()
	}
	eng, err := evpack.Open(*dir, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	if log != nil {
		if err := eng.Lead(ctx, log, *holder, *lease); err != nil {
			return err
		}
		defer eng.Resign(context.WithoutCancel(ctx))
	}
	var bar *progressbar.ProgressBar
	rep, err := eng.Ingest(ctx, connectors.Records(recs), evpack.IngestOptions{Progress: func(done, total int) {
		if total < 1000 { // a bar only on long runs
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("ingest"),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
		}
		bar.Set(done)
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "read %d records: %d added (%d documents, %d versions), %d unchanged, %s, %d flagged; generation %d\n",
		rep.Read, rep.Added, rep.Documents, rep.Versions, rep.Unchanged, factCounts(rep.NewFacts), len(rep.Flagged), rep.Generation)
	for i, f := range rep.NewFacts {
		if i == maxFactLines {
			fmt.Fprintf(stdout, "and %d more facts (evpack history --index %s lists what each commit ended)\n", len(rep.NewFacts)-i, *dir)
			break
		}
		fmt.Fprintf(stdout, "fact: %s\n", factLine(f))
	}
	for _, f := range rep.Flagged {
		fmt.Fprintf(stdout, "flagged %s: %s\n", f.ChunkID, f.Reason)
	}
	return nil
}

// maxFactLines bounds the facts an ingest names one per line.
const maxFactLines = 20

// factCounts renders the facts of one ingest as "4 facts (3 superseded,
// 1 ended)": a record that ended or superseded a stored chunk is counted
// here, not as unchanged or added.
func factCounts(facts []evidence.Fact) string {
	if len(facts) == 0 {
		return "0 facts"
	}
	n := map[evidence.FactKind]int{} // read in the fixed order below
	for _, f := range facts {
		n[f.Kind]++
	}
	var parts []string
	for _, k := range []evidence.FactKind{evidence.FactSuperseded, evidence.FactEnded, evidence.FactRetracted} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return fmt.Sprintf("%d %s (%s)", len(facts), plural(len(facts), "fact", "facts"), strings.Join(parts, ", "))
}

// factLine names one fact: its kind, its chunk, the replacing chunk, the
// first day the chunk is no longer valid and, when later, the instant the
// end became known.
func factLine(f evidence.Fact) string {
	s := string(f.Kind) + " " + f.ChunkID
	if f.By != "" {
		s += " by " + f.By
	}
	s += " from " + f.End.String()
	if f.Anchor.After(f.End.Start()) {
		s += " (known " + asof.FormatInstant(f.Anchor) + ")"
	}
	return s
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query", stderr)
	dir := fs.String("index", "", "index directory")
	asOf := fs.String("as-of", "", "the day the answer is as of, YYYY-MM-DD")
	tenant := fs.String("tenant", "", "tenant whose evidence may be cited")
	k := fs.Int("k", 0, "citations (default 10)")
	format := fs.String("format", "text", "json (the canonical bytes) or text")
	generation := fs.Int64("generation", 0, "answer from this generation of the index (default: the latest)")
	knownAt := fs.String("known-at", "", "answer from the last generation committed at or before this instant (RFC 3339): what would we have cited then. "+
		"It reads the index's commit clock, not the sources' dates: for an index backfilled today, pin --generation (see evpack history)")
	periodFlag := fs.String("period", "", "the period asked about (2019, FY2018, 2021-Q3, 2020-12-31, or none): overrides the question's")
	var filters multiFlag
	fs.Var(&filters, "filter", "KEY=VALUE metadata restriction (repeatable)")
	dense := rerankerFlag(fs, denseFlags(fs))
	model := modelFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) == 0 {
		return usageErr("need --index DIR, --as-of DATE and a QUESTION")
	}
	day, err := asof.ParseDate(*asOf)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--as-of: %w", err)}
	}
	req := evpack.Request{Question: strings.Join(pos, " "), AsOf: day, Tenant: *tenant, K: *k, Generation: *generation, Period: *periodFlag}
	if *knownAt != "" {
		if req.KnownAt, err = asof.ParseInstant(*knownAt); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--known-at: %w", err)}
		}
	}
	for _, f := range filters {
		key, val, ok := strings.Cut(f, "=")
		if !ok || key == "" {
			return usageErr("--filter %q: want KEY=VALUE", f)
		}
		if req.Filters == nil {
			req.Filters = map[string]string{}
		}
		if old, ok := req.Filters[key]; ok && old != val { // a request holds one value a key
			return usageErr("--filter %s given twice (%q and %q)", key, old, val)
		}
		req.Filters[key] = val
	}
	if *format != "json" && *format != "text" {
		return usageErr("--format %q: want json or text", *format)
	}
	eng, closeModel, err := openWithModel(*dir, dense, model)
	if err != nil {
		return err
	}
	defer closeModel()
	defer eng.Close()
	p, err := eng.Query(ctx, req)
	if err != nil {
		return err
	}
	if *format == "json" {
		_, err = stdout.Write(p.Bytes())
		return err
	}
	_, err = io.WriteString(stdout, p.Text())
	return err
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	dir := fs.String("index", "", "index directory")
	dense := rerankerFlag(fs, denseFlags(fs))
	model := modelFlags(fs)
	model.retired = fs.String("retired-reranker", "", "trust a model that can no longer run, by the identity its packs record (the fingerprint's \"reranker\"): its packs verify from their ledgers")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 1 {
		return usageErr("need --index DIR and one PACK.json")
	}
	if model.set() && *model.retired != "" {
		return usageErr("--cross-encoder and --retired-reranker name two rerankers; give one")
	}
	raw, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	eng, closeModel, err := openWithModel(*dir, dense, model)
	if err != nil {
		return err
	}
	defer closeModel()
	defer eng.Close()
	// A pack a model reranked replays from its ledger without the model;
	// with --cross-encoder the model also runs once, to say whether a fresh
	// run would cite the same chunks in the same order.
	rep, err := eng.Replay(ctx, raw, model.set())
	if err != nil {
		return packErr(pos[0], err)
	}
	if rep.OK() && !rep.Replayed { // an old form that names no generation
		fmt.Fprintf(stdout, "ok, not replayed: %s (%s); what still holds:\n", rep.Hash, rep.Format)
		for _, h := range rep.Holds {
			fmt.Fprintf(stdout, "- %s\n", h)
		}
		return nil
	}
	if rep.OK() {
		fmt.Fprintf(stdout, "ok: %s replays byte-identically\n", rep.Hash)
		if rep.EndsKnownLater {
			fmt.Fprintln(stdout, "note: made before issue 31, it shows validity ends learned after its as-of day; a new pack would not")
		}
		switch {
		case !rep.ModelChecked:
		case rep.ModelAgrees:
			fmt.Fprintln(stdout, "model check: a fresh run of the cross-encoder cites the same chunks in the same order")
		default:
			fmt.Fprintf(stdout, "model check: a fresh run of the cross-encoder would cite %s (the pack stands on its ledger)\n",
				strings.Join(rep.ModelOrder, ", "))
		}
		return nil
	}
	switch {
	case len(rep.Purged) > 0:
		fmt.Fprintf(stdout, "FAILED: %s cannot be replayed: %d of its citations %s purged text\n", rep.Hash,
			len(rep.Purged), plural(len(rep.Purged), "cites", "cite"))
	case rep.ReplayHash != "":
		fmt.Fprintf(stdout, "FAILED: %s (replay gives %s)\n", rep.Hash, rep.ReplayHash)
	default:
		fmt.Fprintf(stdout, "FAILED: %s\n", rep.Hash)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "- %s\n", p)
	}
	if pk, perr := evidence.Parse(raw); perr == nil && len(rep.Purged) > 0 && len(rep.Problems) == len(rep.Purged) && len(pk.Citations) > len(rep.Purged) {
		// What still holds: Verify checked every other citation's text.
		citations := len(pk.Citations)
		n := citations - len(rep.Purged)
		fmt.Fprintf(stdout, "holds: the pack's other %d %s still %s the index's text\n", n,
			plural(n, "citation", "citations"), plural(n, "matches", "match"))
	}
	return &exitError{code: 1, err: fmt.Errorf("pack %s does not verify: %d %s", pos[0], len(rep.Problems), plural(len(rep.Problems), "problem", "problems"))}
}

// packErr names the pack file in an error about its bytes (malformed, not
// canonical): "evidence: malformed pack: unexpected EOF" said which file
// only by the command line.
func packErr(path string, err error) error {
	if errors.Is(err, evidence.ErrBadPack) || errors.Is(err, evidence.ErrNotCanonical) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// modelOptions are the flags that put a cross-encoder in the pipeline, and
// (verify only) the identity of a retired one.
type modelOptions struct {
	dir     *string
	cuda    *bool
	retired *string // nil where the command has no --retired-reranker
}

// modelFlags registers --cross-encoder and --cuda (query and verify).
func modelFlags(fs *flag.FlagSet) modelOptions {
	return modelOptions{
		dir: fs.String("cross-encoder", "", "MODEL_DIR of a cross-encoder (model.onnx + tokenizer.json or vocab.txt; needs $EVPACK_ORT_LIB) "+
			"that reranks the pool; its scores are recorded in the pack's ledger, so the pack verifies without it"),
		cuda: fs.Bool("cuda", false, "run the cross-encoder on CUDA (an error, never a silent CPU fallback, if CUDA is unavailable)"),
	}
}

// set reports whether a cross-encoder was asked for.
func (m modelOptions) set() bool { return *m.dir != "" }

// reranker loads the cross-encoder the flags name, or returns nil for none.
func (m modelOptions) reranker() (*bert.CrossEncoder, error) {
	if !m.set() {
		if *m.cuda {
			return nil, usageErr("--cuda needs --cross-encoder MODEL_DIR")
		}
		return nil, nil
	}
	ce, err := bert.NewCrossEncoder(filepath.Base(filepath.Clean(*m.dir)), bert.Options{Dir: *m.dir, CUDA: *m.cuda})
	if err != nil {
		return nil, fmt.Errorf("--cross-encoder %s: %w", *m.dir, err)
	}
	return ce, nil
}

// openWithModel opens an existing index with the options the dense flags
// name and the cross-encoder the model flags name as its reranker. The
// returned func releases the model.
func openWithModel(dir string, dense func() (evpack.Options, error), model modelOptions) (*evpack.Engine, func() error, error) {
	opts, err := dense()
	if err != nil {
		return nil, nil, err
	}
	ce, err := model.reranker()
	if err != nil {
		return nil, nil, err
	}
	release := func() error { return nil }
	switch {
	case ce != nil:
		opts.Reranker, release = ce, ce.Close
	case model.retired != nil && *model.retired != "":
		opts.Reranker = rerank.Retired(*model.retired)
	}
	eng, err := evpack.OpenExisting(dir, opts)
	if err != nil {
		release()
		return nil, nil, err
	}
	return eng, release, nil
}

// openExisting opens an index that must already exist, with the options
// the dense flags name: a missing, empty or foreign directory is
// evpack.ErrNotIndex, never a new index.
func openExisting(dir string, dense func() (evpack.Options, error)) (*evpack.Engine, error) {
	opts, err := dense()
	if err != nil {
		return nil, err
	}
	return evpack.OpenExisting(dir, opts)
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stderr)
	dir := fs.String("index", "", "index directory")
	logDSN := fs.String("log", "", "PostgreSQL DSN of the log this index follows: compare their histories too")
	dense := denseFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || len(pos) != 0 {
		return usageErr("need --index DIR and nothing else")
	}
	eng, err := openExisting(*dir, dense)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := eng.CheckIndex(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "index %s: generation %d, %d chunks\n", *dir, rep.Generation, rep.Chunks)
	for _, f := range rep.Files {
		var held []string
		for _, n := range []struct {
			n    int
			what string
		}{{f.Chunks, "chunks"}, {f.Facts, "facts"}, {f.Purges, "purges"}} {
			if n.n > 0 {
				held = append(held, fmt.Sprintf("%d %s", n.n, n.what))
			}
		}
		if len(held) > 0 {
			fmt.Fprintf(stdout, "file %s %s (%s)\n", f.Name, f.Sum, strings.Join(held, ", "))
		} else {
			fmt.Fprintf(stdout, "file %s %s\n", f.Name, f.Sum)
		}
	}
	for _, s := range rep.Strays {
		fmt.Fprintf(stdout, "stray %s (not named by the manifest; left alone)\n", s)
	}
	if *logDSN != "" {
		log, err := evpack.OpenPostgresLog(ctx, *logDSN)
		if err != nil {
			return err
		}
		defer log.Close()
		problems, err := eng.CheckLog(ctx, log)
		if err != nil {
			return err
		}
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "log: generations 1 to %d are the log's, sum for sum\n", rep.Generation)
		}
		rep.Problems = append(rep.Problems, problems...)
	}
	if rep.OK() {
		fmt.Fprintln(stdout, "ok: every file matches its checksum, every chunk its content hash, the lexical index the chunks")
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "problem: %s\n", p)
	}
	return &exitError{code: 1, err: fmt.Errorf("index %s: %d %s", *dir, len(rep.Problems), plural(len(rep.Problems), "problem", "problems"))}
}

// rerankerFlag adds --reranker to fs and sets it in the options opts makes.
// A pack verifies only with the reranker that ranked it.
func rerankerFlag(fs *flag.FlagSet, opts func() (evpack.Options, error)) func() (evpack.Options, error) {
	rr := fs.String("reranker", "learned", "learned[:MODEL] (the default: the embedded model), arithmetic, none, smoothed or cross-encoder:MODEL_DIR (verify needs the one that ranked the pack)")
	return func() (evpack.Options, error) {
		o, err := opts()
		if err != nil {
			return o, err
		}
		if o.Reranker, err = rerankerNamed(*rr); err != nil {
			return o, err
		}
		return o, nil
	}
}

// cmdPurge deletes chunks' text for good (evpack.Engine.Purge): the legal
// deletion, recorded as a generation of its own with its reason.
func cmdPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("purge", stderr)
	dir := fs.String("index", "", "index directory")
	reason := fs.String("reason", "", "why the text is deleted (recorded with the purge)")
	dense := denseFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || *reason == "" || len(pos) == 0 {
		return usageErr("need --index DIR, --reason TEXT and one or more CHUNK_IDs")
	}
	eng, err := openExisting(*dir, dense)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := eng.Purge(ctx, pos, *reason)
	if err != nil {
		if errors.Is(err, evpack.ErrBadRequest) {
			return &exitError{code: 2, err: err}
		}
		return err
	}
	fmt.Fprintf(stdout, "purged %d %s at generation %d: %s\n", len(rep.Purged), plural(len(rep.Purged), "chunk", "chunks"), rep.Generation, strings.Join(rep.Purged, ", "))
	for _, f := range rep.Rewritten {
		fmt.Fprintf(stdout, "rewrote %s without their text\n", f)
	}
	return nil
}

// defaultHolder names this process in a log's lease: host and pid.
func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return fmt.Sprintf("evpack@%s:%d", host, os.Getpid())
}

func cmdFollow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("follow", stderr)
	dir := fs.String("index", "", "the replica's index directory (created if absent)")
	logDSN := fs.String("log", "", "PostgreSQL DSN of the shared log to follow")
	until := fs.Int64("until", 0, "stop once this generation is applied (0: follow until interrupted)")
	name := fs.String("name", "", "this replica's name in the log's audit rows (default: none recorded)")
	dense := denseFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" || *logDSN == "" || len(pos) > 0 || *until < 0 {
		return usageErr("need --index DIR and --log DSN, no arguments, and --until GEN >= 0")
	}
	opts, err := dense()
	if err != nil {
		return err
	}
	log, err := evpack.OpenPostgresLog(ctx, *logDSN) // before Open, which creates the index
	if err != nil {
		return err
	}
	defer log.Close()
	eng, err := evpack.Open(*dir, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	err = eng.Follow(ctx, log, evpack.FollowOptions{Until: *until, Replica: *name})
	if errors.Is(err, context.Canceled) && *until == 0 {
		err = nil // interrupted: a follower without --until stops so
	}
	fmt.Fprintf(stdout, "applied through generation %d\n", eng.AppliedGeneration())
	return err
}
