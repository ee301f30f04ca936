// Package promserver runs a real Prometheus server for tests: Debian's
// prometheus package, which `./hack/tools.sh prometheus` (make
// tools-prometheus) unpacks into .cache/tools/prometheus/root without
// installing it. Start writes a configuration that scrapes the given
// targets every second, and runs the server on a loopback port with its
// data in a temporary directory.
//
// Tests that need Prometheus skip when it has not been fetched (see
// Lookup), unless $WATCHWORD_REQUIRE_PROMETHEUS is set, as `make test`
// does: then its absence fails the run instead.
package promserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// RequireEnv names the environment variable that makes Prometheus
// mandatory: when it is set, a missing server is an error for Lookup
// instead of a reason to skip.
const RequireEnv = "WATCHWORD_REQUIRE_PROMETHEUS"

// BinEnv names the environment variable that points at a prometheus
// binary, instead of .cache/tools/prometheus/root/usr/bin/prometheus above
// the working directory.
const BinEnv = "WATCHWORD_PROMETHEUS"

// ErrNoServer is returned by Find when Prometheus has not been fetched.
var ErrNoServer = errors.New("no Prometheus in $" + BinEnv + " or .cache/tools/prometheus/root: run `make tools-prometheus`")

// Required reports whether $WATCHWORD_REQUIRE_PROMETHEUS is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Lookup finds Prometheus for a test run: the path of its binary, or an
// empty path and a reason to skip, or (when Required) an error.
func Lookup() (bin, skip string, err error) {
	bin, err = Find()
	switch {
	case err == nil:
		return bin, "", nil
	case errors.Is(err, ErrNoServer) && !Required():
		return "", "needs Prometheus: " + err.Error() + " (or set " + RequireEnv + "=1 to make this a failure)", nil
	case errors.Is(err, ErrNoServer):
		return "", "", fmt.Errorf("%w; %s is set, so the Prometheus tests may not be skipped", err, RequireEnv)
	default:
		return "", "", err
	}
}

// LookupPromtool finds promtool, which Debian's prometheus package ships
// beside the server, for tests of rules: its path, or an empty path and a
// reason to skip, or (when Required) an error.
func LookupPromtool() (bin, skip string, err error) {
	server, skip, err := Lookup()
	if err != nil || skip != "" {
		return "", skip, err
	}
	bin, err = promtoolBeside(server)
	switch {
	case err == nil:
		return bin, "", nil
	case Required():
		return "", "", fmt.Errorf("%w: run `make tools-prometheus`; %s is set, so the Prometheus tests may not be skipped", err, RequireEnv)
	default:
		return "", "needs promtool: " + err.Error() + ": run `make tools-prometheus` (or set " + RequireEnv + "=1 to make this a failure)", nil
	}
}

// promtoolBeside returns the promtool in the folder of the prometheus
// binary, after links (.cache/tools/bin/prometheus is one).
func promtoolBeside(server string) (string, error) {
	resolved, err := filepath.EvalSymlinks(server)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(filepath.Dir(resolved), "promtool")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no promtool beside %s", resolved)
	}
	return bin, nil
}

// Find returns the path of the prometheus binary: $WATCHWORD_PROMETHEUS,
// or the unpacked package in .cache/tools/prometheus/root above the
// working directory.
func Find() (string, error) {
	if b := os.Getenv(BinEnv); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", ErrNoServer
		}
		return b, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		b := filepath.Join(d, ".cache", "tools", "prometheus", "root", "usr", "bin", "prometheus")
		if _, err := os.Stat(b); err == nil {
			return b, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoServer
		}
	}
}

// Server is a running Prometheus server.
type Server struct {
	// URL is the server's base address, http://127.0.0.1:PORT.
	URL  string
	dir  string
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan error
}

// config is the part of Prometheus's configuration file Start writes.
type config struct {
	Global        globalConfig   `json:"global"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
}

type globalConfig struct {
	ScrapeInterval     string `json:"scrape_interval"`
	EvaluationInterval string `json:"evaluation_interval"`
}

type scrapeConfig struct {
	JobName        string         `json:"job_name"`
	ScrapeInterval string         `json:"scrape_interval"`
	ScrapeTimeout  string         `json:"scrape_timeout"`
	StaticConfigs  []staticConfig `json:"static_configs"`
}

type staticConfig struct {
	Targets []string `json:"targets"`
}

// Start runs the prometheus binary on a free loopback port, scraping the
// targets (host:port, path /metrics) as the job every second. It returns
// once the server says it is ready.
func Start(ctx context.Context, bin, job string, targets ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "watchword-prometheus-")
	if err != nil {
		return nil, err
	}
	cfg := config{
		Global: globalConfig{ScrapeInterval: "1s", EvaluationInterval: "1s"},
		ScrapeConfigs: []scrapeConfig{{JobName: job, ScrapeInterval: "1s", ScrapeTimeout: "1s",
			StaticConfigs: []staticConfig{{Targets: targets}}}},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err = os.WriteFile(cfgFile, raw, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := &Server{URL: "http://" + addr, dir: dir, logs: &lockedBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Logs returns what the server wrote so far.
func (s *Server) Logs() string { return s.logs.String() }

// waitReady waits until /-/ready answers 200 (a minute at most).
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case werr := <-s.done:
			return fmt.Errorf("prometheus exited (%v) before it was ready: %s", werr, s.logs.String())
		case <-ctx.Done():
			return fmt.Errorf("prometheus was not ready: %v: %s", err, s.logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		// The server's exit status after a signal says nothing useful.
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

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a buffer the process writes to while tests read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
