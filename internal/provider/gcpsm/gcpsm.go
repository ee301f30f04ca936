// Package gcpsm is a provider for Google Cloud Secret Manager, on Google's
// official Go client (gRPC). It reads secret versions by number, alias or
// latest (a JSON object payload as fields, for property and dataFrom),
// tells the current version from the version's metadata without its
// payload, and writes (a new version) and deletes secrets that carry its
// ownership label, for publishing. Global and regional secrets.
package gcpsm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/credentials/externalaccount"
	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

const cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"

// Factory builds Secret Manager clients.
type Factory struct {
	// GRPCOptions, when set, are added to the gRPC connection (tests use
	// them to reach a loopback fake); HTTPClient carries the token
	// exchanges of workload identity federation. Nil: the client's own.
	GRPCOptions []grpc.DialOption
	HTTPClient  *http.Client
}

var _ provider.Factory = Factory{}

// Validate checks what CEL cannot.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.GCPSM
	if w := spec.Auth.WorkloadIdentityFederation; w != nil && w.ServiceAccountEmail != "" && !strings.HasSuffix(w.ServiceAccountEmail, ".gserviceaccount.com") {
		return fmt.Errorf("%w: gcpsm.auth.workloadIdentityFederation.serviceAccountEmail must be a Google service account, NAME@PROJECT.iam.gserviceaccount.com", engine.ErrInvalidConfig)
	}
	return nil
}

// Refs names the service-account key and the federated service account.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	a := store.Spec.GCPSM.Auth
	var out []provider.ObjectRef
	if a.SecretRef != nil {
		out = append(out, provider.SecretKeyRef("gcpsm.auth.secretRef.secretAccessKeySecretRef", a.SecretRef.SecretAccessKeySecretRef))
	}
	if a.WorkloadIdentityFederation != nil {
		out = append(out, provider.ServiceAccountRef("gcpsm.auth.workloadIdentityFederation.serviceAccountRef", a.WorkloadIdentityFederation.ServiceAccountRef))
	}
	return out
}

// New builds the client: it reads the key, and connects to the global or
// the location's endpoint. Tokens are obtained at the first call.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.GCPSM
	creds, who, err := f.credentials(ctx, store, deps, false)
	if err != nil {
		return engine.Ops{}, err
	}
	endpoint := "secretmanager.googleapis.com:443"
	parent := "projects/" + spec.ProjectID
	if spec.Location != "" {
		endpoint = "secretmanager." + spec.Location + ".rep.googleapis.com:443"
		parent += "/locations/" + spec.Location
	}
	opts := []option.ClientOption{option.WithEndpoint(endpoint), option.WithAuthCredentials(creds)}
	for _, o := range f.GRPCOptions {
		opts = append(opts, option.WithGRPCDialOption(o))
	}
	api, err := secretmanager.NewClient(ctx, opts...)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("connecting to Secret Manager at %s: %w", endpoint, engine.ErrUnavailable)
	}
	honourRetryHints(api)
	c := &Client{api: api, parent: parent, who: who, regional: spec.Location != ""}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Writer: c, Closer: c,
		Leaser: &registryTokens{f: f, store: store, deps: deps}}, nil
}

// credentials builds the credentials of the store's auth method and says
// who they act as (never a secret). accessToken asks for credentials whose
// tokens are OAuth access tokens, which a service-account key otherwise
// replaces with self-signed JWTs (Secret Manager takes those; a registry
// does not).
func (f Factory) credentials(ctx context.Context, store provider.Store, deps provider.Deps, accessToken bool) (*auth.Credentials, string, error) {
	a := store.Spec.GCPSM.Auth
	switch {
	case a.SecretRef != nil:
		key, err := deps.SecretValue(ctx, a.SecretRef.SecretAccessKeySecretRef)
		if err != nil {
			return nil, "", err
		}
		var id struct {
			Type        string `json:"type"`
			ClientEmail string `json:"client_email"`
		}
		if json.Unmarshal(key, &id) != nil || id.Type != "service_account" || id.ClientEmail == "" {
			return nil, "", fmt.Errorf("%w: gcpsm.auth.secretRef.secretAccessKeySecretRef: the Secret key does not hold a service-account JSON key (type service_account, with client_email)", engine.ErrInvalidConfig)
		}
		// A self-signed JWT: the key signs its own tokens, and no token
		// exchange is needed.
		creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{
			Scopes: []string{cloudPlatform}, UseSelfSignedJWT: !accessToken, Client: f.HTTPClient})
		if err != nil {
			return nil, "", fmt.Errorf("%w: gcpsm.auth.secretRef.secretAccessKeySecretRef: the service-account key cannot be used (is its private key intact?)", engine.ErrInvalidConfig)
		}
		return creds, fmt.Sprintf("service account %q (key from Secret %q)", id.ClientEmail, a.SecretRef.SecretAccessKeySecretRef.Name), nil
	case a.WorkloadIdentityFederation != nil:
		w := a.WorkloadIdentityFederation
		sa := w.ServiceAccountRef
		if len(sa.Audiences) == 0 {
			// A pool provider's default allowed audience.
			sa.Audiences = []string{"https:" + w.Audience}
		}
		who := fmt.Sprintf("Kubernetes service account %q through pool provider %s", store.NamespaceOf(sa.Namespace)+"/"+sa.Name, w.Audience)
		opts := &externalaccount.Options{
			Audience:             w.Audience,
			SubjectTokenType:     "urn:ietf:params:oauth:token-type:jwt",
			TokenURL:             "https://sts.googleapis.com/v1/token",
			Scopes:               []string{cloudPlatform},
			SubjectTokenProvider: subjectToken{deps: deps, sa: sa},
			Client:               f.HTTPClient,
		}
		if w.ServiceAccountEmail != "" {
			opts.ServiceAccountImpersonationURL = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/" + w.ServiceAccountEmail + ":generateAccessToken"
			who += fmt.Sprintf(", impersonating service account %q", w.ServiceAccountEmail)
		}
		creds, err := externalaccount.NewCredentials(opts)
		if err != nil {
			return nil, "", fmt.Errorf("%w: gcpsm.auth.workloadIdentityFederation: %s", engine.ErrInvalidConfig, cut(err.Error()))
		}
		return creds, who, nil
	}
	return nil, "", fmt.Errorf("%w: gcpsm.auth must set one of secretRef or workloadIdentityFederation", engine.ErrInvalidConfig)
}

// subjectToken requests a token of the Kubernetes service account for
// each exchange; the federated token is cached by the client.
type subjectToken struct {
	deps provider.Deps
	sa   v1alpha1.ServiceAccountSelector
}

func (s subjectToken) SubjectToken(ctx context.Context, _ *externalaccount.RequestOptions) (string, error) {
	tok, _, err := s.deps.ServiceAccountToken(ctx, s.sa)
	return tok, err
}

// cut shortens a text of the client library raised before any request.
func cut(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
