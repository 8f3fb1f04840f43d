// Package pgtest starts real PostgreSQL servers for tests: initdb'd in a
// temporary directory, listening on loopback only, run as a non-root user
// (PostgreSQL refuses root), and stopped when the test ends.
//
// Why: the PostgreSQL log's promises (an acknowledged append survives a
// SIGKILL of the server; a stale writer is fenced) can only be tested against
// the real server. The binaries are found through $PG_BIN, else
// `pg_config --bindir`; where neither exists the tests skip, saying how to
// run them, unless $EVPACK_REQUIRE_PG is set (as .ci/run sets it), where
// they fail.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

// Server is one PostgreSQL server started by a test.
type Server struct {
	// DSN connects to its database "evpack" as user "evpack" over TCP on
	// 127.0.0.1.
	DSN string
	// Port is the loopback port it listens on.
	Port int

	bin  string
	base string // temp dir holding data/ and the socket
	cred *syscall.Credential
}

// Options configure a server.
type Options struct {
	// Durable keeps fsync on (the default turns it off: the conformance
	// suites test logic, not the disk; a crash test sets Durable).
	Durable bool
}

// Bin returns the PostgreSQL binaries' directory, or "" when none is found.
func Bin() string {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d
	}
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return ""
	}
	d := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
		return ""
	}
	return d
}

// Start initdb's and starts a server for t; it is stopped and its files
// removed when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Bin()
	if bin == "" {
		if os.Getenv("EVPACK_REQUIRE_PG") != "" {
			t.Fatal("pgtest: PostgreSQL not found (set PG_BIN or put pg_config on PATH; Debian: apt-get install postgresql-15), and EVPACK_REQUIRE_PG is set")
		}
		t.Skip("pgtest: PostgreSQL not found; install Debian's postgresql-15 or set PG_BIN to its bin directory to run this test")
	}
	s := &Server{bin: bin}
	base, err := os.MkdirTemp("", "evpack-pg-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.base = base
	t.Cleanup(func() { os.RemoveAll(base) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("pgtest: running as root needs the user nobody to run PostgreSQL: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(base, 0o711); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if err := os.Chown(base, uid, gid); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	s.Port = freePort(t)
	s.DSN = fmt.Sprintf("postgres://evpack@127.0.0.1:%d/evpack?sslmode=disable", s.Port)
	s.run(t, "initdb", "-D", s.data(), "-U", "evpack", "--auth=trust", "-E", "UTF8", "--no-instructions")
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nmax_connections = 50\nfsync = %s\nfull_page_writes = %s\n",
		s.Port, s.base, onOff(opts.Durable), onOff(opts.Durable))
	if err := appendFile(filepath.Join(s.data(), "postgresql.conf"), conf); err != nil {
		t.Fatalf("pgtest: postgresql.conf: %v", err)
	}
	s.startServer(t)
	t.Cleanup(func() { s.stop() })
	s.run(t, "createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "evpack", "evpack")
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (s *Server) data() string { return filepath.Join(s.base, "data") }

// startServer starts the postmaster and waits (pg_ctl -w) until it accepts
// connections.
func (s *Server) startServer(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "-D", s.data(), "-l", filepath.Join(s.data(), "server.log"), "-w", "-t", "60", "start")
}

// StartStandby makes a streaming standby of s (pg_basebackup), named name
// (its application_name), starts it, and makes it s's synchronous standby:
// from then on a commit on s returns only once name has flushed it. It is
// stopped and removed when t ends.
func (s *Server) StartStandby(t testing.TB, name string) *Server {
	t.Helper()
	sb := &Server{bin: s.bin, cred: s.cred}
	base, err := os.MkdirTemp("", "evpack-pg-standby-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	sb.base = base
	t.Cleanup(func() { os.RemoveAll(base) })
	if s.cred != nil {
		if err := os.Chmod(base, 0o711); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if err := os.Chown(base, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	sb.Port = freePort(t)
	sb.DSN = fmt.Sprintf("postgres://evpack@127.0.0.1:%d/evpack?sslmode=disable", sb.Port)
	sb.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "evpack", "-D", sb.data(), "-X", "stream", "--no-sync", "--checkpoint=fast")
	conf := fmt.Sprintf("port = %d\nunix_socket_directories = '%s'\nprimary_conninfo = 'host=127.0.0.1 port=%d user=evpack application_name=%s'\n",
		sb.Port, sb.base, s.Port, name)
	if err := appendFile(filepath.Join(sb.data(), "postgresql.conf"), conf); err != nil {
		t.Fatalf("pgtest: standby conf: %v", err)
	}
	if err := appendFile(filepath.Join(sb.data(), "standby.signal"), ""); err != nil {
		t.Fatalf("pgtest: standby.signal: %v", err)
	}
	if s.cred != nil {
		for _, f := range []string{"postgresql.conf", "standby.signal"} {
			if err := os.Chown(filepath.Join(sb.data(), f), int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				t.Fatalf("pgtest: %v", err)
			}
		}
	}
	sb.startServer(t)
	t.Cleanup(func() { sb.stop() })
	c := s.Conn(t)
	ctx := context.Background()
	if _, err := c.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (%s)'", name)); err != nil {
		t.Fatalf("pgtest: synchronous_standby_names: %v", err)
	}
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatalf("pgtest: reload: %v", err)
	}
	// A commit waits for the standby only once the primary's checkpointer
	// has read the reloaded setting, and pg_reload_conf does not wait for
	// that: a CI run's first probe commit returned before the standby had
	// connected. So ask the server until it names the standby synchronous,
	// each probe a commit (which blocks once the setting is live) and a
	// short server-side pause, for at most a minute.
	var state string
	for i := 0; ; i++ {
		if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS pgtest_sync_probe (x int); INSERT INTO pgtest_sync_probe VALUES (1)"); err != nil {
			t.Fatalf("pgtest: synchronous commit: %v", err)
		}
		err := c.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1", name).Scan(&state)
		switch {
		case err == nil && state == "sync":
			return sb
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			t.Fatalf("pgtest: standby %s: %v", name, err)
		case i == 3000:
			t.Fatalf("pgtest: standby %s not synchronous after a minute: sync_state %q, %v", name, state, err)
		}
		if _, err := c.Exec(ctx, "SELECT pg_sleep(0.02)"); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
}

// Promote makes a standby the primary (pg_ctl promote, waiting until done).
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "-D", s.data(), "-w", "-t", "60", "promote")
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Kill sends SIGKILL to the postmaster, as a crash would, and waits until it
// is gone. Its backends die with it (they exit when the postmaster does).
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		t.Fatalf("pgtest: kill: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("pgtest: kill: postmaster.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("pgtest: kill %d: %v", pid, err)
	}
	// The postmaster is not our child (pg_ctl started it), so it cannot be
	// waited for; a pidfd becomes readable when the process exits.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return
		}
	}
}

