// Service: evpack behind net/http, in a shape meant to be copied.
//
//	go run ./examples/service -tokens examples/service/testdata/tokens.txt     # the demo corpus, in memory
//	go run ./examples/service -tokens FILE -index DIR -addr 127.0.0.1:9000     # an index made by evpack ingest
//
//	TOKEN=acme-demo-token-0001
//	curl -sD- -H "Authorization: Bearer $TOKEN" \
//	  '127.0.0.1:8080/pack?q=How+long+must+records+be+retained&as_of=2026-01-15&k=3' -o pack.json
//	curl -s -H "Authorization: Bearer $TOKEN" --data-binary @pack.json 127.0.0.1:8080/verify
//
// Every request carries a bearer token, and the token decides the tenant:
// the tokens file maps each token to one tenant ("TOKEN TENANT" per line;
// the tenant "-" reads the shared corpus alone), and no request can name
// another. A caller without a known token gets 401; one that posts another
// tenant's pack to /verify gets 403. The demo tokens file is for the demo:
// make your own tokens long and random (openssl rand -hex 24).
//
// GET /pack?q=QUESTION&as_of=YYYY-MM-DD[&k=N][&filter=KEY=VALUE]...[&generation=G|&known_at=RFC3339]
// answers with the pack's canonical bytes (Content-Type application/json)
// and its hash in the Evpack-Pack-Hash header: b3sum of the body gives the
// same hex. generation or known_at pin the request to an earlier state of
// the index ("what would we have cited then"): the same pinned request gives
// the same bytes after any later ingest. POST /verify with a pack as the body
// replays it at the generation it names and answers the report as JSON: 200
// when it holds, 409 when it does not.
//
// Bad input is 400 with {"error": "..."}: an unknown or repeated query
// parameter included, so a misspelt one is never silently ignored, and so is
// a query string that does not parse (a semicolon, a bad % escape). A body
// over -max-body bytes is 413; a request that has not arrived whole within
// -read-timeout is cut off. SIGINT or SIGTERM stops accepting connections
// and lets the requests in flight finish (http.Server.Shutdown).
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evpack/evpack"
	"github.com/evpack/evpack/asof"
	"github.com/evpack/evpack/connectors"
	"github.com/evpack/evpack/evidence"
)

// HashHeader carries the pack hash of a /pack response.
const HashHeader = "Evpack-Pack-Hash"

// minTokenBytes is the shortest token the tokens file may hold: a bearer
// token is a password, and a short one can be guessed.
const minTokenBytes = 16

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	tokensFile := flag.String("tokens", "", `file mapping bearer tokens to tenants, one "TOKEN TENANT" per line (required)`)
	dir := flag.String("index", "", "index directory made by evpack ingest (default: the demo corpus, in memory)")
	demo := flag.String("demo", filepath.Join("testdata", "corpus"), "the demo corpus's directory, used without -index")
	maxBody := flag.Int64("max-body", 16<<20, "the largest /verify body accepted, in bytes")
	grace := flag.Duration("grace", 10*time.Second, "how long a shutdown waits for requests in flight")
	readTimeout := flag.Duration("read-timeout", 30*time.Second, "how long a request, its body included, may take to arrive")
	preload := flag.Bool("preload", false, "read the index's files into the page cache before serving (Engine.Preload): for a fresh machine whose index fits in memory")
	warm := flag.Bool("warm", false, "after a tenant's first request, open its other lexical partitions on a goroutine (Options.WarmTenants): faster requests on its other days, more memory")
	flag.Parse()

	if *tokensFile == "" {
		log.Fatal("-tokens FILE is required: the tenant of every request is its caller's token's")
	}
	tokens, err := loadTokens(*tokensFile)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	eng, err := openEngine(ctx, *dir, *demo, evpack.Options{WarmTenants: *warm})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if *preload {
		start := time.Now()
		n, err := eng.Preload(ctx)
		if err != nil {
			eng.Close()
			log.Fatal(err)
		}
		log.Printf("preloaded %d bytes in %s", n, time.Since(start).Round(time.Millisecond))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("evpack service on http://%s for %d tokens", ln.Addr(), len(tokens))
	if err := serve(ctx, ln, newHandler(eng, tokens, *maxBody), timeouts{grace: *grace, read: *readTimeout}); err != nil {
		log.Fatal(err)
	}
	log.Print("stopped")
}

