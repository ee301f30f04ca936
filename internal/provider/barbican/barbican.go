// Package barbican is a provider for OpenStack Barbican, the key manager
// service, on gophercloud (the OpenStack SDK for Go). It reads secrets by
// name or by reference, tells their current version without reading the
// payload, and publishes secrets it owns.
//
// Barbican secrets are immutable: a new payload is a new secret under the
// same name. So a name reads the newest secret of that name that holds a
// payload, its version is "<uuid>@<created>", and publishing creates a new
// secret and deletes the older ones it owns. Authentication is Keystone v3
// (an application credential, or a user's password scoped to a project),
// or none for a Barbican deployed without Keystone.
package barbican

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds Barbican clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks what the API's rules also check, for a spec that did not
// pass through the API server (the agent's config, a unit test).
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Barbican
	a := spec.Auth
	n := 0
	for _, set := range []bool{a.ApplicationCredential != nil, a.Password != nil, a.NoAuth != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("%w: barbican.auth must set exactly one of applicationCredential, password or noAuth", engine.ErrInvalidConfig)
	case a.NoAuth != nil && spec.Endpoint == "":
		return fmt.Errorf("%w: barbican.endpoint is required with auth.noAuth: without Keystone there is no catalog to find Barbican in", engine.ErrInvalidConfig)
	case len(spec.CABundle) > 0 && spec.CAProvider != nil:
		return fmt.Errorf("%w: barbican: set caBundle or caProvider, not both", engine.ErrInvalidConfig)
	case a.NoAuth == nil && spec.AuthURL == "":
		return fmt.Errorf("%w: barbican.authURL is required: it is Keystone's v3 URL (only auth.noAuth goes without it)", engine.ErrInvalidConfig)
	}
	if p := a.Password; p != nil {
		if (p.UserID == "") == (p.Username == "") {
			return fmt.Errorf("%w: barbican.auth.password must set exactly one of userID or username", engine.ErrInvalidConfig)
		}
		if (p.ProjectID == "") == (p.ProjectName == "") {
			return fmt.Errorf("%w: barbican.auth.password must set exactly one of projectID or projectName", engine.ErrInvalidConfig)
		}
	}
	return nil
}

// Refs names the CA bundle's Secret or ConfigMap and the Secret of the
// auth method set in the block.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Barbican
	a := spec.Auth
	var out []provider.ObjectRef
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("barbican.caProvider", *spec.CAProvider))
	}
	if a.ApplicationCredential != nil {
		out = append(out, provider.SecretKeyRef("barbican.auth.applicationCredential.secretRef", a.ApplicationCredential.SecretRef))
	}
	if a.Password != nil {
		out = append(out, provider.SecretKeyRef("barbican.auth.password.passwordSecretRef", a.Password.PasswordSecretRef))
	}
	return out
}

// New builds a client. With Keystone it logs in (one token request, and
// the catalog comes with the token); gophercloud logs in again when the
// token expires. Token-less, it does no I/O.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	sc, err := serviceClient(ctx, store.Spec.Barbican, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{sc: sc}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Writer: c, Checker: c, Closer: c}, nil
}

// callTimeout bounds one HTTP request, below engine.CallTimeout, which
// bounds a whole operation.
const callTimeout = 20 * time.Second

func serviceClient(ctx context.Context, spec *v1alpha1.BarbicanProvider, deps provider.Deps) (*gophercloud.ServiceClient, error) {
	endpoint := strings.TrimSuffix(spec.Endpoint, "/")
	if endpoint != "" {
		endpoint = strings.TrimSuffix(endpoint, "/v1") + "/v1/"
	}
	hc, err := httpClient(ctx, spec, deps)
	if err != nil {
		return nil, err
	}
	if a := spec.Auth.NoAuth; a != nil {
		pc := &gophercloud.ProviderClient{HTTPClient: hc}
		return &gophercloud.ServiceClient{
			ProviderClient: pc, Endpoint: endpoint, ResourceBase: endpoint, Type: "key-manager",
			MoreHeaders: map[string]string{"X-Project-Id": a.ProjectID},
		}, nil
	}
	opts, who, err := authOptions(ctx, spec, deps)
	if err != nil {
		return nil, err
	}
	pc, err := openstack.NewClient(spec.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("%w: barbican.authURL %q: %v", engine.ErrInvalidConfig, spec.AuthURL, err)
	}
	pc.HTTPClient = hc
	if err = openstack.Authenticate(ctx, pc, opts); err != nil {
		return nil, classify("logging in to Keystone at "+spec.AuthURL+" "+who, err)
	}
	if endpoint != "" {
		return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: endpoint, ResourceBase: endpoint, Type: "key-manager"}, nil
	}
	eo := gophercloud.EndpointOpts{Region: spec.Region}
	switch spec.Interface {
	case "internal":
		eo.Availability = gophercloud.AvailabilityInternal
	case "admin":
		eo.Availability = gophercloud.AvailabilityAdmin
	}
	sc, err := openstack.NewKeyManagerV1(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("%w: Keystone's catalog has no key-manager endpoint (interface %q, region %q) for the login %s; set barbican.endpoint, region or interface",
			engine.ErrInvalidConfig, orDefault(spec.Interface, "public"), spec.Region, who)
	}
	return sc, nil
}

