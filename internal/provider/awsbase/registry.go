package awsbase

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// RegistryTokens issues the ECR pull tokens of a dataFrom registryToken
// entry with the session's credentials (ecr:GetAuthorizationToken), as an
// engine.Leaser that only issues: a token cannot be renewed or revoked, so
// the controller asks for a new one before the expiry it recorded, and
// lets the old one expire. Vault paths (dataFrom vaultDynamic) are
// refused.
type RegistryTokens struct {
	s   *Session
	api *ecr.Client
}

var _ engine.Leaser = (*RegistryTokens)(nil)

// NewRegistryTokens is the ECR client of the session; it does not call
// AWS.
func NewRegistryTokens(s *Session) *RegistryTokens {
	return &RegistryTokens{s: s, api: ecr.NewFromConfig(s.Config, func(o *ecr.Options) {
		o.BaseEndpoint = s.BaseEndpoint()
		s.EndpointOptions(&o.EndpointOptions.UseFIPSEndpoint, &o.EndpointOptions.UseDualStackEndpoint)
	})}
}

// Issue asks ECR for an authorization token and returns it as a
// .dockerconfigjson for the registry's proxy endpoint (and, for templates,
// as username, password, proxy_endpoint and expires_at), its expiry as the
// version and in the lease's ID (ecr:HOST@EXPIRY).
func (r *RegistryTokens) Issue(ctx context.Context, req engine.LeaseRequest) (engine.Object, engine.Lease, error) {
	switch req.Registry {
	case v1alpha1.RegistryECR:
	case "":
		return engine.Object{}, engine.Lease{}, failure.Terminalf(failure.NotSupported,
			"an AWS store issues no Vault leases: dataFrom vaultDynamic needs a Vault store (an AWS store issues ECR tokens with dataFrom registryToken)")
	default:
		return engine.Object{}, engine.Lease{}, failure.Terminalf(failure.NotSupported,
			"an AWS store issues ECR tokens only: %s", engine.LeaseStoreNeeded(req))
	}
	// No registryIds: ECR deprecated them, as a token is good for every
	// registry the caller may pull from; registryID only names the host
	// the .dockerconfigjson holds it for.
	what := "asking ECR for an authorization token"
	out, err := r.api.GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return engine.Object{}, engine.Lease{}, r.s.Classify(what, err)
	}
	if len(out.AuthorizationData) != 1 {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: ECR answered %d authorizations, want one: %w", what, len(out.AuthorizationData), engine.ErrUnavailable)
	}
	a := out.AuthorizationData[0]
	host, user, pass, err := authorization(a.ProxyEndpoint, a.AuthorizationToken)
	if err != nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	endpoint := aws.ToString(a.ProxyEndpoint)
	if req.RegistryID != "" {
		// ACCOUNT.dkr.ecr.REGION.amazonaws.com: the registry of another
		// account in the same region and partition.
		_, rest, ok := strings.Cut(host, ".")
		if !ok {
			return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: ECR answered a proxy endpoint host without a domain: %w", what, engine.ErrUnavailable)
		}
		host = req.RegistryID + "." + rest
		endpoint = "https://" + host
	}
	if a.ExpiresAt == nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: ECR answered a token without an expiry: %w", what, engine.ErrUnavailable)
	}
	expiry := a.ExpiresAt.UTC()
	cfg, err := engine.DockerConfigJSON(host, user, pass)
	if err != nil {
		return engine.Object{}, engine.Lease{}, err
	}
	version := expiry.Format(time.RFC3339)
	fields := map[string][]byte{
		engine.DockerConfigJSONKey: cfg,
		// External Secrets Operator's ECRAuthorizationToken keys, for
		// templates (a converted one renders unchanged).
		"username":       []byte(user),
		"password":       []byte(pass),
		"proxy_endpoint": []byte(endpoint),
		"expires_at":     []byte(strconv.FormatInt(expiry.Unix(), 10)),
	}
	return engine.Object{Version: version, Fields: fields},
		engine.Lease{ID: "ecr:" + host + "@" + version, Duration: max(time.Until(expiry), time.Second)}, nil
}

// authorization splits ECR's answer: the registry host of the proxy
// endpoint (https://ACCOUNT.dkr.ecr.REGION.amazonaws.com), and the user
// and password of the token (base64 of AWS:PASSWORD). Errors never quote
// the token.
func authorization(endpoint, token *string) (host, user, pass string, err error) {
	u, perr := url.Parse(aws.ToString(endpoint))
	if perr != nil || u.Host == "" {
		return "", "", "", fmt.Errorf("ECR answered a proxy endpoint that is not a URL: %w", engine.ErrUnavailable)
	}
	raw, derr := base64.StdEncoding.DecodeString(aws.ToString(token))
	if derr != nil {
		return "", "", "", fmt.Errorf("ECR answered a token that is not base64: %w", engine.ErrUnavailable)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user == "" || pass == "" {
		return "", "", "", fmt.Errorf("ECR answered a token that is not USER:PASSWORD: %w", engine.ErrUnavailable)
	}
	return u.Host, user, pass, nil
}

// Renew is refused: an ECR token cannot be renewed (the controller never
// asks, since its lease is not renewable).
func (r *RegistryTokens) Renew(context.Context, string, time.Duration) (engine.Lease, error) {
	return engine.Lease{}, fmt.Errorf("an ECR token cannot be renewed: %w", engine.ErrNotFound)
}

// Revoke does nothing: an ECR token cannot be revoked, it expires.
func (r *RegistryTokens) Revoke(context.Context, string) error { return nil }