// openEngine opens the index in dir, or builds the demo corpus of demoDir
// in memory. The demo's files are found from the working directory (or
// -demo), never from where the binary was built.
func openEngine(ctx context.Context, dir, demoDir string, opts evpack.Options) (*evpack.Engine, error) {
	if dir != "" {
		return evpack.OpenExisting(dir, opts)
	}
	statute, guidance := filepath.Join(demoDir, "records-act.json"), filepath.Join(demoDir, "guidance.jsonl")
	for _, f := range []string{statute, guidance} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("demo corpus: %w (run from the repository root, or pass -demo DIR or -index DIR)", err)
		}
	}
	eng, err := evpack.OpenMemory(opts)
	if err != nil {
		return nil, err
	}
	for _, c := range []connectors.Connector{connectors.NewStatute(statute), connectors.NewJSONL(guidance)} {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			eng.Close()
			return nil, fmt.Errorf("demo corpus: %w", err)
		}
	}
	return eng, nil
}

// tokenEntry is one line of the tokens file. The token is kept as its
// SHA-256 digest, so every comparison is of 32 bytes.
type tokenEntry struct {
	digest [sha256.Size]byte
	tenant string
}

// tokenTable maps bearer tokens to tenants.
type tokenTable []tokenEntry

// sharedTenant names, in the tokens file, the shared corpus's tenant "": its
// callers read the shared corpus alone.
const sharedTenant = "-"

// loadTokens reads a tokens file: one "TOKEN TENANT" per line (the tenant
// "-" for the shared corpus), blank lines and lines starting with #
// ignored. Errors name the file and line, never the token.
func loadTokens(path string) (tokenTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	var t tokenTable
	seen := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(f)
	n := 1
	for ; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 { // a byte-order mark some editors write: not part of the first token
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("tokens %s:%d: want TOKEN TENANT", path, n)
		}
		token, tenant := fields[0], fields[1]
		if len(token) < minTokenBytes {
			return nil, fmt.Errorf("tokens %s:%d: token shorter than %d bytes", path, n, minTokenBytes)
		}
		if tenant == sharedTenant {
			tenant = ""
		} else if err := evidence.CheckTenant(tenant); err != nil {
			return nil, fmt.Errorf("tokens %s:%d: %w", path, n, err)
		}
		d := sha256.Sum256([]byte(token))
		if first, ok := seen[d]; ok {
			return nil, fmt.Errorf("tokens %s:%d: the token of line %d again", path, n, first)
		}
		seen[d] = n
		t = append(t, tokenEntry{digest: d, tenant: tenant})
	}
	if err := sc.Err(); err != nil { // a line over bufio.MaxScanTokenSize: line n
		return nil, fmt.Errorf("tokens %s:%d: %w", path, n, err)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("tokens %s: no tokens", path)
	}
	return t, nil
}

// tenant returns the tenant of token. It compares the token's digest with
// every entry in constant time, so how long it takes says nothing about
// how close a guess came.
func (t tokenTable) tenant(token string) (string, bool) {
	d := sha256.Sum256([]byte(token))
	found, tenant := 0, ""
	for _, e := range t {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found, tenant = 1, e.tenant
		}
	}
	return tenant, found == 1
}

// timeouts bound how long the server waits on a client, and on itself.
type timeouts struct {
	grace time.Duration // a shutdown's wait for requests in flight
	// read bounds a request's arrival, headers and body: a client that
	// sends a /verify body's length and then nothing held a goroutine,
	// a connection and a handler for ever.
	read time.Duration
}

