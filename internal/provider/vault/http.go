package vault

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// transport is the narrow HTTP surface of Vault that the provider uses. It
// is an interface so that tests can inject failures; the real one speaks
// HTTP to a server.
type transport interface {
	// do sends one request. body, if not nil, is sent as JSON; the decoded
	// JSON answer goes into out when it is not nil.
	do(ctx context.Context, method, path string, query url.Values, token string, body, out any) error
}

// httpTransport talks to a Vault server.
type httpTransport struct {
	base      *url.URL
	namespace string
	client    *http.Client
}

func newHTTPTransport(server, namespace string, caPEM, certPEM, keyPEM []byte) (*httpTransport, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: vault.server %q is not a URL", engine.ErrInvalidConfig, server)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%w: the Vault CA bundle holds no PEM certificate", engine.ErrInvalidConfig)
		}
		tlsCfg.RootCAs = pool
	}
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: the Vault client certificate and key do not form a pair", engine.ErrInvalidConfig)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &httpTransport{base: u, namespace: namespace, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// apiError is a non-2xx answer from Vault. Its text holds the status and
// Vault's own error strings, which name paths and never values.
type apiError struct {
	status int
	errs   []string
	// raw is the decoded body, for callers that look inside a 404 (a
	// deleted KV v2 version answers 404 with its metadata).
	raw json.RawMessage
	// retryAfter is the Retry-After header of a 429; zero when absent.
	retryAfter time.Duration
}

func (e *apiError) Error() string {
	if len(e.errs) == 0 {
		return fmt.Sprintf("HTTP %d", e.status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.status, strings.Join(e.errs, "; "))
}

func (t *httpTransport) do(ctx context.Context, method, path string, query url.Values, token string, body, out any) error {
	u := *t.base
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/" + strings.TrimLeft(path, "/")
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	if t.namespace != "" {
		req.Header.Set("X-Vault-Namespace", t.namespace)
	}
	req.Header.Set("X-Vault-Request", "true")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("cannot reach Vault at %s: %v: %w", t.base.Host, err, engine.ErrUnavailable)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("reading Vault's answer: %v: %w", err, engine.ErrUnavailable)
	}
	if resp.StatusCode >= 300 {
		ae := &apiError{status: resp.StatusCode, raw: raw, retryAfter: retryAfterHeader(resp.Header.Get("Retry-After"), time.Now())}
		var e struct {
			Errors []string `json:"errors"`
		}
		if json.Unmarshal(raw, &e) == nil {
			ae.errs = e.Errors
		}
		return ae
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("Vault answered with JSON that does not parse: %w", engine.ErrUnavailable)
		}
	}
	return nil
}

// classify turns a transport error into an engine error class, with a
// message naming what was asked.
func classify(what string, err error) error {
	var refused *refusedError
	if errors.As(err, &refused) {
		if refused.unauthenticated {
			return fmt.Errorf("%s: %v: %w", what, refused, engine.ErrUnauthenticated)
		}
		return fmt.Errorf("%s: %v: %w", what, refused, engine.ErrPermissionDenied)
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case ae.status == http.StatusNotFound:
		return fmt.Errorf("%s does not exist: %w", what, engine.ErrNotFound)
	case ae.status == http.StatusUnauthorized:
		return fmt.Errorf("%s: Vault refused the credentials (HTTP 401): %w", what, engine.ErrUnauthenticated)
	case ae.status == http.StatusForbidden:
		return fmt.Errorf("%s: permission denied by Vault (HTTP %d): %w", what, ae.status, engine.ErrPermissionDenied)
	case ae.status == http.StatusTooManyRequests:
		// Vault's rate limit quotas say when to try again.
		return engine.ThrottledFor(ae.retryAfter, what+": Vault answered HTTP 429")
	case ae.status == http.StatusServiceUnavailable && sealed(ae):
		return fmt.Errorf("%s: Vault is sealed: %w", what, engine.ErrUnavailable)
	case ae.status >= 500:
		return fmt.Errorf("%s: Vault answered %s: %w", what, ae, engine.ErrUnavailable)
	case ae.status == http.StatusBadRequest:
		return fmt.Errorf("%s: Vault refused the request (%s): %w", what, ae, engine.ErrInvalidConfig)
	default:
		return fmt.Errorf("%s: Vault answered %s", what, ae)
	}
}

func sealed(ae *apiError) bool {
	for _, e := range ae.errs {
		if strings.Contains(e, "sealed") {
			return true
		}
	}
	return false
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == code
}

// retryAfterHeader reads a Retry-After header: a number of seconds or an
// HTTP date. Zero when it is absent, malformed or in the past.
func retryAfterHeader(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
