// Package conjur is a provider for the variables of CyberArk Conjur
// (Conjur Open Source and Secrets Manager Self-Hosted, one REST API), on
// CyberArk's official Go SDK (conjur-api-go). A remote key is a variable's
// ID, such as prod/db/password; its version is the variable's version. It
// authenticates with a login and its API key (authn) or with a JSON Web
// Token (authn-jwt: a service account's token or one kept in a Secret),
// holds the short-lived access token and authenticates again before it
// expires and when Conjur refuses it. It reads values (the current one or
// a version Conjur still keeps), tells current versions and lists the
// variables its role can see. It does not publish: a variable is declared
// by policy, and a value carries nothing that could mark who wrote it
// (docs/providers.md).
//
// What the SDK does and does not do here: its request builders make every
// URL (the account and the variable ID escaped as Conjur expects), its
// authentication requests carry the credentials, its token type parses
// Conjur's access token and tells when to renew it, and its error type
// keeps the status of a refusal. Its calls take no context, retry nothing,
// and its client renews the access token without a lock (it is not safe
// for concurrent use): so this provider sends the requests the SDK builds
// itself, with the caller's context, on an HTTP client of its own (the
// store's CA bundle), serializes the authentication, and sets the access
// token on each request in Conjur's header form. Retries are the engine's.
package conjur

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cyberark/conjur-api-go/conjurapi"
	"github.com/cyberark/conjur-api-go/conjurapi/authn"
	"github.com/cyberark/conjur-api-go/conjurapi/logging"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds Conjur clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks what CEL does not say as plainly: the address alone,
// and one way of authenticating, complete.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Conjur
	u, err := url.Parse(spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%w: conjur.url must be the Conjur server's address, such as https://conjur.example.com", engine.ErrInvalidConfig)
	}
	a := spec.Auth
	switch {
	case (a.APIKey == nil) == (a.JWT == nil):
		return fmt.Errorf("%w: conjur.auth must set exactly one of apikey and jwt", engine.ErrInvalidConfig)
	case a.APIKey != nil && strings.TrimSpace(a.APIKey.Account) == "":
		return fmt.Errorf("%w: conjur.auth.apikey.account is empty: name the Conjur account", engine.ErrInvalidConfig)
	case a.JWT != nil && (strings.TrimSpace(a.JWT.Account) == "" || strings.TrimSpace(a.JWT.ServiceID) == ""):
		return fmt.Errorf("%w: conjur.auth.jwt needs account and serviceID (the authn-jwt authenticator's ID)", engine.ErrInvalidConfig)
	case a.JWT != nil && (a.JWT.ServiceAccountRef == nil) == (a.JWT.SecretRef == nil):
		return fmt.Errorf("%w: conjur.auth.jwt must set exactly one of serviceAccountRef and secretRef", engine.ErrInvalidConfig)
	case a.JWT != nil && (a.JWT.HostID == "." || a.JWT.HostID == ".."):
		return fmt.Errorf("%w: conjur.auth.jwt.hostId cannot be %q", engine.ErrInvalidConfig, a.JWT.HostID)
	}
	return nil
}

// Refs names the credentials and the CA bundle.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Conjur
	var out []provider.ObjectRef
	if a := spec.Auth.APIKey; a != nil {
		out = append(out, provider.SecretKeyRef("conjur.auth.apikey.userRef", a.UserRef),
			provider.SecretKeyRef("conjur.auth.apikey.apiKeyRef", a.APIKeyRef))
	}
	if j := spec.Auth.JWT; j != nil {
		if j.ServiceAccountRef != nil {
			out = append(out, provider.ServiceAccountRef("conjur.auth.jwt.serviceAccountRef", *j.ServiceAccountRef))
		}
		if j.SecretRef != nil {
			out = append(out, provider.SecretKeyRef("conjur.auth.jwt.secretRef", *j.SecretRef))
		}
	}
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("conjur.caProvider", *spec.CAProvider))
	}
	return out
}

// quietSDK sends the SDK's own log (logrus, to standard error by default)
// nowhere: what a store's calls tell is in Watchword's errors.
var quietSDK sync.Once

