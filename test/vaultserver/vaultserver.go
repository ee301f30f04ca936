// Package vaultserver runs a real Vault server for tests: the binary that
// hack/tools.sh builds from the github.com/hashicorp/vault module, on
// loopback, with file storage so that it can be sealed, stopped and started
// again with its data.
//
// Tests that need Vault skip when the binary has not been built (see
// Lookup), unless $WATCHWORD_REQUIRE_VAULT is set, as `make test` does: then
// a missing binary fails the run instead of skipping silently.
package vaultserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Server is a running (or stopped) Vault server.
type Server struct {
	bin       string
	dir       string
	addr      string
	cmd       *exec.Cmd
	unsealKey string
	// RootToken is the initial root token.
	RootToken string
	// TLS, when set, is what the server presents and requires.
	TLS    *TLSFiles
	client *http.Client
	env    []string
}

// TLSFiles configure a TLS listener that requires client certificates
// signed by ClientCA.
type TLSFiles struct {
	CertFile, KeyFile, ClientCAFile string
	// Client is how the harness itself talks to the server.
	Client *http.Client
}

// RequireEnv names the environment variable that makes Vault mandatory:
// when it is set to a non-empty value, a missing binary is an error for
// Lookup instead of a reason to skip.
const RequireEnv = "WATCHWORD_REQUIRE_VAULT"

// ErrNoBinary is returned by Find when there is no vault binary.
var ErrNoBinary = errors.New("no vault binary in $WATCHWORD_ASSETS or .cache/tools/bin: run `make tools-vault`")

// Required reports whether $WATCHWORD_REQUIRE_VAULT is set.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// Lookup finds the vault binary for a test run. With a binary it returns
// its path. Without one it returns an empty path and a skip reason that
// names `make tools-vault`, or, when Required, ErrNoBinary.
func Lookup() (bin, skip string, err error) {
	bin, err = Find()
	switch {
	case err == nil:
		return bin, "", nil
	case errors.Is(err, ErrNoBinary) && !Required():
		return "", "needs a Vault server: " + err.Error() + " (or set " + RequireEnv + "=1 to make this a failure)", nil
	case errors.Is(err, ErrNoBinary):
		return "", "", fmt.Errorf("%w; %s is set, so the Vault tests may not be skipped", err, RequireEnv)
	default:
		return "", "", err
	}
}

// Find returns the vault binary: $WATCHWORD_ASSETS/vault, or
// .cache/tools/bin/vault above the working directory; ErrNoBinary when
// there is neither. With $WATCHWORD_ASSETS set, only that directory is
// searched, so that a run can point at a directory without Vault.
func Find() (string, error) {
	if d := os.Getenv("WATCHWORD_ASSETS"); d != "" {
		p := filepath.Join(d, "vault")
		if _, err := os.Stat(p); err != nil {
			return "", ErrNoBinary
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".cache", "tools", "bin", "vault")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoBinary
		}
	}
}

// Start starts a new server, initialises and unseals it, and mounts a KV
// v2 engine at secret/.
func Start(bin string) (*Server, error) { return StartTLS(bin, nil) }

// StartTLS is Start with a TLS listener when tlsFiles is not nil.
func StartTLS(bin string, tlsFiles *TLSFiles) (*Server, error) {
	return start(bin, "127.0.0.1", tlsFiles)
}

// StartOn is Start listening on host instead of loopback, such as a
// node's address that pods reach.
func StartOn(bin, host string) (*Server, error) { return start(bin, host, nil) }

// StartEnv is Start with more environment variables for the server
// process, such as SSL_CERT_FILE for a test CA that its auth methods
// must trust.
func StartEnv(bin string, env ...string) (*Server, error) {
	return start(bin, "127.0.0.1", nil, env...)
}

