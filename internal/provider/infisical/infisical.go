// Package infisical is a provider for the secrets of Infisical, on
// Infisical's official Go SDK (github.com/infisical/go-sdk). It logs in as
// a machine identity with Universal Auth or Kubernetes Auth (a token
// requested for a named service account), reads a secret of a project's
// environment by its name (or by a path to it below the store's folder),
// at its current or a given version, and lists the secrets of the folder
// (and of the folders below it with recursive). It does not write: the
// provider has no Writer, so PushSecret refuses it as a destination.
//
// What the SDK (v0.8.0) does and does not, and how the provider deals
// with it:
//   - Its calls take no context. Each runs in a goroutine that the
//     provider stops waiting for when the call's context ends (the
//     request then ends on its own; the SDK has no timeout of its own).
//   - It takes no HTTP client: a CA bundle (caBundle, caProvider, read
//     with provider.CABundle) is handed over as its CaCertificate, added
//     to the system's roots, and its transport is its own (no proxy
//     settings of ours, no idle-connection release on Close).
//   - It retries a request that failed on the way, up to 3 times with a
//     backoff of up to 30 s, and with RetryRequestsConfig every failed
//     answer (a 401 and a 429 too): the provider asks for no retry at all,
//     so that the store's call budget and gate see every call and a 429
//     is waited out at the gate.
//   - It drops the answer's headers: a 429's Retry-After cannot reach the
//     gate, which then holds the store for its own backoff.
//   - Its background token refresh (a goroutine per client, tied to the
//     context given when it is built) is turned off: the provider logs in
//     when it has no token or its token is about to expire, and logs in
//     again once when Infisical answers 401 (a token revoked or expired
//     early).
//   - Its API errors carry Infisical's message, which echoes the request
//     (a secret's name, a folder path): the provider keeps only the
//     status.
package infisical

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	sdk "github.com/infisical/go-sdk"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// DefaultHostAPI is the API a store without hostAPI reads from.
const DefaultHostAPI = "https://app.infisical.com/api"

// Factory builds Infisical clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// folderShape is an absolute folder path of Infisical.
var folderShape = regexp.MustCompile(`^/([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?)?$`)

// Validate checks the block without I/O: the rules of its CRD again (for
// a store made before them) and the address's shape.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Infisical
	if spec.HostAPI != "" {
		u, err := url.Parse(spec.HostAPI)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("%w: infisical.hostAPI must be the address of Infisical's API, such as https://app.infisical.com/api", engine.ErrInvalidConfig)
		}
	}
	sc := spec.SecretsScope
	if sc.ProjectSlug == "" || sc.EnvironmentSlug == "" {
		return fmt.Errorf("%w: infisical.secretsScope needs projectSlug and environmentSlug: the secrets are read from that project's environment", engine.ErrInvalidConfig)
	}
	if sc.SecretsPath != "" && (!folderShape.MatchString(sc.SecretsPath) || hasDots(sc.SecretsPath)) {
		return fmt.Errorf("%w: infisical.secretsScope.secretsPath %q must be a folder path such as / or /app/db", engine.ErrInvalidConfig, sc.SecretsPath)
	}
	if len(spec.CABundle) > 0 && spec.CAProvider != nil {
		return fmt.Errorf("%w: infisical: set caBundle or caProvider, not both", engine.ErrInvalidConfig)
	}
	return nil
}

func hasDots(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if s == "." || s == ".." {
			return true
		}
	}
	return false
}

// Refs names the Universal Auth credentials or the service account, and
// the CA bundle's object.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Infisical
	var out []provider.ObjectRef
	if ua := spec.Auth.UniversalAuthCredentials; ua != nil {
		out = append(out,
			provider.SecretKeyRef("infisical.auth.universalAuthCredentials.clientId", ua.ClientID),
			provider.SecretKeyRef("infisical.auth.universalAuthCredentials.clientSecret", ua.ClientSecret))
	}
	if ka := spec.Auth.KubernetesAuth; ka != nil {
		out = append(out, provider.ServiceAccountRef("infisical.auth.kubernetesAuth.serviceAccountRef", ka.ServiceAccountRef))
	}
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("infisical.caProvider", *spec.CAProvider))
	}
	return out
}

