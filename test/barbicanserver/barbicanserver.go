// Package barbicanserver runs a real OpenStack Barbican for tests, and a
// real Keystone in front of it when asked: Debian's barbican-api and
// keystone packages, which `./hack/tools.sh barbican` (make
// tools-barbican) unpacks into .cache/tools/barbican/root without
// installing them. Both run with the system python3 (PYTHONPATH into the
// unpacked tree), in waitress, on loopback ports, each with an SQLite
// database in a temporary directory.
//
// Each server has a single worker thread, so requests reach SQLite one
// at a time: SQLite lets one writer in at a time, and a second writer
// would fail with "database is locked", which Barbican answers with HTTP
// 500. Tests may send requests concurrently; the server queues them.
//
// Without Keystone, Barbican runs token-less: the project is the
// X-Project-Id header of each request. With Keystone, Barbican checks
// tokens with Keystone's auth_token middleware, and Keystone holds a
// project, a user with the role "creator" on it (Barbican's role for
// reading and writing secrets), an application credential of that user,
// and Barbican in its catalog as the key-manager service.
//
// The server's output goes to a log file that survives restarts; Start
// prints it when the test fails.
//
// Tests that need Barbican skip when it has not been fetched, unless
// $WATCHWORD_REQUIRE_BARBICAN is set, as `make test` does: then its
// absence fails the run instead.
package barbicanserver

import (
	"context"
	"crypto/rand"
	_ "embed" // the launcher script
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireEnv names the environment variable that makes Barbican
// mandatory: when it is set, a missing server fails the tests instead of
// skipping them.
const RequireEnv = "WATCHWORD_REQUIRE_BARBICAN"

// RootEnv names the environment variable that points at the unpacked
// packages (the directory holding usr/lib/python3/dist-packages), instead
// of .cache/tools/barbican/root above the working directory.
const RootEnv = "WATCHWORD_BARBICAN"

// python is the system interpreter that Debian's packages are built for.
const python = "/usr/bin/python3"

// ErrNoServer is returned by Find when Barbican has not been fetched.
var ErrNoServer = errors.New("no Barbican in $" + RootEnv + " or .cache/tools/barbican/root: run `make tools-barbican`")

//go:embed launch.py
var launcher []byte

// Required reports whether $WATCHWORD_REQUIRE_BARBICAN is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Lookup finds Barbican for a test run: the root of the unpacked
// packages, or an empty root and a reason to skip, or (when Required) an
// error.
func Lookup() (root, skip string, err error) {
	root, err = Find()
	switch {
	case err == nil:
		return root, "", nil
	case errors.Is(err, ErrNoServer) && !Required():
		return "", "needs Barbican: " + err.Error() + " (or set " + RequireEnv + "=1 to make this a failure)", nil
	case errors.Is(err, ErrNoServer):
		return "", "", fmt.Errorf("%w; %s is set, so the Barbican tests may not be skipped", err, RequireEnv)
	default:
		return "", "", err
	}
}

// Find returns the root of the unpacked packages: $WATCHWORD_BARBICAN, or
// .cache/tools/barbican/root above the working directory.
func Find() (string, error) {
	ok := func(r string) bool {
		_, err := os.Stat(filepath.Join(sitePackages(r), "barbican", "api", "app.py"))
		return err == nil
	}
	if r := os.Getenv(RootEnv); r != "" {
		if !ok(r) {
			return "", ErrNoServer
		}
		return r, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if r := filepath.Join(d, ".cache", "tools", "barbican", "root"); ok(r) {
			return r, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoServer
		}
	}
}

func sitePackages(root string) string {
	return filepath.Join(root, "usr", "lib", "python3", "dist-packages")
}

// Options choose what runs.
type Options struct {
	// Keystone puts Barbican behind a real Keystone; without it Barbican
	// runs token-less.
	Keystone bool
}

// Server is a running Barbican, and its Keystone when it has one.
type Server struct {
	// URL is Barbican's root, such as http://127.0.0.1:PORT; its API is
	// under /v1.
	URL string
	// ProjectID is a project that only this server's tests use: token-less,
	// the X-Project-Id to send; with Keystone, Keystone's ID of the test
	// project.
	ProjectID string
	// Keystone is set when Barbican runs behind Keystone.
	Keystone *Keystone

	root, dir, log string
	port           int
	barbican       *process
	keystone       *process
}

// Keystone is the Keystone in front of a Server, and what it holds.
type Keystone struct {
	// AuthURL is Keystone's v3 API, such as http://127.0.0.1:PORT/v3.
	AuthURL string
	// AdminPassword is the password of the user "admin" (domain
	// "Default"), who has the role admin on the project "admin".
	AdminPassword string
	// ProjectName and ProjectID name the test project, in the domain
	// "Default".
	ProjectName, ProjectID string
	// Username, UserID and Password are the test user's, in the domain
	// "Default", with the role "creator" on the test project.
	Username, UserID, Password string
	// AppCredID and AppCredSecret are an application credential of the
	// test user for the test project.
	AppCredID, AppCredSecret string

	dir  string
	port int
}

// Start starts a server for the test, or skips the test when Barbican has
// not been fetched (see Lookup). It stops the server when the test ends,
// and prints the servers' log first if the test failed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	root, skip, err := Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := Run(ctx, root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Barbican and Keystone log:\n%s", s.Logs())
		}
		s.Close()
	})
	return s
}

