// Package pgserver runs a real PostgreSQL server for tests: Debian's
// postgresql-15 package, which `./hack/tools.sh postgres` (make
// tools-postgres) unpacks into .cache/tools/postgres/root without
// installing it. Start runs initdb into a temporary directory and the
// server on a loopback port, with trust authentication for the user
// "postgres" and no unix socket.
//
// PostgreSQL refuses to run as root. When the tests run as root, the
// server runs as the unprivileged user "nobody" instead: its data
// directory is handed to that user, and the process is started with its
// uid and gid.
//
// Tests that need PostgreSQL skip when it has not been fetched (see
// Lookup), unless $WATCHWORD_REQUIRE_POSTGRES is set, as `make test`
// does: then its absence fails the run instead.
package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the environment variable that makes PostgreSQL
// mandatory: when it is set, a missing server is an error for Lookup
// instead of a reason to skip.
const RequireEnv = "WATCHWORD_REQUIRE_POSTGRES"

// RootEnv names the environment variable that points at the unpacked
// packages (the directory holding usr/lib/postgresql), instead of
// .cache/tools/postgres/root above the working directory.
const RootEnv = "WATCHWORD_POSTGRES"

// version is the major version of Debian's package.
const version = "15"

// ErrNoServer is returned by Find when PostgreSQL has not been fetched.
var ErrNoServer = errors.New("no PostgreSQL in $" + RootEnv + " or .cache/tools/postgres/root: run `make tools-postgres`")

// Required reports whether $WATCHWORD_REQUIRE_POSTGRES is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Lookup finds PostgreSQL for a test run: the root of the unpacked
// packages, or an empty root and a reason to skip, or (when Required) an
// error.
func Lookup() (root, skip string, err error) {
	root, err = Find()
	switch {
	case err == nil:
		return root, "", nil
	case errors.Is(err, ErrNoServer) && !Required():
		return "", "needs PostgreSQL: " + err.Error() + " (or set " + RequireEnv + "=1 to make this a failure)", nil
	case errors.Is(err, ErrNoServer):
		return "", "", fmt.Errorf("%w; %s is set, so the PostgreSQL tests may not be skipped", err, RequireEnv)
	default:
		return "", "", err
	}
}

// Find returns the root of the unpacked packages: $WATCHWORD_POSTGRES, or
// .cache/tools/postgres/root above the working directory.
func Find() (string, error) {
	if r := os.Getenv(RootEnv); r != "" {
		if _, err := os.Stat(bin(r, "postgres")); err != nil {
			return "", ErrNoServer
		}
		return r, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		r := filepath.Join(d, ".cache", "tools", "postgres", "root")
		if _, err := os.Stat(bin(r, "postgres")); err == nil {
			return r, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoServer
		}
	}
}

func bin(root, name string) string {
	return filepath.Join(root, "usr", "lib", "postgresql", version, "bin", name)
}

// Server is a running PostgreSQL server.
type Server struct {
	// DSN connects to the database "postgres" as the superuser
	// "postgres", over TCP on loopback.
	DSN  string
	dir  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	done chan error
}

// Start initialises a database cluster in a new temporary directory and
// starts the server from root on a free loopback port. It returns once the
// server accepts connections.
func Start(ctx context.Context, root string) (*Server, error) {
	return StartWithPassword(ctx, root, "")
}

// StartWithPassword is Start with password authentication over TCP
// (SCRAM-SHA-256) when password is not empty: the superuser "postgres"
// has that password, and every role logs in with its own, so that a
// role's credentials are checked as a production server checks them.
func StartWithPassword(ctx context.Context, root, password string) (*Server, error) {
	dir, err := os.MkdirTemp("", "watchword-postgres-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, logs: &bytes.Buffer{}, done: make(chan error, 1)}
	cred, err := runAs(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	env := environment(root)
	args := []string{"-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"}
	userinfo := "postgres"
	if password != "" {
		pwfile := filepath.Join(dir, "pwfile")
		if werr := os.WriteFile(pwfile, []byte(password+"\n"), 0o644); werr != nil {
			_ = os.RemoveAll(dir)
			return nil, werr
		}
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pwfile)
		userinfo = url.UserPassword("postgres", password).String()
	}
	initdb := exec.CommandContext(ctx, bin(root, "initdb"), args...)
	initdb.Env, initdb.SysProcAttr = env, &syscall.SysProcAttr{Credential: cred}
	if out, ierr := initdb.CombinedOutput(); ierr != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", ierr, out)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.cmd = exec.Command(bin(root, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "jit=off")
	s.cmd.Env, s.cmd.SysProcAttr = env, &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	s.DSN = fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", userinfo, port)
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits until the server accepts a connection (a minute at most).
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.DSN)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case werr := <-s.done:
			return fmt.Errorf("postgres exited (%v) before it accepted connections: %s", werr, s.logs.String())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections: %v: %s", err, s.logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the server (a fast shutdown) and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		// The server's exit status after a signal says nothing useful.
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-s.done:
			_ = err
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			err := <-s.done
			_ = err
		}
	}
	_ = os.RemoveAll(s.dir)
}

// environment is the process's environment with the unpacked libraries on
// the library path, the C locale, and the system time zone files.
func environment(root string) []string {
	libs, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "*-linux-gnu"))
	more, _ := filepath.Glob(filepath.Join(root, "lib", "*-linux-gnu"))
	libs = append(libs, more...)
	if cur := os.Getenv("LD_LIBRARY_PATH"); cur != "" {
		libs = append(libs, cur)
	}
	env := []string{"LD_LIBRARY_PATH=" + strings.Join(libs, ":"), "LC_ALL=C", "TZ=UTC"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// runAs returns the credentials to run PostgreSQL with: nil (the current
// user) unless this runs as root, which PostgreSQL refuses; then the user
// nobody, to whom dir is handed.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user and there is no user nobody: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, fmt.Errorf("handing %s to nobody: %w", dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
