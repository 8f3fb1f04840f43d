package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers /v1/embeddings with a 3-d vector per text derived from
// its length, after failing the first `fail` requests with status code.
func fakeServer(t *testing.T, fail int, code int, dims int) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if int(n) <= fail {
			http.Error(w, "slow down", code)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order, as servers may answer
			v := make([]float64, dims)
			v[0], v[1%dims] = float64(len(req.Input[i])), 1
			data = append(data, item{Index: i, Embedding: v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestHTTPEmbedder(t *testing.T) {
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	srv, calls := fakeServer(t, 2, http.StatusTooManyRequests, 3)
	h, err := NewHTTPEmbedder(HTTPOptions{URL: srv.URL + "/", Model: "m", Dims: 3, APIKey: "k", BatchSize: 2, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc"}
	feats := make([][]int32, len(texts))
	for i, s := range texts {
		feats[i] = h.Analyze(s)
	}
	vecs, err := h.Embed(context.Background(), feats, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// Two batches (2 + 1 texts), the first retried twice after 429s.
	if calls.Load() != 4 || fmt.Sprint(slept) != "[500ms 1s]" {
		t.Fatalf("calls %d, backoff %v", calls.Load(), slept)
	}
	if fmt.Sprint(vecs) != "[[90 90 0] [114 57 0] [120 40 0]]" {
		t.Fatalf("vectors %v: in input order, unit length ×127", vecs)
	}
	if !strings.Contains(h.Identity(), "model=m dims=3") {
		t.Fatal(h.Identity())
	}
}

func TestHTTPEmbedderErrors(t *testing.T) {
	noSleep := func(context.Context, time.Duration) error { return nil }
	cases := []struct {
		name             string
		fail, code, dims int
		want             string
	}{
		{"dimension mismatch", 0, 0, 4, "returned 4 dimensions, configured 3"},
		{"server keeps failing", 99, http.StatusServiceUnavailable, 3, "503"},
		{"client error is not retried", 99, http.StatusUnauthorized, 3, "401"},
	}
	for _, c := range cases {
		srv, calls := fakeServer(t, c.fail, c.code, c.dims)
		h, _ := NewHTTPEmbedder(HTTPOptions{URL: srv.URL, Model: "m", Dims: 3, APIKey: "k", Retries: 2, Sleep: noSleep})
		_, err := h.Embed(context.Background(), [][]int32{h.Analyze("x")}, nil, false)
		if !errors.Is(err, ErrHTTPEmbedder) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.code == http.StatusUnauthorized && calls.Load() != 1 {
			t.Errorf("%s: %d calls", c.name, calls.Load())
		}
		if c.code == http.StatusServiceUnavailable && calls.Load() != 3 {
			t.Errorf("%s: %d calls, want 1 + 2 retries", c.name, calls.Load())
		}
	}
	if _, err := NewHTTPEmbedder(HTTPOptions{URL: "http://x"}); !errors.Is(err, ErrHTTPEmbedder) {
		t.Fatal("model and dims are required")
	}
}

func TestHTTPEmbedderStopsWhenCancelled(t *testing.T) {
	srv, calls := fakeServer(t, 0, 0, 3)
	h, _ := NewHTTPEmbedder(HTTPOptions{URL: srv.URL, Model: "m", Dims: 3, APIKey: "k"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Embed(ctx, [][]int32{h.Analyze("x")}, nil, false); err == nil {
		t.Fatal("a cancelled context still embedded")
	}
	if calls.Load() != 0 {
		t.Fatalf("%d requests after cancellation", calls.Load())
	}
}
