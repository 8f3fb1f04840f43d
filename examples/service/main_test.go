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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
	"github.com/evpack/evpack/evpacktest"
)

// The demo tokens of testdata/tokens.txt.
const (
	acmeToken   = "acme-demo-token-0001"
	globexToken = "globex-demo-token-0002"
	sharedToken = "shared-demo-token-0003"
)

// started is a service running on a loopback port for one test.
type started struct {
	base   string
	eng    *evpack.Engine
	client *http.Client
	stop   context.CancelFunc
	done   chan error // serve's result, once it has returned
}

// start serves the demo corpus on 127.0.0.1:0 to the demo tokens, with a
// /verify body limit of maxBody. The listener is open before start returns,
// so requests need no waiting.
func start(t *testing.T, maxBody int64) *started {
	t.Helper()
	return startWith(t, maxBody, timeouts{grace: 5 * time.Second, read: 30 * time.Second})
}

// startWith is start with the server's timeouts to.
func startWith(t *testing.T, maxBody int64, to timeouts) *started {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	tokens, err := loadTokens(filepath.Join("testdata", "tokens.txt"))
	require.NoError(t, err)
	eng, err := openEngine(ctx, "", filepath.Join("..", "..", "testdata", "corpus"), evpack.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &started{
		base:   "http://" + ln.Addr().String(),
		eng:    eng,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second},
		stop:   stop,
		done:   make(chan error, 1),
	}
	go func() { s.done <- serve(ctx, ln, newHandler(eng, tokens, maxBody), to) }()
	t.Cleanup(func() {
		stop()
		s.client.CloseIdleConnections()
	})
	return s
}

// reply is what the service answered.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errorText is the "error" field of a JSON error answer.
func (r reply) errorText(t testing.TB) string {
	t.Helper()
	require.Equal(t, "application/json", r.header.Get("Content-Type"), "%s", r.body)
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
	return e.Error
}

// do sends a request with token as its bearer token ("" sends none).
func (s *started) do(method, path, token string, body []byte) (reply, error) {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}, err
}

// must is do for a request that has to reach the service.
func (s *started) must(t testing.TB, method, path, token string, body []byte) reply {
	t.Helper()
	r, err := s.do(method, path, token, body)
	require.NoError(t, err, "%s %s", method, path)
	return r
}

func packPath(q, asOf string, k int, extra ...string) string {
	v := url.Values{"q": {q}, "as_of": {asOf}}
	if k != 0 {
		v.Set("k", fmt.Sprint(k))
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Add(extra[i], extra[i+1])
	}
	return "/pack?" + v.Encode()
}

// cited returns the chunk IDs a pack's bytes cite, in order.
func cited(t testing.TB, body []byte) []string {
	t.Helper()
	p, err := evidence.Parse(body)
	require.NoError(t, err, "%s", body)
	var ids []string
	for _, c := range p.Citations {
		ids = append(ids, c.ChunkID)
	}
	return ids
}

func TestConcurrentPacksAreIdenticalAndShutdownIsClean(t *testing.T) {
	s := start(t, 16<<20)
	type job struct{ path, token string }
	distinct := []job{
		{packPath("How long must a licensed firm retain records of client transactions?", "2020-06-30", 3), sharedToken},
		{packPath("How long must a licensed firm retain records of client transactions?", "2026-01-15", 3), sharedToken},
		{packPath("What is the maximum fine for failing to retain records?", "2025-12-15", 0), sharedToken},
		{packPath("retention policy for client transaction records", "2025-01-01", 5), acmeToken},
		{packPath("retention policy for client transaction records", "2025-01-01", 5), globexToken},
		{packPath("Can records be kept in electronic form?", "2026-01-15", 2), acmeToken},
	}
	const requests, workers = 1000, 32
	type result struct {
		job
		reply
		err error
	}
	jobs := make(chan job)
	results := make(chan result, requests)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r, err := s.do("GET", j.path, j.token, nil)
				results <- result{j, r, err}
			}
		}()
	}
	for i := range requests {
		jobs <- distinct[i%len(distinct)]
	}
	close(jobs)
	wg.Wait()
	close(results)

	first := map[job][]byte{}
	n := 0
	for r := range results {
		n++
		require.NoError(t, r.err, r.path)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", r.path, r.body)
		sum := blake3.Sum256(r.body)
		require.Equal(t, "blake3:"+hex.EncodeToString(sum[:]), r.header.Get(HashHeader), r.path)
		if want, ok := first[r.job]; ok {
			require.Equal(t, want, r.body, "%s: bytes differ between requests", r.path)
		} else {
			first[r.job] = r.body
		}
	}
	require.Equal(t, requests, n)
	require.Len(t, first, len(distinct))

	// The bytes are the engine's own: pinned in a golden file, and parsed
	// back to the request they answer, the token's tenant included.
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
	_, err = s.do("GET", distinct[0].path, sharedToken, nil)
	require.Error(t, err, "a request after shutdown must find no server")
}

