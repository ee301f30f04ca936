// Package webhook is a provider for any HTTP API: a store's requests are
// made of templates (a URL, a method, headers and a body) over the remote
// key and the Secret keys the store names, and a JSONPath picks the value
// and its version out of the answer. With push, the store also publishes:
// put and delete requests of the same kind, and a JSONPath to where the
// API keeps Watchword's ownership marker.
//
// Templates are Go's text/template with Watchword's template functions
// (engine.FuncMap), so that a store's templates read like an
// ExternalSecret's. JSONPath is that of k8s.io/client-go/util/jsonpath,
// the syntax of kubectl's -o jsonpath, already a dependency; ESO's
// webhook examples ($.data.value) are valid in it.
package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds webhook clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Defaults and bounds.
const (
	defaultTimeout  = 10 * time.Second
	maxTimeout      = engine.CallTimeout
	defaultMaxBytes = 1 << 20
	maxMaxBytes     = 16 << 20
	maxRedirects    = 3
)

// reserved are the names of the templates' own data, which no entry of
// secrets may take.
var reserved = map[string]bool{"remoteRef": true, "fields": true, "owner": true, "version": true}

// headerName is a token of RFC 9110, the characters a header name may
// have. Written out here: the standard library checks names only when a
// request is sent, and its check is not exported.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// Validate checks what the API's rules also check, for a spec that did not
// pass through the API server, and what they cannot: that every template
// and JSONPath parses.
func (Factory) Validate(store provider.Store) error {
	_, err := compile(store.Spec.Webhook)
	return err
}

// Refs names the CA bundle's object and every Secret key of secrets.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Webhook
	var out []provider.ObjectRef
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("webhook.caProvider", *spec.CAProvider))
	}
	for i, s := range spec.Secrets {
		out = append(out, provider.SecretKeyRef(fmt.Sprintf("webhook.secrets[%d].secretRef", i), s.SecretRef))
	}
	return out
}

// New reads the Secret keys the templates use and the CA bundle, and
// builds the client. It sends no request.
func (Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	spec := store.Spec.Webhook
	cfg, err := compile(spec)
	if err != nil {
		return engine.Ops{}, err
	}
	secrets := map[string]map[string]string{}
	for _, s := range spec.Secrets {
		v, verr := deps.SecretValue(ctx, s.SecretRef)
		if verr != nil {
			return engine.Ops{}, verr
		}
		if secrets[s.Name] == nil {
			secrets[s.Name] = map[string]string{}
		}
		secrets[s.Name][s.SecretRef.Key] = string(v)
	}
	hc, err := httpClient(ctx, spec, cfg, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{cfg: cfg, hc: hc, secrets: secrets}
	ops := engine.Ops{Reader: c, Closer: c}
	if cfg.put != nil {
		ops.Writer = c
	}
	return ops, nil
}

// httpClient is the client of the store: the CA bundle's roots when one is
// given, redirects followed only on the same host and scheme.
func httpClient(ctx context.Context, spec *v1alpha1.WebhookProvider, cfg *config, deps provider.Deps) (*http.Client, error) {
	ca, err := provider.CABundle(ctx, deps, spec.CABundle, spec.CAProvider)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%w: the CA bundle of webhook.caBundle or caProvider holds no PEM certificate", engine.ErrInvalidConfig)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, Timeout: cfg.timeout, CheckRedirect: sameOrigin}, nil
}

// errRedirect is a redirect the client does not follow.
var errRedirect = errors.New("redirect refused")

// sameOrigin follows a redirect only to the same scheme and host, and at
// most maxRedirects times: the headers the templates made (credentials)
// go nowhere else, and https is never downgraded.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) > maxRedirects || req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return errRedirect
	}
	return nil
}

// Client is a webhook store's client. It holds no state that changes, so
// it is safe for concurrent use.
type Client struct {
	cfg     *config
	hc      *http.Client
	secrets map[string]map[string]string
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// GetSecret sends the read request for ref and picks the value and its
// version out of the answer. A pinned version that is not the one the
// answer tells is ErrNotFound, unless the url asks the server for the
// version (.remoteRef.version) and the answer tells none.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	if err := checkKey(ref.Key); err != nil {
		return engine.Object{}, err
	}
	ans, err := c.read(ctx, ref)
	if err != nil {
		return engine.Object{}, err
	}
	obj, err := c.cfg.object(ref.Key, ans)
	if err != nil {
		return engine.Object{}, err
	}
	if ref.Version == "" || obj.Version == ref.Version {
		return obj, nil
	}
	if obj.Version == "" && c.cfg.read.usesVersion {
		obj.Version = ref.Version
		return obj, nil
	}
	if obj.Version == "" {
		return engine.Object{}, fmt.Errorf("key %q at version %q: the store tells no versions (set webhook.result.versionJSONPath or versionHeader, or ask for the version in the url with .remoteRef.version): %w", ref.Key, ref.Version, engine.ErrNotFound)
	}
	return engine.Object{}, fmt.Errorf("key %q: version %q is not the current one (%q), and the store keeps no other: %w", ref.Key, ref.Version, obj.Version, engine.ErrNotFound)
}

// read sends the read request of ref; a 404 is ErrNotFound.
func (c *Client) read(ctx context.Context, ref engine.Ref) (*answer, error) {
	data := c.data(map[string]any{"remoteRef": map[string]any{"key": ref.Key, "version": ref.Version}})
	return c.do(ctx, c.cfg.read, data, readWhat(ref), nil)
}

func readWhat(ref engine.Ref) string {
	if ref.Version != "" {
		return fmt.Sprintf("reading key %q at version %q", ref.Key, ref.Version)
	}
	return fmt.Sprintf("reading key %q", ref.Key)
}

// data is the templates' data: the Secret keys of secrets, and own.
func (c *Client) data(own map[string]any) map[string]any {
	out := make(map[string]any, len(c.secrets)+len(own))
	for name, keys := range c.secrets {
		out[name] = keys
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}

// checkKey refuses a key that is empty or has a '.' or '..' segment:
// inserted into a URL path, it would climb out of the path the url gives.
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: the remote key is empty", engine.ErrInvalidConfig)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." {
			return remoteNameInvalid(key)
		}
	}
	return nil
}
