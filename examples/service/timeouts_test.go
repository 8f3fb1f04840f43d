package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlowBodyIsCutOff: a client that announced a /verify body and sent
// none held its connection and a handler until it went away (the server
// had a limit on headers only). With a read limit the server answers or
// closes the connection once the limit has passed; the test's own deadline
// is far beyond it, so only a server that waits for ever fails.
func TestSlowBodyIsCutOff(t *testing.T) {
	s := startWith(t, 1<<20, timeouts{grace: time.Second, read: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /verify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer acme-demo-token-0001\r\n" +
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil { // an answer to what arrived: not a pack's verification
		resp.Body.Close()
		require.GreaterOrEqual(t, resp.StatusCode, 400, "a body cut short is not verified")
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still waited for the body after 20 s: %v", err)
	}
}