// New reads the credentials and the CA bundle and builds the SDK's client;
// it makes no request (the login comes with the first call).
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.Infisical
	login, who, hint, err := loginOf(ctx, store, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	ca, err := provider.CABundle(ctx, deps, spec.CABundle, spec.CAProvider)
	if err != nil {
		return engine.Ops{}, err
	}
	if len(ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return engine.Ops{}, fmt.Errorf("%w: the CA bundle of infisical.caBundle or caProvider holds no PEM certificate", engine.ErrInvalidConfig)
	}
	host := spec.HostAPI
	if host == "" {
		host = DefaultHostAPI
	}
	folder := spec.SecretsScope.SecretsPath
	if folder == "" {
		folder = "/"
	}
	if folder != "/" {
		folder = strings.TrimSuffix(folder, "/")
	}
	cfg := sdk.Config{
		SiteUrl:       host,
		CaCertificate: string(ca),
		UserAgent:     "watchword",
		// No background refresh (a goroutine per client): the client
		// logs in when it needs a token (see Client.session).
		AutoTokenRefresh: sdk.BoolPtr(false),
		// No retry inside a call: with an exponential backoff of zero
		// retries the SDK makes one attempt, whatever the answer.
		RetryRequestsConfig: &sdk.RetryRequestsConfig{ExponentialBackoff: &sdk.ExponentialBackoffStrategy{MaxRetries: 0}},
		SilentMode:          true,
		LogWriter:           io.Discard,
	}
	c := &Client{
		// Each login gets an SDK client of its own (see session); with
		// AutoTokenRefresh off, the context starts nothing.
		newAPI:    func() sdk.InfisicalClientInterface { return sdk.NewInfisicalClient(context.Background(), cfg) },
		login:     login,
		now:       time.Now,
		host:      strings.TrimSuffix(host, "/"),
		project:   spec.SecretsScope.ProjectSlug,
		env:       spec.SecretsScope.EnvironmentSlug,
		folder:    folder,
		recursive: spec.SecretsScope.Recursive,
		who:       who,
		loginHint: hint,
	}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Checker: c}, nil
}

// loginFunc logs an SDK client in.
type loginFunc func(ctx context.Context, api sdk.InfisicalClientInterface) (sdk.MachineIdentityCredential, error)

// loginOf reads the credentials of the store's login, and says who logs
// in (never a credential) and what to check when the login is refused.
func loginOf(ctx context.Context, store provider.Store, deps provider.Deps) (login loginFunc, who, hint string, err error) {
	auth := store.Spec.Infisical.Auth
	switch {
	case auth.UniversalAuthCredentials != nil:
		ua := auth.UniversalAuthCredentials
		id, err := credential(ctx, store, deps, "clientId", ua.ClientID)
		if err != nil {
			return nil, "", "", err
		}
		secret, err := credential(ctx, store, deps, "clientSecret", ua.ClientSecret)
		if err != nil {
			return nil, "", "", err
		}
		who = fmt.Sprintf("the machine identity of the client ID in key %q of Secret %q (Universal Auth)", ua.ClientID.Key,
			store.NamespaceOf(ua.ClientID.Namespace)+"/"+ua.ClientID.Name)
		return func(ctx context.Context, api sdk.InfisicalClientInterface) (sdk.MachineIdentityCredential, error) {
			return provider.CallWithoutContext(ctx, func() (sdk.MachineIdentityCredential, error) { return api.Auth().UniversalAuthLogin(id, secret) })
		}, who, "the client ID or secret is wrong, revoked or expired, or Universal Auth is not set up for the identity; put valid ones in the Secrets", nil
	case auth.KubernetesAuth != nil:
		ka := auth.KubernetesAuth
		sa := ka.ServiceAccountRef
		who = fmt.Sprintf("machine identity %q as service account %q (Kubernetes Auth)", ka.IdentityID, store.NamespaceOf(sa.Namespace)+"/"+sa.Name)
		return func(ctx context.Context, api sdk.InfisicalClientInterface) (sdk.MachineIdentityCredential, error) {
			// A token of its own for each login.
			jwt, _, err := deps.ServiceAccountToken(ctx, sa)
			if err != nil {
				return sdk.MachineIdentityCredential{}, err
			}
			return provider.CallWithoutContext(ctx, func() (sdk.MachineIdentityCredential, error) {
				return api.Auth().KubernetesRawServiceAccountTokenLogin(ka.IdentityID, jwt)
			})
		}, who, "the identity's Kubernetes Auth does not allow this service account, namespace or audience, or Infisical could not review the token with the cluster", nil
	}
	return nil, "", "", fmt.Errorf("%w: infisical.auth: set universalAuthCredentials or kubernetesAuth", engine.ErrInvalidConfig)
}

// credential reads one Universal Auth credential.
func credential(ctx context.Context, store provider.Store, deps provider.Deps, field string, sel v1alpha1.SecretKeySelector) (string, error) {
	raw, err := deps.SecretValue(ctx, sel)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(raw))
	if v == "" {
		return "", fmt.Errorf("%w: infisical.auth.universalAuthCredentials.%s: key %q of Secret %q is empty: put the machine identity's %s there",
			engine.ErrInvalidConfig, field, sel.Key, store.NamespaceOf(sel.Namespace)+"/"+sel.Name, field)
	}
	return v, nil
}

// join is the folder of a key's path below folder: "a/b" below "/app" is
// "/app/a/b"; a path that starts with "/" is from the environment's root.
func join(folder, rel string) string {
	if strings.HasPrefix(rel, "/") {
		return path.Clean(rel)
	}
	return path.Join(folder, rel)
}