// httpClient is the HTTP client of Keystone and Barbican: with the CA
// bundle of the spec as its roots when one is given, the system's
// otherwise.
func httpClient(ctx context.Context, spec *v1alpha1.BarbicanProvider, deps provider.Deps) (http.Client, error) {
	ca := spec.CABundle
	if p := spec.CAProvider; p != nil {
		var err error
		if p.Type == "ConfigMap" {
			ca, err = deps.ConfigMapValue(ctx, p.Namespace, p.Name, p.Key)
		} else {
			ca, err = deps.SecretValue(ctx, v1alpha1.SecretKeySelector{Name: p.Name, Key: p.Key, Namespace: p.Namespace})
		}
		if err != nil {
			return http.Client{}, err
		}
	}
	if len(ca) == 0 {
		return http.Client{Timeout: callTimeout}, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return http.Client{}, fmt.Errorf("%w: the CA bundle of barbican.caBundle or caProvider holds no PEM certificate", engine.ErrInvalidConfig)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return http.Client{Timeout: callTimeout, Transport: t}, nil
}

// authOptions reads the credentials of the auth method, and says who logs
// in, for messages (IDs and names, never a secret).
func authOptions(ctx context.Context, spec *v1alpha1.BarbicanProvider, deps provider.Deps) (gophercloud.AuthOptions, string, error) {
	opts := gophercloud.AuthOptions{IdentityEndpoint: spec.AuthURL, AllowReauth: true}
	a := spec.Auth
	if ac := a.ApplicationCredential; ac != nil {
		secret, err := deps.SecretValue(ctx, ac.SecretRef)
		if err != nil {
			return opts, "", err
		}
		opts.ApplicationCredentialID = ac.ID
		opts.ApplicationCredentialSecret = strings.TrimSpace(string(secret))
		return opts, fmt.Sprintf("with application credential %q", ac.ID), nil
	}
	p := a.Password
	pw, err := deps.SecretValue(ctx, p.PasswordSecretRef)
	if err != nil {
		return opts, "", err
	}
	opts.Password = strings.TrimSuffix(string(pw), "\n")
	who := "as user "
	if p.UserID != "" {
		opts.UserID = p.UserID
		who += fmt.Sprintf("%q", p.UserID)
	} else {
		opts.Username, opts.DomainName = p.Username, orDefault(p.UserDomainName, "Default")
		who += fmt.Sprintf("%q (domain %q)", p.Username, opts.DomainName)
	}
	if p.ProjectID != "" {
		opts.Scope = &gophercloud.AuthScope{ProjectID: p.ProjectID}
		who += fmt.Sprintf(" for project %q", p.ProjectID)
	} else {
		d := orDefault(p.ProjectDomainName, "Default")
		opts.Scope = &gophercloud.AuthScope{ProjectName: p.ProjectName, DomainName: d}
		who += fmt.Sprintf(" for project %q (domain %q)", p.ProjectName, d)
	}
	return opts, who, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// classify turns an error of gophercloud into a class of the provider
// contract. Barbican's and Keystone's own texts are left out: they can
// echo the request.
func classify(what string, err error) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &code) {
		var missing gophercloud.ErrResourceNotFound
		if errors.As(err, &missing) {
			return fmt.Errorf("%s does not exist: %w", what, engine.ErrNotFound)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w: %w", what, err, engine.ErrUnavailable)
		}
		return fmt.Errorf("%s: %v: %w", what, err, engine.ErrUnavailable)
	}
	status := code.Actual
	switch {
	case status == http.StatusNotFound:
		return fmt.Errorf("%s does not exist: %w", what, engine.ErrNotFound)
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: the credentials were refused (HTTP 401): %w", what, engine.ErrUnauthenticated)
	case status == http.StatusForbidden:
		return fmt.Errorf("%s: not allowed by the project's roles and Barbican's policy (HTTP 403): %w", what, engine.ErrPermissionDenied)
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("%s: HTTP 429: %w", what, engine.ErrThrottled)
	case status >= 500:
		return fmt.Errorf("%s: the server answered HTTP %d: %w", what, status, engine.ErrUnavailable)
	case status == http.StatusBadRequest:
		return fmt.Errorf("%s: the request was refused as invalid (HTTP 400): %w", what, engine.ErrInvalidConfig)
	default:
		return fmt.Errorf("%s: the server answered HTTP %d", what, status)
	}
}