// TestTenantIsTheTokens: acme's token never reads globex's evidence: not
// in a pack, not by naming globex, not by verifying globex's pack.
func TestTenantIsTheTokens(t *testing.T) {
	s := start(t, 16<<20)
	// Besides the demo corpus's policies, each tenant gets a note that
	// answers the question word for word.
	ctx := context.Background()
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	note := func(tenant string) connectors.Record {
		return connectors.Record{Chunk: evidence.Chunk{
			ID: tenant + "-phone-note", DocID: tenant + "-phone", Tenant: tenant, Connector: "test",
			Text:      strings.ToUpper(tenant[:1]) + tenant[1:] + " keeps recordings of client telephone calls for twelve years.",
			SourceURL: "https://intranet." + tenant + ".example/phone", RetrievedAt: at, Anchor: asof.ResolveAnchor("", time.Time{}, at),
		}}
	}
	_, err := s.eng.Ingest(ctx, connectors.Records{note("acme"), note("globex")}, evpack.IngestOptions{})
	require.NoError(t, err)

	questions := []string{
		packPath("retention policy for client transaction records", "2025-06-01", 100),
		packPath("How long does Globex keep recordings of client telephone calls?", "2025-06-01", 100),
	}
	var globexPacks [][]byte
	for _, q := range questions {
		g := s.must(t, "GET", q, globexToken, nil)
		require.Equal(t, http.StatusOK, g.status, "%s", g.body)
		require.Contains(t, cited(t, g.body), "globex-policy-1", "globex reads its own evidence")
		require.Contains(t, cited(t, g.body), "globex-phone-note")
		globexPacks = append(globexPacks, g.body)

		a := s.must(t, "GET", q, acmeToken, nil)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		ids := cited(t, a.body)
		require.Contains(t, ids, "acme-policy-1", "acme reads its own evidence")
		require.Contains(t, ids, "acme-phone-note")
		for _, id := range ids {
			require.False(t, strings.HasPrefix(id, "globex-"), "acme's pack cites %s", id)
		}
		require.NotContains(t, string(a.body), "Globex retains", "globex's policy text in acme's pack")
		require.NotContains(t, string(a.body), "Globex keeps", "globex's note text in acme's pack")

		// Naming globex is refused: the tenant is the token's.
		named := s.must(t, "GET", q+"&tenant=globex", acmeToken, nil)
		require.Equal(t, http.StatusBadRequest, named.status)
		require.Equal(t, `unknown query parameter "tenant" (the tenant is the token's)`, named.errorText(t))
	}

	// Verifying globex's pack would replay globex's evidence for acme.
	for _, p := range globexPacks {
		r := s.must(t, "POST", "/verify", acmeToken, p)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Equal(t, "the pack is another tenant's", r.errorText(t))
		r = s.must(t, "POST", "/verify", globexToken, p)
		require.Equal(t, http.StatusOK, r.status, "globex verifies its own pack: %s", r.body)
	}
	// The shared corpus's callers see neither tenant.
	shared := s.must(t, "GET", questions[1], sharedToken, nil)
	require.Equal(t, http.StatusOK, shared.status, "%s", shared.body)
	for _, id := range cited(t, shared.body) {
		require.False(t, strings.HasPrefix(id, "globex-") || strings.HasPrefix(id, "acme-"), "the shared caller's pack cites %s", id)
	}
}

