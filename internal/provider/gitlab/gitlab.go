// Package gitlab is a provider for GitLab CI/CD variables, on GitLab's
// official Go SDK (gitlab.com/gitlab-org/api/client-go). It reads the
// variables of a project and, where the project has none of a key, those
// of groups, with External Secrets Operator's rules for the environment
// scope; it lists them (for dataFrom.find), and it writes and deletes the
// project variables that carry its ownership marker (for publishing).
//
// GitLab keeps no versions of a variable: the version Watchword reports is
// a digest of what was read (see version), keyed with the access token so
// that it tells nothing of a value to whoever reads the status.
package gitlab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	glapi "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// DefaultURL is the instance a store without url reads from.
const DefaultURL = "https://gitlab.com/"

// Factory builds GitLab clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks the block without I/O: the rules of its CRD again
// (for a store made before them) and the URL's shape.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.GitLab
	if spec.ProjectID == "" && len(spec.GroupIDs) == 0 {
		return fmt.Errorf("%w: gitlab: set projectID, groupIDs or both: the variables are read from them", engine.ErrInvalidConfig)
	}
	if spec.InheritFromGroups && spec.ProjectID == "" {
		return fmt.Errorf("%w: gitlab.inheritFromGroups needs projectID: the groups are those the project belongs to", engine.ErrInvalidConfig)
	}
	if spec.URL != "" {
		u, err := url.Parse(spec.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("%w: gitlab.url must be the instance's address, such as https://gitlab.example.com", engine.ErrInvalidConfig)
		}
	}
	if len(spec.CABundle) > 0 && spec.CAProvider != nil {
		return fmt.Errorf("%w: gitlab: set caBundle or caProvider, not both", engine.ErrInvalidConfig)
	}
	return nil
}

// Refs names the access token and the CA bundle's object.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.GitLab
	out := []provider.ObjectRef{provider.SecretKeyRef("gitlab.auth.secretRef.accessToken", spec.Auth.SecretRef.AccessToken)}
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("gitlab.caProvider", *spec.CAProvider))
	}
	return out
}

// New reads the token and the CA bundle and builds the SDK's client; it
// makes no request.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.GitLab
	sel := spec.Auth.SecretRef.AccessToken
	raw, err := deps.SecretValue(ctx, sel)
	if err != nil {
		return engine.Ops{}, err
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return engine.Ops{}, fmt.Errorf("%w: gitlab.auth.secretRef.accessToken: key %q of Secret %q is empty", engine.ErrInvalidConfig, sel.Key, sel.Name)
	}
	hc, err := httpClient(ctx, spec, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	base := spec.URL
	if base == "" {
		base = DefaultURL
	}
	api, err := glapi.NewClient(token,
		glapi.WithBaseURL(base),
		glapi.WithHTTPClient(hc),
		// The store's call budget (callLimits) paces the calls, and a
		// 429 holds the store at its gate: no limiter of the SDK's own,
		// and no retry of a 429 inside a call.
		glapi.WithCustomLimiter(noLimit{}),
		glapi.WithCustomRetry(retryPolicy),
		glapi.WithCustomRetryMax(2),
		glapi.WithCustomRetryWaitMinMax(200*time.Millisecond, time.Second),
		glapi.WithUserAgent("watchword"),
	)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("%w: gitlab.url: the SDK refused the address", engine.ErrInvalidConfig)
	}
	groups := slices.Clone(spec.GroupIDs)
	slices.Reverse(groups)
	c := &Client{
		api:      api,
		hc:       hc,
		instance: strings.TrimSuffix(base, "/"),
		project:  spec.ProjectID,
		groups:   groups,
		inherit:  spec.InheritFromGroups,
		env:      spec.Environment,
		key:      []byte(token),
		who: fmt.Sprintf("the access token in key %q of Secret %q", sel.Key,
			store.NamespaceOf(sel.Namespace)+"/"+sel.Name),
	}
	ops := engine.Ops{Reader: c, Lister: c, Closer: c}
	if spec.ProjectID != "" {
		ops.Writer = c
	}
	unscoped := ops
	ops.Scope = func(ns string) (engine.Ops, error) { return engine.PrefixKeys(unscoped, ScopePrefix(ns)), nil }
	return ops, nil
}

// ScopePrefix is the prefix of the keys of a namespace's scope, when
// publishers of several namespaces share a ClusterSecretStore: a
// variable key holds letters, digits and '_' only, so the engine's
// "NAMESPACE." cannot be one. The namespace's '-' become '_' (a
// namespace has no '_'), and its length comes first, so that no two
// namespaces' keys can be the same variable: "team-a" gives
// "NS6_team_a_".
func ScopePrefix(ns string) string {
	return fmt.Sprintf("NS%d_%s_", len(ns), strings.ReplaceAll(ns, "-", "_"))
}

// noLimit is a limiter that never waits.
type noLimit struct{}

func (noLimit) Wait(context.Context) error { return nil }

// retryPolicy retries, at most twice, a request that failed on the way or
// got a 5xx, when repeating it cannot do a write twice (GET, PUT, DELETE);
// never a 429, which the store's gate waits out, and never a canceled or
// expired call.
func retryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	method := ""
	if resp != nil && resp.Request != nil {
		method = resp.Request.Method
	}
	idempotent := method == http.MethodGet || method == http.MethodPut || method == http.MethodDelete
	if err != nil {
		return idempotent, nil
	}
	return idempotent && (resp.StatusCode == 0 || (resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented)), nil
}

var _ retryablehttp.CheckRetry = retryPolicy

// httpClient trusts the CA bundle when one is given.
func httpClient(ctx context.Context, spec *v1alpha1.GitLabProvider, deps provider.Deps) (*http.Client, error) {
	ca, err := provider.CABundle(ctx, deps, spec.CABundle, spec.CAProvider)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%w: the CA bundle of gitlab.caBundle or caProvider holds no PEM certificate", engine.ErrInvalidConfig)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// The token goes in a header to this instance only: no redirect is
	// followed (GitLab's API answers without one).
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}
