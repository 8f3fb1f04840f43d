package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// ErrHTTPEmbedder wraps failures of an OpenAI-compatible embedding server.
var ErrHTTPEmbedder = errors.New("retrieve: http embedder")

// HTTPOptions configure an HTTPEmbedder.
type HTTPOptions struct {
	// URL is the server's base (https://api.openai.com, http://localhost:11434
	// for Ollama, a vLLM, TEI or llama.cpp server); /v1/embeddings is appended.
	URL   string
	Model string
	// Dims is the vector size the server must return.
	Dims int
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// BatchSize bounds texts per request (default 64).
	BatchSize int
	// Timeout bounds each request (default 30s).
	Timeout time.Duration
	// Retries after a 429 or 5xx answer or a transport error (default 4),
	// waiting Backoff, then twice as long each time (default 500ms).
	Retries int
	Backoff time.Duration
	// Client and Sleep default to http.DefaultClient and a context-aware
	// sleep; tests replace them.
	Client *http.Client
	Sleep  func(ctx context.Context, d time.Duration) error
}

// HTTPEmbedder embeds through POST /v1/embeddings, the API OpenAI, Ollama,
// vLLM, TEI and llama.cpp's server all speak. It implements Embedder and
// CorpusFree; its features are the text's runes.
type HTTPEmbedder struct{ o HTTPOptions }

// NewHTTPEmbedder validates the options.
func NewHTTPEmbedder(o HTTPOptions) (*HTTPEmbedder, error) {
	if o.URL == "" || o.Model == "" || o.Dims <= 0 {
		return nil, fmt.Errorf("%w: URL, Model and Dims are required", ErrHTTPEmbedder)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	o.URL = strings.TrimRight(o.URL, "/")
	return &HTTPEmbedder{o: o}, nil
}

// Identity implements Embedder. A remote model's weights cannot be hashed
// here: the identity names the server and model, and says so.
func (h *HTTPEmbedder) Identity() string {
	return fmt.Sprintf("http url=%s model=%s dims=%d (remote: weights unhashed)", h.o.URL, h.o.Model, h.o.Dims)
}

// Dims implements Embedder.
func (h *HTTPEmbedder) Dims() int { return h.o.Dims }

// CorpusFree implements CorpusFree.
func (h *HTTPEmbedder) CorpusFree() bool { return true }

// Analyze implements Embedder: the text itself, as runes.
func (h *HTTPEmbedder) Analyze(text string) []int32 { return []int32(text) }

// Embed implements Embedder.
func (h *HTTPEmbedder) Embed(ctx context.Context, features [][]int32, _ *Counts, _ bool) ([][]int8, error) {
	out := make([][]int8, 0, len(features))
	for start := 0; start < len(features); start += h.o.BatchSize {
		end := min(start+h.o.BatchSize, len(features))
		texts := make([]string, end-start)
		for i, f := range features[start:end] {
			texts[i] = string(f)
		}
		vecs, err := h.post(ctx, texts)
		if err != nil {
			return nil, err
		}
		for i, v := range vecs {
			q := Quantize(v)
			if q == nil {
				return nil, fmt.Errorf("%w: text %d: zero or non-finite vector", ErrHTTPEmbedder, start+i)
			}
			out = append(out, q)
		}
	}
	return out, nil
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

func (h *HTTPEmbedder) post(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": h.o.Model, "input": texts})
	wait := h.o.Backoff
	for attempt := 0; ; attempt++ {
		vecs, retry, err := h.once(ctx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		if !retry || attempt >= h.o.Retries {
			return nil, err
		}
		if err := h.o.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait *= 2
	}
}

// once makes one request; retry says whether a failure is worth retrying.
func (h *HTTPEmbedder) once(ctx context.Context, body []byte, n int) ([][]float32, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.o.URL+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrHTTPEmbedder, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.o.APIKey)
	}
	resp, err := h.o.Client.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil || errors.Is(err, context.DeadlineExceeded), fmt.Errorf("%w: %v", ErrHTTPEmbedder, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, true, fmt.Errorf("%w: reading the answer: %v", ErrHTTPEmbedder, err)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return nil, true, fmt.Errorf("%w: %s: %s", ErrHTTPEmbedder, resp.Status, snippet(raw))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("%w: %s: %s", ErrHTTPEmbedder, resp.Status, snippet(raw))
	}
	var r embeddingsResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false, fmt.Errorf("%w: answer is not an embeddings response: %v", ErrHTTPEmbedder, err)
	}
	if len(r.Data) != n {
		return nil, false, fmt.Errorf("%w: %d embeddings for %d texts", ErrHTTPEmbedder, len(r.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, false, fmt.Errorf("%w: bad or repeated index %d", ErrHTTPEmbedder, d.Index)
		}
		if len(d.Embedding) != h.o.Dims {
			return nil, false, fmt.Errorf("%w: model %s returned %d dimensions, configured %d", ErrHTTPEmbedder, h.o.Model, len(d.Embedding), h.o.Dims)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, false, fmt.Errorf("%w: text %d: component %d is %v", ErrHTTPEmbedder, d.Index, i, x)
			}
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, false, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