func TestAuthentication(t *testing.T) {
	s := start(t, 16<<20)
	path := packPath("retention period", "2026-01-15", 3)
	for _, tc := range []struct {
		name, header, want, challenge string
	}{
		{"no header", "", "want the header Authorization: Bearer TOKEN", `Bearer realm="evpack"`},
		{"basic auth", "Basic YWNtZTpzZWNyZXQ=", "want the header Authorization: Bearer TOKEN", `Bearer realm="evpack"`},
		{"empty bearer", "Bearer ", "want the header Authorization: Bearer TOKEN", `Bearer realm="evpack"`},
		{"unknown token", "Bearer acme-demo-token-0009", "unknown token", `Bearer realm="evpack", error="invalid_token"`},
		{"a token's prefix", "Bearer acme-demo-token-000", "unknown token", `Bearer realm="evpack", error="invalid_token"`},
		{"lower-case scheme", "bearer " + acmeToken, "want the header Authorization: Bearer TOKEN", `Bearer realm="evpack"`},
	} {
		for _, ep := range []struct{ method, path string }{{"GET", path}, {"POST", "/verify"}} {
			req, err := http.NewRequest(ep.method, s.base+ep.path, strings.NewReader("{}"))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := s.client.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			r := reply{resp.StatusCode, resp.Header, body}
			require.Equal(t, http.StatusUnauthorized, r.status, "%s %s", tc.name, ep.method)
			require.Equal(t, tc.challenge, r.header.Get("WWW-Authenticate"), tc.name)
			require.Equal(t, tc.want, r.errorText(t), tc.name)
		}
	}
	require.Equal(t, http.StatusOK, s.must(t, "GET", path, acmeToken, nil).status, "the same request with a token")
}

