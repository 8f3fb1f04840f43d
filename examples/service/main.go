// Service: evpack behind net/http, the shape a Go service adopts.
//
//	go run ./examples/service                      # the demo corpus, in memory, on 127.0.0.1:8080
//	go run ./examples/service --index DIR --addr 127.0.0.1:9000
//
//	curl -sD- '127.0.0.1:8080/pack?q=How+long+must+records+be+retained&as_of=2026-01-15&k=3' -o pack.json
//	curl -s --data-binary @pack.json 127.0.0.1:8080/verify
//
// GET /pack?q=QUESTION&as_of=YYYY-MM-DD[&tenant=T][&k=N][&filter=KEY=VALUE]...
// answers with the pack's canonical bytes (Content-Type application/json)
// and its hash in the Evpack-Pack-Hash header: b3sum of the body gives the
// same hex. POST /verify with a pack as the body replays it and answers the
// report as JSON: 200 when it holds, 409 when it does not. Bad input is 400
// with {"error": "..."}. SIGINT or SIGTERM stops accepting connections and
// lets the requests in flight finish (http.Server.Shutdown).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
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

// maxPackBytes bounds a /verify body.
const maxPackBytes = 16 << 20

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	dir := flag.String("index", "", "index directory made by evpack ingest (default: the demo corpus, in memory)")
	grace := flag.Duration("grace", 10*time.Second, "how long a shutdown waits for requests in flight")
	preload := flag.Bool("preload", false, "read the index's files into the page cache before serving (Engine.Preload): for a fresh machine whose index fits in memory")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	eng, err := openEngine(ctx, *dir)
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
	log.Printf("evpack service on http://%s", ln.Addr())
	if err := serve(ctx, ln, newHandler(eng), *grace); err != nil {
		log.Fatal(err)
	}
	log.Print("stopped")
}

// openEngine opens the index in dir, or builds the demo corpus in memory.
func openEngine(ctx context.Context, dir string) (*evpack.Engine, error) {
	if dir != "" {
		return evpack.OpenExisting(dir, evpack.Options{})
	}
	eng, err := evpack.OpenMemory(evpack.Options{})
	if err != nil {
		return nil, err
	}
	_, file, _, _ := runtime.Caller(0)
	corpus := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "corpus")
	for _, c := range []connectors.Connector{
		connectors.NewStatute(filepath.Join(corpus, "records-act.json")),
		connectors.NewJSONL(filepath.Join(corpus, "guidance.jsonl")),
	} {
		if _, err := eng.Ingest(ctx, c, evpack.IngestOptions{}); err != nil {
			eng.Close()
			return nil, fmt.Errorf("demo corpus: %w", err)
		}
	}
	return eng, nil
}

// serve answers on ln until ctx is done, then shuts the server down: no new
// connections, requests in flight get grace to finish. It returns once the
// server has stopped serving: nil after a clean shutdown.
func serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served: // Serve failed before any shutdown
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown %s: %w", ln.Addr(), err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// newHandler routes /pack and /verify to eng.
func newHandler(eng *evpack.Engine) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pack", func(w http.ResponseWriter, r *http.Request) { handlePack(eng, w, r) })
	mux.HandleFunc("POST /verify", func(w http.ResponseWriter, r *http.Request) { handleVerify(eng, w, r) })
	return mux
}

// parseRequest reads a pack request from the query string.
func parseRequest(r *http.Request) (evpack.Request, error) {
	v := r.URL.Query()
	req := evpack.Request{Question: v.Get("q"), Tenant: v.Get("tenant")}
	if strings.TrimSpace(req.Question) == "" {
		return req, errors.New("q: the question is required")
	}
	day, err := asof.ParseDate(v.Get("as_of"))
	if err != nil {
		return req, fmt.Errorf("as_of: %w", err)
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
		if req.Filters == nil {
			req.Filters = map[string]string{}
		}
		req.Filters[key] = val
	}
	return req, nil
}

func handlePack(eng *evpack.Engine, w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	p, err := eng.Query(r.Context(), req)
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("query: %w", err))
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

func handleVerify(eng *evpack.Engine, w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPackBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("read pack: %w", err))
		return
	}
	rep, err := eng.Verify(r.Context(), raw)
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("verify: %w", err))
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

// statusOf maps an engine error to an HTTP status: the caller's mistake is
// 400, anything else the service's.
func statusOf(err error) int {
	switch {
	case errors.Is(err, evpack.ErrBadRequest), errors.Is(err, evidence.ErrBadPack), errors.Is(err, evidence.ErrNotCanonical):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		return 499 // the client went away; nobody reads this
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
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