// serve answers on ln until ctx is done, then shuts the server down: no new
// connections, requests in flight get t.grace to finish. It returns once the
// server has stopped serving: nil after a clean shutdown.
func serve(ctx context.Context, ln net.Listener, h http.Handler, t timeouts) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, t.read), ReadTimeout: t.read, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served: // Serve failed before any shutdown
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown %s: %w", ln.Addr(), err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// server answers /pack and /verify for the callers of its tokens.
type server struct {
	eng     *evpack.Engine
	tokens  tokenTable
	maxBody int64
}

// newHandler routes /pack and /verify to eng, for callers holding one of
// tokens; a /verify body may hold at most maxBody bytes.
func newHandler(eng *evpack.Engine, tokens tokenTable, maxBody int64) http.Handler {
	s := &server{eng: eng, tokens: tokens, maxBody: maxBody}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pack", s.authenticated(s.handlePack))
	mux.HandleFunc("POST /verify", s.authenticated(s.handleVerify))
	// The rest answers JSON as every other error does, not net/http's text.
	mux.HandleFunc("/pack", wrongMethod("GET", "GET, HEAD"))
	mux.HandleFunc("/verify", wrongMethod("POST", "POST"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q: want /pack or /verify", r.URL.Path))
	})
	return mux
}

// wrongMethod answers 405 to a request of a path that wants method.
func wrongMethod(method, allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s: %s wants %s", r.Method, r.URL.Path, method))
	}
}