func TestVerify(t *testing.T) {
	s := start(t, 16<<20)
	got := s.must(t, "GET", packPath("What is the maximum fine for failing to retain records?", "2025-12-15", 3), sharedToken, nil)
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	pack := got.body

	post := func(body []byte) (int, verifyResponse) {
		t.Helper()
		r := s.must(t, "POST", "/verify", sharedToken, body)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var v verifyResponse
		require.NoError(t, json.Unmarshal(r.body, &v))
		return r.status, v
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

// TestBodyTooLarge: a /verify body over the limit is 413; one at the limit
// is read.
func TestBodyTooLarge(t *testing.T) {
	const limit = 1024
	s := start(t, limit)
	r := s.must(t, "POST", "/verify", acmeToken, bytes.Repeat([]byte("x"), limit+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "%s", r.body)
	require.Equal(t, "body over 1024 bytes", r.errorText(t))

	r = s.must(t, "POST", "/verify", acmeToken, bytes.Repeat([]byte(" "), limit))
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Equal(t, "body is not an evidence pack: EOF", r.errorText(t))
}

// TestPinnedRequestReplays: a request pinned to a generation gives the
// bytes it gave then, after a later ingest moved the latest pack.
func TestPinnedRequestReplays(t *testing.T) {
	s := start(t, 16<<20)
	q := packPath("How long are client transaction records retained?", "2025-06-01", 3)
	before := s.must(t, "GET", q, acmeToken, nil)
	require.Equal(t, http.StatusOK, before.status, "%s", before.body)
	p, err := evidence.Parse(before.body)
	require.NoError(t, err)
	gen := p.Generation
	require.Equal(t, int64(2), gen, "the demo corpus is two ingests")

	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	_, err = s.eng.Ingest(context.Background(), connectors.Records{{Chunk: evidence.Chunk{
		ID: "acme-memo-7", DocID: "acme-memo", Tenant: "acme", Connector: "test",
		Text:      "ACME memo: client transaction records are retained for twelve years.",
		SourceURL: "https://intranet.acme.example/memo-7", RetrievedAt: at, Anchor: asof.ResolveAnchor("", time.Time{}, at),
	}}}, evpack.IngestOptions{})
	require.NoError(t, err)

	latest := s.must(t, "GET", q, acmeToken, nil)
	require.Equal(t, http.StatusOK, latest.status, "%s", latest.body)
	require.Contains(t, cited(t, latest.body), "acme-memo-7")
	require.NotEqual(t, before.header.Get(HashHeader), latest.header.Get(HashHeader), "the ingest moves the latest pack")

	pinned := s.must(t, "GET", q+fmt.Sprintf("&generation=%d", gen), acmeToken, nil)
	require.Equal(t, http.StatusOK, pinned.status, "%s", pinned.body)
	require.Equal(t, before.header.Get(HashHeader), pinned.header.Get(HashHeader))
	require.Equal(t, before.body, pinned.body)

	// known_at: before any commit there is no state to answer from (a bad
	// request, never an empty pack); far ahead is the latest.
	early := s.must(t, "GET", q+"&known_at=2000-01-01T00:00:00Z", acmeToken, nil)
	require.Equal(t, http.StatusBadRequest, early.status, "%s", early.body)
	require.Contains(t, string(early.body), "before the index's first commit")
	ahead := s.must(t, "GET", q+"&known_at=9000-01-01T00:00:00Z", acmeToken, nil)
	require.Equal(t, latest.body, ahead.body)

	// The pinned pack verifies at the generation it names.
	r := s.must(t, "POST", "/verify", acmeToken, pinned.body)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

func TestBadInput(t *testing.T) {
	s := start(t, 16<<20)
	ok := "/pack?q=retention&as_of=2026-01-15"
	for _, tc := range []struct {
		method, path, body string
		want               string
	}{
		{"GET", "/pack?as_of=2026-01-15", "", "q: the question is required"},
		{"GET", "/pack?q=retention&as_of=15.01.2026", "", `as_of "15.01.2026": want a day YYYY-MM-DD`},
		{"GET", "/pack?q=retention", "", `as_of "": want a day YYYY-MM-DD`},
		{"GET", ok + "&k=0", "", `k "0": want an integer in [1, 100]`},
		{"GET", ok + "&k=ten", "", `k "ten": want an integer in [1, 100]`},
		{"GET", ok + "&filter=kind", "", `filter "kind": want KEY=VALUE`},
		{"GET", ok + "&filter=Bad+Key=x", "", `filter: key "Bad Key": want 1 to 256 bytes of [a-z0-9_.-]`},
		{"GET", ok + "&tenant=acme", "", `unknown query parameter "tenant" (the tenant is the token's)`},
		{"GET", ok + "&tenant=acme&kk=3", "", `unknown query parameters "kk", "tenant" (the tenant is the token's)`},
		{"GET", ok + "&asof=2026-01-15", "", `unknown query parameter "asof"`},
		{"GET", ok + "&q=other", "", "q: given 2 times"},
		{"GET", ok + "&generation=0", "", `generation "0": want a committed generation, 1 or more`},
		{"GET", ok + "&generation=99", "", "generation 99 is not committed (the latest is 2)"},
		{"GET", ok + "&known_at=2026-01-15", "", `known_at "2026-01-15": want an RFC 3339 instant`},
		{"GET", ok + "&generation=1&known_at=2026-01-15T00:00:00Z", "", "set a generation or a known-at instant, not both"},
		{"POST", "/verify", "not a pack", "body is not an evidence pack: invalid character 'o' in literal null (expecting 'u')"},
		{"POST", "/verify", "", "body is not an evidence pack: EOF"},
		{"POST", "/verify?tenant=globex", "", `unknown query parameter "tenant" (the tenant is the token's)`},
	} {
		r := s.must(t, tc.method, tc.path, acmeToken, []byte(tc.body))
		require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", tc.method, tc.path, r.body)
		require.Equal(t, tc.want, r.errorText(t), "%s %s", tc.method, tc.path)
	}
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		path := filepath.Join(dir, "tokens.txt")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	path := write("# comment\n\nacme-token-0123456789 acme\n  shared-token-0123456789   -  \n")
	tokens, err := loadTokens(path)
	require.NoError(t, err)
	for token, want := range map[string]string{"acme-token-0123456789": "acme", "shared-token-0123456789": ""} {
		got, ok := tokens.tenant(token)
		require.True(t, ok, token)
		require.Equal(t, want, got, token)
	}
	for _, unknown := range []string{"", "acme-token-012345678", "acme-token-01234567890", "acme"} {
		_, ok := tokens.tenant(unknown)
		require.False(t, ok, unknown)
	}

	for _, tc := range []struct{ text, want string }{
		{"acme-token-0123456789\n", ":1: want TOKEN TENANT"},
		{"acme-token-0123456789 acme extra\n", ":1: want TOKEN TENANT"},
		{"# c\nshort-token acme\n", ":2: token shorter than 16 bytes"},
		{"acme-token-0123456789 acme\nacme-token-0123456789 globex\n", ":2: the token of line 1 again"},
		{"acme-token-0123456789 Acme\u0000\n", `:1: evidence: bad tenant name`},
		{"# nothing\n", ": no tokens"},
	} {
		path := write(tc.text)
		_, err := loadTokens(path)
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), "tokens "+path+tc.want)
		require.NotContains(t, err.Error(), "token-0123456789", "an error never prints a token")
	}
	_, err = loadTokens(filepath.Join(dir, "missing.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestDemoCorpusFromTheWorkingDirectory: without -index the demo corpus is
// read from -demo (the working directory's testdata/corpus by default), and
// a missing one says how to point at it.
func TestDemoCorpusFromTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := openEngine(context.Background(), "", dir, evpack.Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, "demo corpus: stat "+filepath.Join(dir, "records-act.json")+
		": no such file or directory (run from the repository root, or pass -demo DIR or -index DIR)", err.Error())

	_, err = openEngine(context.Background(), filepath.Join(dir, "no-index"), "", evpack.Options{})
	require.ErrorIs(t, err, evpack.ErrNotIndex, "-index names an index that must exist")
}
