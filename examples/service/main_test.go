package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/evpacktest"
)

// started is a service running on a loopback port for one test.
type started struct {
	base   string
	client *http.Client
	stop   context.CancelFunc
	done   chan error // serve's result, once it has returned
}

// start serves the demo corpus on 127.0.0.1:0. The listener is open before
// start returns, so requests need no waiting.
func start(t *testing.T) *started {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	eng, err := openEngine(ctx, "")
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &started{
		base:   "http://" + ln.Addr().String(),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second},
		stop:   stop,
		done:   make(chan error, 1),
	}
	go func() { s.done <- serve(ctx, ln, newHandler(eng), 5*time.Second) }()
	t.Cleanup(func() {
		stop()
		s.client.CloseIdleConnections()
	})
	return s
}

// get fetches path and returns the status, the hash header and the body.
func (s *started) get(t testing.TB, path string) (int, string, []byte, error) {
	resp, err := s.client.Get(s.base + path)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(HashHeader), body, err
}

func packPath(q, asOf, tenant string, k int) string {
	v := url.Values{"q": {q}, "as_of": {asOf}}
	if tenant != "" {
		v.Set("tenant", tenant)
	}
	if k != 0 {
		v.Set("k", fmt.Sprint(k))
	}
	return "/pack?" + v.Encode()
}

func TestConcurrentPacksAreIdenticalAndShutdownIsClean(t *testing.T) {
	s := start(t)
	distinct := []string{
		packPath("How long must a licensed firm retain records of client transactions?", "2020-06-30", "", 3),
		packPath("How long must a licensed firm retain records of client transactions?", "2026-01-15", "", 3),
		packPath("What is the maximum fine for failing to retain records?", "2025-12-15", "", 0),
		packPath("retention policy for client transaction records", "2025-01-01", "acme", 5),
		packPath("retention policy for client transaction records", "2025-01-01", "globex", 5),
		packPath("Can records be kept in electronic form?", "2026-01-15", "", 2),
	}
	const requests, workers = 1000, 32
	type result struct {
		path   string
		status int
		hash   string
		body   []byte
		err    error
	}
	jobs := make(chan string)
	results := make(chan result, requests)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				status, hash, body, err := s.get(t, p)
				results <- result{p, status, hash, body, err}
			}
		}()
	}
	for i := range requests {
		jobs <- distinct[i%len(distinct)]
	}
	close(jobs)
	wg.Wait()
	close(results)

	first := map[string][]byte{}
	n := 0
	for r := range results {
		n++
		require.NoError(t, r.err, r.path)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", r.path, r.body)
		sum := blake3.Sum256(r.body)
		require.Equal(t, "blake3:"+hex.EncodeToString(sum[:]), r.hash, r.path)
		if want, ok := first[r.path]; ok {
			require.Equal(t, want, r.body, "%s: bytes differ between requests", r.path)
		} else {
			first[r.path] = r.body
		}
	}
	require.Equal(t, requests, n)
	require.Len(t, first, len(distinct))

	// The bytes are the engine's own: pinned in a golden file, and parsed
	// back to the request they answer.
	evpacktest.GoldenBytes(t, "testdata/golden/retention-2020.json", first[distinct[0]])
	p, err := evidence.Parse(first[distinct[3]])
	require.NoError(t, err)
	require.Equal(t, "acme", p.Tenant)
	require.Equal(t, 5, p.K)

	// Shutdown: serve returns nil, and nothing answers on the port any more.
	// The client hangs up its idle connections first, as a client going
	// away does: http.Server.Shutdown waits up to 5 s for a connection
	// that was opened but never sent a request (the transport dials spares).
	s.client.CloseIdleConnections()
	s.stop()
	require.NoError(t, <-s.done)
	_, _, _, err = s.get(t, distinct[0])
	require.Error(t, err, "a request after shutdown must find no server")
}

func TestVerify(t *testing.T) {
	s := start(t)
	status, _, pack, err := s.get(t, packPath("What is the maximum fine for failing to retain records?", "2025-12-15", "", 3))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "%s", pack)

	post := func(body []byte) (int, verifyResponse) {
		t.Helper()
		resp, err := s.client.Post(s.base+"/verify", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var v verifyResponse
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		return resp.StatusCode, v
	}
	status, v := post(pack)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, verifyResponse{OK: true, Hash: evidence.Sum(pack), ReplayHash: evidence.Sum(pack), Problems: []string{}}, v)

	forged := bytes.Replace(pack, []byte("50,000 dirhams"), []byte("5,000 dirhams"), 1)
	status, v = post(forged)
	require.Equal(t, http.StatusConflict, status)
	require.False(t, v.OK)
	require.Equal(t, evidence.Sum(forged), v.Hash)
	require.Equal(t, evidence.Sum(pack), v.ReplayHash)
	require.Equal(t, []string{
		"citation [1] records-act/art-4@2018: pack text differs from the stored text",
		"replay differs: citation [1] records-act/art-4@2018 differs in its fields",
	}, v.Problems)
}

func TestBadInput(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		method, path, body string
		want               string
	}{
		{"GET", "/pack?as_of=2026-01-15", "", "q: the question is required"},
		{"GET", "/pack?q=retention&as_of=15.01.2026", "", "as_of: "},
		{"GET", "/pack?q=retention", "", "as_of: "},
		{"GET", "/pack?q=retention&as_of=2026-01-15&k=0", "", `k "0": want an integer in [1, 100]`},
		{"GET", "/pack?q=retention&as_of=2026-01-15&k=ten", "", `k "ten": want an integer in [1, 100]`},
		{"GET", "/pack?q=retention&as_of=2026-01-15&filter=kind", "", `filter "kind": want KEY=VALUE`},
		{"POST", "/verify", "not a pack", "verify: evidence: malformed pack"},
		{"POST", "/verify", "", "verify: evidence: malformed pack"},
	} {
		req, err := http.NewRequest(tc.method, s.base+tc.path, bytes.NewReader([]byte(tc.body)))
		require.NoError(t, err)
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		var e struct {
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		require.NoError(t, err, tc.path)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", tc.method, tc.path, e.Error)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.Contains(t, e.Error, tc.want, "%s %s", tc.method, tc.path)
	}
}
