package gcpsm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
)

// garUser is the user name Artifact Registry (and Container Registry)
// takes with an OAuth access token as the password.
const garUser = "oauth2accesstoken"

// registryTokens issues the Artifact Registry pull tokens of a dataFrom
// registryToken entry: an access token of the store's credentials, as an
// engine.Leaser that only issues (a token cannot be renewed, and expires
// by itself). Each issue builds the credentials anew, so that the token
// is a fresh one with its full hour, never the cached token of the Secret
// Manager client, which may be near its end.
type registryTokens struct {
	f     Factory
	store provider.Store
	deps  provider.Deps
}

var _ engine.Leaser = (*registryTokens)(nil)

// Issue asks Google for an access token and returns it as a
// .dockerconfigjson for the registry host (and, for templates, as
// username, password and expiry), its expiry as the version and in the
// lease's ID (gar:HOST@EXPIRY).
func (r *registryTokens) Issue(ctx context.Context, req engine.LeaseRequest) (engine.Object, engine.Lease, error) {
	if req.Registry != v1alpha1.RegistryGAR {
		return engine.Object{}, engine.Lease{}, failure.Terminalf(failure.NotSupported,
			"a gcpsm store issues Artifact Registry tokens only (dataFrom registryToken with registry GAR): %s", engine.LeaseStoreNeeded(req))
	}
	if r.store.Cluster() {
		// The token is the store's whole Google identity (every API its
		// service account may call, not only pulls), so it is handed only
		// to the namespace whose own credentials those are.
		return engine.Object{}, engine.Lease{}, failure.Terminalf(failure.NotSupported,
			"a ClusterSecretStore issues no Artifact Registry tokens: an access token carries the store's whole Google identity to every namespace that may use the store; give the namespace a SecretStore with credentials of its own")
	}
	creds, who, err := r.f.credentials(ctx, r.store, r.deps, true)
	if err != nil {
		return engine.Object{}, engine.Lease{}, err
	}
	what := "asking Google for an access token of " + who
	tok, err := creds.Token(ctx)
	if err != nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: %w", what, tokenError(err))
	}
	if tok.Value == "" || tok.Expiry.IsZero() {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: Google answered a token without a value or an expiry: %w", what, engine.ErrUnavailable)
	}
	expiry := tok.Expiry.UTC().Truncate(time.Second)
	cfg, err := engine.DockerConfigJSON(req.RegistryHost, garUser, tok.Value)
	if err != nil {
		return engine.Object{}, engine.Lease{}, err
	}
	version := expiry.Format(time.RFC3339)
	fields := map[string][]byte{
		engine.DockerConfigJSONKey: cfg,
		// External Secrets Operator's GCRAccessToken generator's keys,
		// for templates.
		"username": []byte(garUser),
		"password": []byte(tok.Value),
		"expiry":   []byte(strconv.FormatInt(expiry.Unix(), 10)),
	}
	return engine.Object{Version: version, Fields: fields},
		engine.Lease{ID: "gar:" + req.RegistryHost + "@" + version, Duration: max(time.Until(expiry), time.Second)}, nil
}

// statusCode finds the HTTP status of a failed token request in the auth
// library's errors ("status code 403" for an exchange or an impersonation).
var statusCode = regexp.MustCompile(`status code (\d{3})`)

// tokenError classifies a failed token request by the HTTP status and the
// OAuth and Google error codes of the answer. Nothing else of its text is
// kept: a token endpoint's error may repeat what was sent.
func tokenError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("Google did not answer in time: %w", engine.ErrUnavailable)
	}
	text := err.Error()
	code := 0
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Response != nil {
		code = ae.Response.StatusCode
	} else if m := statusCode.FindStringSubmatch(text); m != nil {
		code, _ = strconv.Atoi(m[1])
	}
	seen := ""
	if m := oauthError.FindStringSubmatch(text); m != nil {
		seen += " " + m[1]
	}
	if m := googleStatus.FindStringSubmatch(text); m != nil {
		seen += " " + m[1]
	}
	switch {
	case code == http.StatusForbidden || strings.Contains(seen, "PERMISSION_DENIED"):
		return fmt.Errorf("Google refused the token (HTTP %d%s): the identity may not impersonate the service account (it needs Service Account Token Creator or Workload Identity User): %w",
			code, seen, engine.ErrPermissionDenied)
	case code == http.StatusBadRequest || code == http.StatusUnauthorized:
		return fmt.Errorf("Google did not accept the credentials (HTTP %d%s): %w", code, seen, engine.ErrUnauthenticated)
	case code == http.StatusTooManyRequests:
		return fmt.Errorf("Google throttled the token request (HTTP %d): %w", code, engine.ErrThrottled)
	case code != 0:
		return fmt.Errorf("the token request failed (HTTP %d%s): %w", code, seen, engine.ErrUnavailable)
	case failure.Classify(err).Reason != failure.ProviderError:
		// Already classified by this project (the Kubernetes
		// service-account token, which says what is missing).
		return err
	}
	return fmt.Errorf("the token endpoint could not be reached: %w", engine.ErrUnavailable)
}

// Renew is refused: an access token cannot be renewed (the controller never
// asks, since its lease is not renewable).
func (r *registryTokens) Renew(context.Context, string, time.Duration) (engine.Lease, error) {
	return engine.Lease{}, fmt.Errorf("a Google access token cannot be renewed: %w", engine.ErrNotFound)
}

// Revoke does nothing: the token expires within the hour.
func (r *registryTokens) Revoke(context.Context, string) error { return nil }