// authenticated runs h with the tenant of the request's bearer token, or
// answers 401.
func (s *server) authenticated(h func(w http.ResponseWriter, r *http.Request, tenant string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="evpack"`)
			writeError(w, http.StatusUnauthorized, "want the header Authorization: Bearer TOKEN")
			return
		}
		tenant, ok := s.tokens.tenant(token)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="evpack", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "unknown token")
			return
		}
		h(w, r, tenant)
	}
}

// packParams are the query parameters of /pack; filter may repeat.
var packParams = []string{"q", "as_of", "k", "filter", "generation", "known_at"}

// checkParams refuses a parameter not in allowed (tenant among them: the
// tenant is the token's) and one given twice, except filter.
func checkParams(v url.Values, allowed []string) error {
	var unknown []string
	for name, vals := range v {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, strconv.Quote(name))
		} else if len(vals) > 1 && name != "filter" {
			return fmt.Errorf("%s: given %d times", name, len(vals))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	msg := "unknown query parameter "
	if len(unknown) > 1 {
		msg = "unknown query parameters "
	}
	msg += strings.Join(unknown, ", ")
	if v.Has("tenant") {
		msg += " (the tenant is the token's)"
	}
	return errors.New(msg)
}

// parseRequest reads a pack request of tenant from the query string.
func parseRequest(v url.Values, tenant string) (evpack.Request, error) {
	req := evpack.Request{Question: v.Get("q"), Tenant: tenant}
	if err := checkParams(v, packParams); err != nil {
		return req, err
	}
	if strings.TrimSpace(req.Question) == "" {
		return req, errors.New("q: the question is required")
	}
	day, err := asof.ParseDate(v.Get("as_of"))
	if err != nil {
		return req, fmt.Errorf("as_of %q: want a day YYYY-MM-DD", v.Get("as_of"))
	}
	req.AsOf = day
	if s := v.Get("k"); s != "" {
		if req.K, err = strconv.Atoi(s); err != nil || req.K < 1 || req.K > evpack.MaxK {
			return req, fmt.Errorf("k %q: want an integer in [1, %d]", s, evpack.MaxK)
		}
	}
	for _, f := range v["filter"] {
		key, val, ok := strings.Cut(f, "=")
		if !ok || key == "" {
			return req, fmt.Errorf("filter %q: want KEY=VALUE", f)
		}
		if _, twice := req.Filters[key]; twice {
			return req, fmt.Errorf("filter %q: key %q given twice", f, key)
		}
		if req.Filters == nil {
			req.Filters = map[string]string{}
		}
		req.Filters[key] = val
	}
	if s := v.Get("generation"); s != "" {
		if req.Generation, err = strconv.ParseInt(s, 10, 64); err != nil || req.Generation < 1 {
			return req, fmt.Errorf("generation %q: want a committed generation, 1 or more", s)
		}
	}
	if s := v.Get("known_at"); s != "" {
		if req.KnownAt, err = time.Parse(time.RFC3339, s); err != nil {
			return req, fmt.Errorf("known_at %q: want an RFC 3339 instant", s)
		}
		// 0001-01-01T00:00:00Z is the zero time, which a Request reads as
		// "the latest": refused with the other years evpack does not keep.
		if req.KnownAt.IsZero() || asof.CheckInstant(req.KnownAt) != nil {
			return req, fmt.Errorf("known_at %q: want an instant in the years 1000 to 9999", s)
		}
	}
	return req, nil
}

// query parses r's query string. r.URL.Query drops a pair that does not
// parse (a semicolon, a bad escape) silently, and the request answered
// would be another than the one asked: here it is 400.
func query(r *http.Request) (url.Values, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	return v, nil
}

func (s *server) handlePack(w http.ResponseWriter, r *http.Request, tenant string) {
	v, err := query(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req, err := parseRequest(v, tenant)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.eng.Query(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, hash := p.Encode() // rendered once
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(HashHeader, hash)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// verifyResponse is the JSON answer of /verify.
type verifyResponse struct {
	OK         bool     `json:"ok"`
	Hash       string   `json:"hash"`
	ReplayHash string   `json:"replay_hash"`
	Problems   []string `json:"problems"`
}

func (s *server) handleVerify(w http.ResponseWriter, r *http.Request, tenant string) {
	v, err := query(r)
	if err == nil {
		err = checkParams(v, nil)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	// A pack names its tenant; verifying another tenant's pack would
	// replay, and so reveal, that tenant's evidence.
	p, err := evidence.Parse(raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p.Tenant != tenant {
		writeError(w, http.StatusForbidden, "the pack is another tenant's")
		return
	}
	rep, err := s.eng.Verify(r.Context(), raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if !rep.OK() {
		status = http.StatusConflict
	}
	problems := rep.Problems
	if problems == nil {
		problems = []string{}
	}
	writeJSON(w, status, verifyResponse{OK: rep.OK(), Hash: rep.Hash, ReplayHash: rep.ReplayHash, Problems: problems})
}

// fail answers an engine error: the caller's mistake is 400 with what was
// wrong, anything else is the service's, logged and answered without
// detail.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, evpack.ErrBadRequest):
		writeError(w, http.StatusBadRequest, cause(err))
	case errors.Is(err, evpack.ErrBadPack), errors.Is(err, evpack.ErrNotCanonical):
		writeError(w, http.StatusBadRequest, "body is not an evidence pack: "+cause(err))
	case errors.Is(err, context.Canceled):
		w.WriteHeader(499) // the client went away; nobody reads this
	default:
		log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}

// cause is err's message without the sentinel errors it wraps: what was
// wrong ("filter: key ..."), not every package it passed through
// ("evpack: bad request: filter: evidence: bad metadata: key ...").
func cause(err error) string {
	msg := err.Error()
	all := sentinels(err, nil)
	for _, a := range all { // "%w (%w): ": an error that is two sentinels
		for _, b := range all {
			msg = strings.ReplaceAll(msg, a+" ("+b+"): ", "")
		}
	}
	for _, s := range all {
		msg = strings.ReplaceAll(msg, s+": ", "")
	}
	return msg
}

// sentinels appends the messages of the errors at the leaves of err's
// tree, err itself excepted: the sentinels a message is built around.
func sentinels(err error, out []string) []string {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return leaves(inner, out)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			out = leaves(inner, out)
		}
	}
	return out
}

// leaves appends the messages of the leaves of err's tree.
func leaves(err error, out []string) []string {
	before := len(out)
	out = sentinels(err, out)
	if len(out) == before {
		out = append(out, err.Error())
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