// Run starts a server from the packages under root, in a new temporary
// directory: Keystone first when asked (its database created and
// bootstrapped), then Barbican. It returns once both answer.
func Run(ctx context.Context, root string, opts Options) (_ *Server, err error) {
	dir, err := os.MkdirTemp("", "watchword-barbican-")
	if err != nil {
		return nil, err
	}
	s := &Server{root: root, dir: dir, log: filepath.Join(dir, "server.log")}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nserver log:\n%s", err, s.Logs())
			s.Close()
		}
	}()
	if err = os.WriteFile(filepath.Join(dir, "launch.py"), launcher, 0o600); err != nil {
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(s.port)
	if opts.Keystone {
		if err = s.startKeystone(ctx); err != nil {
			return nil, err
		}
	} else {
		s.ProjectID = randomHex(16)
	}
	if err = s.writeBarbicanConfig(); err != nil {
		return nil, err
	}
	if err = s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// writeBarbicanConfig writes barbican.conf where oslo.config looks for it
// ($HOME/.barbican, HOME being the server's directory: Barbican's plugins
// read the default files only) and the paste pipeline of the /v1 app:
// token-less, or behind keystonemiddleware's auth_token.
func (s *Server) writeBarbicanConfig() error {
	kek := make([]byte, 32)
	if _, err := rand.Read(kek); err != nil {
		return err
	}
	conf := fmt.Sprintf(`[DEFAULT]
sql_connection = sqlite:///%s
db_auto_create = True
host_href = %s
use_stderr = True
[secretstore]
enabled_secretstore_plugins = store_crypto
[crypto]
enabled_crypto_plugins = simple_crypto
[simple_crypto_plugin]
kek = %s
`, filepath.Join(s.dir, "barbican.sqlite"), s.URL, base64.StdEncoding.EncodeToString(kek))
	auth := "unauthenticated-context"
	if k := s.Keystone; k != nil {
		auth = "authtoken context"
		conf += fmt.Sprintf(`[keystone_authtoken]
www_authenticate_uri = %[1]s
auth_url = %[1]s
auth_type = password
username = admin
password = %[2]s
project_name = admin
user_domain_id = default
project_domain_id = default
interface = public
service_token_roles_required = True
`, k.AuthURL, k.AdminPassword)
	}
	paste := `[composite:main]
use = egg:Paste#urlmap
/: versions
/v1: api
[pipeline:versions]
pipeline = microversion versionapp
[pipeline:api]
pipeline = ` + auth + ` microversion apiapp
[app:apiapp]
paste.app_factory = barbican.api.app:create_main_app
[app:versionapp]
paste.app_factory = barbican.api.app:create_version_app
[filter:unauthenticated-context]
paste.filter_factory = barbican.api.middleware.context:UnauthenticatedContextMiddleware.factory
[filter:context]
paste.filter_factory = barbican.api.middleware.context:ContextMiddleware.factory
[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
[filter:microversion]
paste.filter_factory = barbican.api.middleware.microversion:MicroversionMiddleware.factory
`
	if err := os.MkdirAll(filepath.Join(s.dir, ".barbican"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, ".barbican", "barbican.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "barbican-paste.ini"), []byte(paste), 0o600)
}

// Restart starts Barbican again (or the first time) on its port, with its
// data, after Stop. It returns once Barbican answers.
func (s *Server) Restart(ctx context.Context) error {
	if s.barbican != nil {
		return errors.New("barbican is running")
	}
	p, err := s.spawn("barbican", s.dir, "barbican", filepath.Join(s.dir, "barbican-paste.ini"), strconv.Itoa(s.port))
	if err != nil {
		return err
	}
	s.barbican = p
	return p.waitHTTP(ctx, s.URL+"/")
}

// Stop stops Barbican (not Keystone), keeping its data and port for
// Restart.
func (s *Server) Stop() {
	if s.barbican != nil {
		s.barbican.stop()
		s.barbican = nil
	}
}

// Close stops every process and removes the directory.
func (s *Server) Close() {
	s.Stop()
	if s.keystone != nil {
		s.keystone.stop()
		s.keystone = nil
	}
	_ = os.RemoveAll(s.dir)
}

// Logs returns what the servers have written so far.
func (s *Server) Logs() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// process is one running python3.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

// spawn starts the launcher with args, with HOME set to home, appending
// its output to the server log.
func (s *Server) spawn(name, home string, args ...string) (*process, error) {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	// The arguments are left out: keystone-setup's hold the admin password.
	_, _ = fmt.Fprintf(logf, "=== %s: %s\n", time.Now().UTC().Format(time.RFC3339), name)
	cmd := exec.Command(python, append([]string{"-W", "ignore", filepath.Join(s.dir, "launch.py")}, args...)...)
	cmd.Env = s.environment(home)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// environment is a minimal environment for python3: the unpacked
// packages first on its path, and their libraries on the library path.
func (s *Server) environment(home string) []string {
	libs, _ := filepath.Glob(filepath.Join(s.root, "usr", "lib", "*-linux-gnu"))
	env := []string{
		"HOME=" + home,
		"PYTHONPATH=" + sitePackages(s.root),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONWARNINGS=ignore",
		"LD_LIBRARY_PATH=" + strings.Join(libs, ":"),
		"LC_ALL=C.UTF-8", "TZ=UTC",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// waitHTTP waits until url answers anything over HTTP, or the process
// exits, or ctx ends.
func (p *process) waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		select {
		case werr := <-p.done:
			p.done <- werr
			return fmt.Errorf("%s exited (%v) before it answered on %s", p.name, werr, url)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s: %v", p.name, url, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after 20 seconds.
func (p *process) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		_ = err // the exit status after a signal says nothing useful
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err := <-p.done
		_ = err
	}
}

// run runs the launcher to its end (keystone-setup).
func (s *Server) run(ctx context.Context, name, home string, args ...string) error {
	p, err := s.spawn(name, home, args...)
	if err != nil {
		return err
	}
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("%s failed: %w", name, err)
		}
		return nil
	case <-ctx.Done():
		p.stop()
		return fmt.Errorf("%s did not finish: %w", name, ctx.Err())
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