// New reads the credentials (and, for a service account, requests its
// token) and builds the client; it does not authenticate yet.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	quietSDK.Do(func() { logging.ApiLog.SetOutput(io.Discard) })
	spec := store.Spec.Conjur
	where := func(name, key, ns string) string {
		return fmt.Sprintf("key %q of Secret %q", key, store.NamespaceOf(ns)+"/"+name)
	}
	c := &Client{url: strings.TrimSuffix(spec.URL, "/"), sem: make(chan struct{}, 1)}
	cfg := conjurapi.Config{ApplianceURL: c.url, Environment: conjurapi.EnvironmentSH, CredentialStorage: conjurapi.CredentialStorageNone}
	switch {
	case spec.Auth.APIKey != nil:
		a := spec.Auth.APIKey
		login, err := secretText(ctx, deps, a.UserRef, "conjur.auth.apikey.userRef", where(a.UserRef.Name, a.UserRef.Key, a.UserRef.Namespace), "the login, such as host/apps/myapp")
		if err != nil {
			return engine.Ops{}, err
		}
		key, err := secretText(ctx, deps, a.APIKeyRef, "conjur.auth.apikey.apiKeyRef", where(a.APIKeyRef.Name, a.APIKeyRef.Key, a.APIKeyRef.Namespace), "the login's API key")
		if err != nil {
			return engine.Ops{}, err
		}
		c.account = a.Account
		cfg.Account, cfg.AuthnType = a.Account, conjurapi.AuthnTypeStandard
		c.who = fmt.Sprintf("login %q (API key in %s)", login, where(a.APIKeyRef.Name, a.APIKeyRef.Key, a.APIKeyRef.Namespace))
		c.authenticate = func(api *conjurapi.Client) (*http.Request, error) {
			return api.AuthenticateRequest(authn.LoginPair{Login: login, APIKey: key})
		}
	default:
		j := spec.Auth.JWT
		var jwt string
		if j.ServiceAccountRef != nil {
			tok, _, err := deps.ServiceAccountToken(ctx, *j.ServiceAccountRef)
			if err != nil {
				return engine.Ops{}, err
			}
			jwt = tok
			c.who = fmt.Sprintf("service account %q", store.NamespaceOf(j.ServiceAccountRef.Namespace)+"/"+j.ServiceAccountRef.Name)
		} else {
			tok, err := secretText(ctx, deps, *j.SecretRef, "conjur.auth.jwt.secretRef", where(j.SecretRef.Name, j.SecretRef.Key, j.SecretRef.Namespace), "a JSON Web Token")
			if err != nil {
				return engine.Ops{}, err
			}
			jwt = tok
			c.who = "the token in " + where(j.SecretRef.Name, j.SecretRef.Key, j.SecretRef.Namespace)
		}
		c.who += fmt.Sprintf(" through authn-jwt/%s", j.ServiceID)
		if j.HostID != "" {
			c.who += fmt.Sprintf(" as %q", j.HostID)
		}
		c.account = j.Account
		cfg.Account, cfg.AuthnType, cfg.ServiceID, cfg.JWTContent = j.Account, "jwt", j.ServiceID, jwt
		host := j.HostID
		c.authenticate = func(api *conjurapi.Client) (*http.Request, error) {
			return api.JWTAuthenticateRequest(jwt, host)
		}
	}
	bundle, err := provider.CABundle(ctx, deps, spec.CABundle, spec.CAProvider)
	if err != nil {
		return engine.Ops{}, err
	}
	c.http, err = httpClient(bundle)
	if err != nil {
		return engine.Ops{}, err
	}
	// The SDK's client is used to build requests: NewClient makes an HTTP
	// client of its own, which this one replaces.
	api, err := conjurapi.NewClient(cfg)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("%w: conjur: the SDK refused the configuration (account, url or authenticator)", engine.ErrInvalidConfig)
	}
	api.SetHttpClient(c.http)
	c.api = api
	return engine.Ops{Reader: c, Versions: c, Lister: c, Checker: c, Closer: c}, nil
}

// secretText reads one credential, trimmed, and refuses an empty one.
func secretText(ctx context.Context, deps provider.Deps, sel v1alpha1.SecretKeySelector, field, where, what string) (string, error) {
	raw, err := deps.SecretValue(ctx, sel)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(raw))
	if v == "" {
		return "", fmt.Errorf("%w: %s: %s is empty: put %s there", engine.ErrInvalidConfig, field, where, what)
	}
	return v, nil
}

// httpClient is the client of one store: the system's CAs, or the
// store's bundle alone.
func httpClient(bundle []byte) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(bundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundle) {
			return nil, fmt.Errorf("%w: conjur: the CA bundle (caBundle or caProvider) holds no PEM certificate", engine.ErrInvalidConfig)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: engine.CallTimeout + 5*time.Second}, nil
}