// Restart starts the server again after Kill (crash recovery replays its WAL).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	// A killed postmaster may linger as a zombie where nothing reaps it (a
	// container's PID 1), and PostgreSQL would take its PID for a live
	// server: the lock files it left go, as an operator would remove them.
	os.Remove(filepath.Join(s.data(), "postmaster.pid"))
	os.Remove(filepath.Join(s.base, fmt.Sprintf(".s.PGSQL.%d.lock", s.Port)))
	s.startServer(t)
}

func (s *Server) stop() {
	cmd := exec.Command(filepath.Join(s.bin, "pg_ctl"), "-D", s.data(), "-m", "immediate", "-w", "stop")
	s.as(cmd)
	_ = cmd.Run()
}

// DSNFor is the DSN of another database on the server.
func (s *Server) DSNFor(db string) string {
	return fmt.Sprintf("postgres://evpack@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Conn connects to the server's database, closed when t ends.
func (s *Server) Conn(t testing.TB) *pgx.Conn { return s.ConnTo(t, "evpack") }

// ConnTo connects to database db on the server, closed when t ends.
func (s *Server) ConnTo(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSNFor(db))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (s *Server) as(cmd *exec.Cmd) {
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	cmd.Dir = s.base
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGHOST=127.0.0.1")
}

func (s *Server) run(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	s.as(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.data(), "server.log"))
		t.Fatalf("pgtest: %s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
