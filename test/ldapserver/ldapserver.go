// Package ldapserver runs a real OpenLDAP server for tests: Debian's slapd
// package, which `./hack/tools.sh ldap` (make tools-ldap) unpacks into
// .cache/tools/ldap/root without installing it. Start writes a temporary
// configuration (slapd.conf: the core, cosine and inetOrgPerson schemas and
// one MDB database), loads the directory with slapadd, and runs slapd on a
// loopback port until Stop.
//
// Tests that need it skip when it has not been fetched (see Lookup),
// unless $WATCHWORD_REQUIRE_LDAP is set, as `make test` does: then its
// absence fails the run instead.
package ldapserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RequireEnv names the environment variable that makes OpenLDAP
// mandatory: when it is set, a missing server is an error for Lookup
// instead of a reason to skip.
const RequireEnv = "WATCHWORD_REQUIRE_LDAP"

// RootEnv names the environment variable that points at the unpacked
// packages (the directory holding usr/sbin/slapd), instead of
// .cache/tools/ldap/root above the working directory.
const RootEnv = "WATCHWORD_LDAP"

// ErrNoServer is returned by Find when OpenLDAP has not been fetched.
var ErrNoServer = errors.New("no slapd in $" + RootEnv + " or .cache/tools/ldap/root: run `make tools-ldap`")

// Required reports whether $WATCHWORD_REQUIRE_LDAP is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Lookup finds OpenLDAP for a test run: the root of the unpacked packages,
// or an empty root and a reason to skip, or (when Required) an error.
func Lookup() (root, skip string, err error) {
	root, err = Find()
	switch {
	case err == nil:
		return root, "", nil
	case errors.Is(err, ErrNoServer) && !Required():
		return "", "needs OpenLDAP: " + err.Error() + " (or set " + RequireEnv + "=1 to make this a failure)", nil
	case errors.Is(err, ErrNoServer):
		return "", "", fmt.Errorf("%w; %s is set, so the LDAP tests may not be skipped", err, RequireEnv)
	default:
		return "", "", err
	}
}

// Find returns the root of the unpacked packages: $WATCHWORD_LDAP, or
// .cache/tools/ldap/root above the working directory (or below
// $WATCHWORD_TOOLS_CACHE).
func Find() (string, error) {
	if r := os.Getenv(RootEnv); r != "" {
		if _, err := os.Stat(slapd(r)); err != nil {
			return "", ErrNoServer
		}
		return r, nil
	}
	if c := os.Getenv("WATCHWORD_TOOLS_CACHE"); c != "" {
		if r := filepath.Join(c, "ldap", "root"); exists(slapd(r)) {
			return r, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if r := filepath.Join(d, ".cache", "tools", "ldap", "root"); exists(slapd(r)) {
			return r, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoServer
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func slapd(root string) string { return filepath.Join(root, "usr", "sbin", "slapd") }

// BaseDN is the suffix of the directory; users live under UsersDN.
const (
	BaseDN  = "dc=watchword,dc=test"
	UsersDN = "ou=people," + BaseDN
	// BindDN is the directory's administrator, which may search it.
	BindDN = "cn=admin," + BaseDN
)

// Server is a running slapd.
type Server struct {
	// URL is the server's address, ldap://127.0.0.1:PORT.
	URL string
	// BindPassword is BindDN's password.
	BindPassword string
	dir          string
	cmd          *exec.Cmd
	logs         *bytes.Buffer
	done         chan error
}

// Start loads a directory with one entry per user (inetOrgPerson
// uid=<name> under UsersDN, with the password given) and runs slapd from
// root on a free loopback port. It returns once the server accepts
// connections.
func Start(ctx context.Context, root string, users map[string]string) (*Server, error) {
	dir, err := os.MkdirTemp("", "watchword-ldap-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, logs: &bytes.Buffer{}, done: make(chan error, 1)}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	s.BindPassword = hex.EncodeToString(pw)
	if merr := os.Mkdir(filepath.Join(dir, "data"), 0o700); merr != nil {
		return fail(merr)
	}
	schema := filepath.Join(root, "etc", "ldap", "schema")
	conf := fmt.Sprintf(`include %s/core.schema
include %s/cosine.schema
include %s/inetorgperson.schema
modulepath %s
moduleload back_mdb
pidfile %s
database mdb
maxsize 16777216
suffix %q
rootdn %q
rootpw %s
directory %s
`, schema, schema, schema, filepath.Join(root, "usr", "lib", "ldap"), filepath.Join(dir, "slapd.pid"),
		BaseDN, BindDN, s.BindPassword, filepath.Join(dir, "data"))
	confFile := filepath.Join(dir, "slapd.conf")
	if werr := os.WriteFile(confFile, []byte(conf), 0o600); werr != nil {
		return fail(werr)
	}
	ldif := filepath.Join(dir, "data.ldif")
	if werr := os.WriteFile(ldif, []byte(entries(users)), 0o600); werr != nil {
		return fail(werr)
	}
	env := environment(root)
	add := exec.CommandContext(ctx, slapd(root), "-T", "add", "-f", confFile, "-l", ldif)
	add.Env = env
	if out, aerr := add.CombinedOutput(); aerr != nil {
		return fail(fmt.Errorf("slapadd: %w: %s", aerr, out))
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	s.URL = "ldap://127.0.0.1:" + strconv.Itoa(port)
	// -d 0 keeps slapd in the foreground, so that Stop can end it.
	s.cmd = exec.Command(slapd(root), "-f", confFile, "-h", s.URL+"/", "-d", "0")
	s.cmd.Env, s.cmd.SysProcAttr = env, &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting slapd: %w", err))
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(ctx, port); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// UserDN is the entry of a user Start made.
func UserDN(name string) string { return "uid=" + name + "," + UsersDN }

// entries is the LDIF of the base, the people unit and the users.
func entries(users map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dn: %s\nobjectClass: dcObject\nobjectClass: organization\no: watchword\ndc: watchword\n\n", BaseDN)
	fmt.Fprintf(&b, "dn: %s\nobjectClass: organizationalUnit\nou: people\n\n", UsersDN)
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		// The password is base64 (the LDIF form for any bytes).
		fmt.Fprintf(&b, "dn: %s\nobjectClass: inetOrgPerson\nuid: %s\ncn: %s\nsn: %s\nuserPassword:: %s\n\n",
			UserDN(n), n, n, n, base64.StdEncoding.EncodeToString([]byte(users[n])))
	}
	return b.String()
}

// waitReady waits until the port accepts a connection (a minute at most).
func (s *Server) waitReady(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			return fmt.Errorf("slapd exited (%v) before it accepted connections: %s", werr, s.logs.String())
		case <-ctx.Done():
			return fmt.Errorf("slapd did not accept connections: %v: %s", err, s.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		// The exit status after a signal says nothing useful.
		select {
		case err := <-s.done:
			_ = err
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			err := <-s.done
			_ = err
		}
		s.cmd = nil
	}
	_ = os.RemoveAll(s.dir)
}

// environment is the process's environment with the unpacked libraries on
// the library path.
func environment(root string) []string {
	libs, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "*-linux-gnu"))
	if cur := os.Getenv("LD_LIBRARY_PATH"); cur != "" {
		libs = append(libs, cur)
	}
	env := []string{"LD_LIBRARY_PATH=" + strings.Join(libs, ":"), "LC_ALL=C"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