func start(bin, host string, tlsFiles *TLSFiles, env ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "watchword-vault-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	listener := "tls_disable = true"
	scheme := "http"
	client := http.DefaultClient
	if tlsFiles != nil {
		listener = fmt.Sprintf("tls_cert_file = %q\n  tls_key_file = %q\n  tls_client_ca_file = %q\n  tls_require_and_verify_client_cert = true",
			tlsFiles.CertFile, tlsFiles.KeyFile, tlsFiles.ClientCAFile)
		scheme = "https"
		client = tlsFiles.Client
	}
	cfg := fmt.Sprintf(`storage "file" { path = %q }
listener "tcp" {
  address = %q
  %s
}
disable_mlock = true
api_addr = "%s://%s"
`, filepath.Join(dir, "data"), addr, listener, scheme, addr)
	if err := os.WriteFile(filepath.Join(dir, "config.hcl"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, addr: addr, TLS: tlsFiles, client: client, env: env}
	if err := s.Restart(); err != nil {
		return nil, err
	}
	var init struct {
		Keys      []string `json:"keys"`
		RootToken string   `json:"root_token"`
	}
	if err := s.call(http.MethodPut, "sys/init", "", map[string]any{"secret_shares": 1, "secret_threshold": 1}, &init); err != nil {
		s.Stop()
		return nil, fmt.Errorf("initialising vault: %w", err)
	}
	s.unsealKey, s.RootToken = init.Keys[0], init.RootToken
	if err := s.Unseal(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.Do(http.MethodPost, "sys/mounts/secret", map[string]any{"type": "kv", "options": map[string]string{"version": "2"}}, nil); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Addr is the server's URL.
func (s *Server) Addr() string {
	if s.TLS != nil {
		return "https://" + s.addr
	}
	return "http://" + s.addr
}

// Restart starts the process again (after Stop) and waits until it
// answers; the server is sealed until Unseal.
func (s *Server) Restart() error {
	cmd := exec.Command(s.bin, "server", "-config", filepath.Join(s.dir, "config.hcl"))
	logf, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting vault: %w", err)
	}
	s.cmd = cmd
	answers := func(context.Context) (bool, error) {
		resp, err := s.client.Get(s.Addr() + "/v1/sys/seal-status")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, answers); err != nil {
		s.Stop()
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("vault did not answer within 60s: %s", log)
	}
	return nil
}

// Unseal unseals the server and waits until it is active.
func (s *Server) Unseal() error {
	if err := s.call(http.MethodPut, "sys/unseal", "", map[string]any{"key": s.unsealKey}, nil); err != nil {
		return fmt.Errorf("unsealing vault: %w", err)
	}
	active := func(context.Context) (bool, error) {
		resp, err := s.client.Get(s.Addr() + "/v1/sys/health")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, active); err != nil {
		return errors.New("vault did not become active after unsealing")
	}
	return nil
}

// Seal seals the server.
func (s *Server) Seal() error { return s.Do(http.MethodPut, "sys/seal", nil, nil) }

// Stop ends the process; its data stays for Restart.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

// Do sends one request with the root token.
func (s *Server) Do(method, path string, body, out any) error {
	return s.call(method, path, s.RootToken, body, out)
}

// Token creates a token with the given policies.
func (s *Server) Token(policies ...string) (string, error) {
	var out struct {
		Auth struct {
			ClientToken string `json:"client_token"`
		} `json:"auth"`
	}
	if err := s.Do(http.MethodPost, "auth/token/create", map[string]any{"policies": policies, "ttl": "1h"}, &out); err != nil {
		return "", err
	}
	return out.Auth.ClientToken, nil
}

// Policy writes an ACL policy.
func (s *Server) Policy(name, hcl string) error {
	return s.Do(http.MethodPut, "sys/policies/acl/"+name, map[string]any{"policy": hcl}, nil)
}

// PutKV2 writes a KV v2 secret at mount/path.
func (s *Server) PutKV2(mount, path string, data map[string]any) error {
	return s.Do(http.MethodPost, mount+"/data/"+path, map[string]any{"data": data}, nil)
}

func (s *Server) call(method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.Addr()+"/v1/"+path, rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if out != nil && len(raw) > 0 {
		return json.Unmarshal(raw, out)
	}
	return nil
}
