// Package awsbase is what the AWS providers (awssm, awsps) share: the
// validation and references of their block, the credentials (static keys,
// web identity of a service account, a chained role, the controller's own),
// the SDK configuration (region, endpoints, retries) and the mapping of AWS
// errors to the engine's classes.
package awsbase

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// STSAudience is the audience of a service-account token exchanged with
// AssumeRoleWithWebIdentity, unless the selector names others.
const STSAudience = "sts.amazonaws.com"

// OwnerTag is the resource tag that marks a secret or parameter as written
// by a Watchword owner; its value is engine.Owner.ID.
const OwnerTag = "watchword.io/owner"

// Retries: the SDK's standard retryer, bounded so that a throttled store is
// not hammered and a call ends well within engine.CallTimeout. Throttling
// errors that remain after these attempts reach the engine as ErrThrottled
// and are retried by the work queue with backoff.
const (
	MaxAttempts = 4
	MaxBackoff  = 5 * time.Second
)

// Block is the block of the store (awssm or awsps) with its JSON name.
func Block(store provider.Store) (string, *v1alpha1.AWSProvider) {
	if store.Spec.AWSPS != nil {
		return "awsps", store.Spec.AWSPS
	}
	return "awssm", store.Spec.AWSSM
}

// Validate checks what CEL cannot: the controller's own credentials only
// on a ClusterSecretStore, and one way of authenticating.
func Validate(store provider.Store) error {
	name, b := Block(store)
	return ValidateBlock(store, name, b)
}

// ValidateBlock is Validate for a block named name, which may sit
// elsewhere than the store's awssm or awsps (the Vault provider's IAM
// login carries one).
func ValidateBlock(store provider.Store, name string, b *v1alpha1.AWSProvider) error {
	if b == nil {
		return fmt.Errorf("%w: the store has no AWS provider block", engine.ErrInvalidConfig)
	}
	if strings.TrimSpace(b.Region) == "" {
		return fmt.Errorf("%w: %s.region is required, such as eu-central-1", engine.ErrInvalidConfig, name)
	}
	a := b.Auth
	if a == nil {
		return fmt.Errorf("%w: %s.auth must set secretRef, jwt or (on a ClusterSecretStore) controllerCredentials: Watchword uses no credentials it is not given", engine.ErrInvalidConfig, name)
	}
	n := 0
	for _, set := range []bool{a.SecretRef != nil, a.JWT != nil, a.ControllerCredentials} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: %s.auth must set exactly one of secretRef, jwt and controllerCredentials", engine.ErrInvalidConfig, name)
	}
	if a.ControllerCredentials && !store.Cluster() {
		return fmt.Errorf("%w: %s.auth.controllerCredentials lends the controller's own AWS identity, so only a ClusterSecretStore (an administrator's choice) may set it; use secretRef or jwt in a SecretStore", engine.ErrInvalidConfig, name)
	}
	if b.Endpoint != "" && (b.FIPS || b.DualStack) {
		return fmt.Errorf("%w: %s.endpoint names the endpoint itself, so it cannot be combined with %s.fips or %s.dualStack: use an endpoint URL that is FIPS or dual-stack", engine.ErrInvalidConfig, name, name, name)
	}
	if (b.ExternalID != "" || len(b.SessionTags) > 0) && b.Role == "" {
		return fmt.Errorf("%w: %s.externalID and %s.sessionTags are passed when a role is assumed: set %s.role", engine.ErrInvalidConfig, name, name, name)
	}
	return nil
}

// Refs names the Secret keys of static keys and the service account of
// web identity.
func Refs(store provider.Store) []provider.ObjectRef {
	name, b := Block(store)
	return BlockRefs(name, b)
}

// BlockRefs is Refs for a block named name.
func BlockRefs(name string, b *v1alpha1.AWSProvider) []provider.ObjectRef {
	if b == nil || b.Auth == nil {
		return nil
	}
	var out []provider.ObjectRef
	if s := b.Auth.SecretRef; s != nil {
		out = append(out,
			provider.SecretKeyRef(name+".auth.secretRef.accessKeyID", s.AccessKeyID),
			provider.SecretKeyRef(name+".auth.secretRef.secretAccessKey", s.SecretAccessKey))
		if s.SessionToken != nil {
			out = append(out, provider.SecretKeyRef(name+".auth.secretRef.sessionToken", *s.SessionToken))
		}
	}
	if j := b.Auth.JWT; j != nil {
		out = append(out, provider.ServiceAccountRef(name+".auth.jwt.serviceAccountRef", j.ServiceAccountRef))
	}
	return out
}

// Session is what a service client is built from: the SDK configuration
// with credentials, and a description of the identity for messages.
type Session struct {
	Config aws.Config
	// Block is the JSON name of the store's block (awssm, awsps).
	Block string
	// Who describes the identity Watchword acts as, without a credential:
	// "access key AKIA… " or "service account ns/sa as role …".
	Who string
	// Endpoint is the block's endpoint override, or "".
	Endpoint        string
	FIPS, DualStack bool
	KMSKeyID        string

	// sts checks the credentials; stsHost is the host its calls go to,
	// and stsOwn tells that it is AWS's own STS although the block names
	// an endpoint (of the store's service) without an stsEndpoint.
	sts     *sts.Client
	stsHost string
	stsOwn  bool
}

// NewSession reads the store's credentials and builds the SDK
// configuration. It does not call AWS: credentials are obtained (and
// cached and refreshed before they expire, by the SDK) on the first call.
// httpClient may be nil.
func NewSession(ctx context.Context, store provider.Store, deps provider.Deps, httpClient aws.HTTPClient) (*Session, error) {
	name, b := Block(store)
	return NewBlockSession(ctx, store, name, b, deps, httpClient)
}

// NewBlockSession is NewSession for a block named name (see
// ValidateBlock).
func NewBlockSession(ctx context.Context, store provider.Store, name string, b *v1alpha1.AWSProvider, deps provider.Deps, httpClient aws.HTTPClient) (*Session, error) {
	if err := ValidateBlock(store, name, b); err != nil {
		return nil, err
	}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.MaxBackoff = MaxAttempts, MaxBackoff
		})
	}
	cfg := aws.Config{Region: b.Region, Retryer: retryer, RetryMaxAttempts: MaxAttempts}
	if httpClient != nil {
		cfg.HTTPClient = httpClient
	}
	s := &Session{Block: name, Endpoint: b.Endpoint, FIPS: b.FIPS, DualStack: b.DualStack, KMSKeyID: b.KMSKeyID}
	a := b.Auth
	switch {
	case a.SecretRef != nil:
		id, err := deps.SecretValue(ctx, a.SecretRef.AccessKeyID)
		if err != nil {
			return nil, err
		}
		secret, err := deps.SecretValue(ctx, a.SecretRef.SecretAccessKey)
		if err != nil {
			return nil, err
		}
		var token []byte
		if a.SecretRef.SessionToken != nil {
			if token, err = deps.SecretValue(ctx, *a.SecretRef.SessionToken); err != nil {
				return nil, err
			}
		}
		keyID := strings.TrimSpace(string(id))
		cfg.Credentials = credentials.NewStaticCredentialsProvider(keyID, strings.TrimSpace(string(secret)), strings.TrimSpace(string(token)))
		// An access key ID is an identifier, not a credential: AWS shows it
		// in its own refusals.
		s.Who = fmt.Sprintf("access key %q from %s.auth.secretRef", keyID, name)
	case a.JWT != nil:
		sa := a.JWT.ServiceAccountRef
		if len(sa.Audiences) == 0 {
			sa.Audiences = []string{STSAudience}
		}
		stsClient := s.stsClient(cfg, b)
		tokens := &saToken{deps: deps, sa: sa}
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewWebIdentityRoleProvider(stsClient, a.JWT.RoleARN, tokens, func(o *stscreds.WebIdentityRoleOptions) {
			o.RoleSessionName = sessionName(store)
		}), refreshEarly)
		s.Who = fmt.Sprintf("service account %q as role %q (web identity)", store.NamespaceOf(sa.Namespace)+"/"+sa.Name, a.JWT.RoleARN)
	case a.ControllerCredentials:
		def, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(b.Region))
		if err != nil {
			return nil, fmt.Errorf("%w: loading the controller's own AWS credentials: %v", engine.ErrInvalidConfig, err)
		}
		cfg.Credentials = def.Credentials
		s.Who = "the controller's own credentials"
	}
	if b.Role != "" {
		stsClient := s.stsClient(cfg, b)
		var tags []ststypes.Tag
		for _, t := range b.SessionTags {
			tags = append(tags, ststypes.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
		}
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, b.Role, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = sessionName(store)
			if b.ExternalID != "" {
				o.ExternalID = aws.String(b.ExternalID)
			}
			o.Tags = tags
		}), refreshEarly)
		s.Who = fmt.Sprintf("role %q assumed by %s", b.Role, s.Who)
	}
	s.Config = cfg
	s.sts = s.stsClient(cfg, b)
	s.stsHost = s.resolveSTSHost(ctx, b)
	s.stsOwn = b.Endpoint != "" && b.STSEndpoint == ""
	return s, nil
}

// Check verifies the credentials with STS GetCallerIdentity, which every
// identity may call whatever its policies: a reader allowed only
// GetSecretValue on a few ARNs is not refused by its store's check. Its
// error names the STS host it asked, and says so when that is AWS's own
// STS although the block names an endpoint: the endpoint serves the
// store's service, not STS.
func (s *Session) Check(ctx context.Context) error {
	_, err := s.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("checking the AWS credentials of %s with sts:GetCallerIdentity at %s", s.Who, s.stsHost)
	if s.stsOwn {
		what += fmt.Sprintf(" (AWS's own STS of the region: %s.endpoint is not used for STS, and %s.stsEndpoint is not set; set it to the STS that goes with the endpoint)", s.Block, s.Block)
	}
	return s.Classify(what, err)
}

// resolveSTSHost is the host of the STS calls: the block's stsEndpoint,
// or the one the SDK resolves for the region (with FIPS and dual-stack).
func (s *Session) resolveSTSHost(ctx context.Context, b *v1alpha1.AWSProvider) string {
	params := sts.EndpointParameters{Region: aws.String(b.Region), UseFIPS: aws.Bool(s.FIPS), UseDualStack: aws.Bool(s.DualStack)}
	if b.STSEndpoint != "" {
		params.Endpoint = aws.String(b.STSEndpoint)
	}
	ep, err := sts.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, params)
	if err != nil || ep.URI.Host == "" {
		if u, perr := url.Parse(b.STSEndpoint); perr == nil && u.Host != "" {
			return u.Host
		}
		return "the STS of region " + b.Region
	}
	return ep.URI.Host
}

// stsClient is an STS client with the credentials of cfg so far.
func (s *Session) stsClient(cfg aws.Config, b *v1alpha1.AWSProvider) *sts.Client {
	return sts.NewFromConfig(cfg, func(o *sts.Options) {
		if b.STSEndpoint != "" {
			o.BaseEndpoint = aws.String(b.STSEndpoint)
		}
		s.endpointOptions(&o.EndpointOptions.UseFIPSEndpoint, &o.EndpointOptions.UseDualStackEndpoint)
	})
}

// EndpointOptions applies the FIPS and dual-stack settings to a service's
// endpoint options.
func (s *Session) EndpointOptions(fips *aws.FIPSEndpointState, dual *aws.DualStackEndpointState) {
	s.endpointOptions(fips, dual)
}

func (s *Session) endpointOptions(fips *aws.FIPSEndpointState, dual *aws.DualStackEndpointState) {
	if s.FIPS {
		*fips = aws.FIPSEndpointStateEnabled
	}
	if s.DualStack {
		*dual = aws.DualStackEndpointStateEnabled
	}
}

// BaseEndpoint is the endpoint override as the SDK takes it, or nil.
func (s *Session) BaseEndpoint() *string {
	if s.Endpoint == "" {
		return nil
	}
	return aws.String(s.Endpoint)
}

// sessionName names the role session after the store, so that CloudTrail
// tells which store acted: at most 64 of [\w+=,.@-].
func sessionName(store provider.Store) string {
	n := "watchword-" + store.Name
	if store.Namespace != "" {
		n = "watchword-" + store.Namespace + "." + store.Name
	}
	var b strings.Builder
	for _, c := range n {
		if c == '-' || c == '.' || c == '_' || c == '@' || c == '=' || c == ',' || c == '+' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		}
	}
	out := b.String()
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}

// saToken requests a service-account token through the API server's
// TokenRequest each time the SDK needs a new web identity token.
type saToken struct {
	deps provider.Deps
	sa   v1alpha1.ServiceAccountSelector
}

// GetIdentityToken is stscreds.IdentityTokenRetriever. The SDK's interface
// takes no context, so the request gets its own deadline.
func (t *saToken) GetIdentityToken() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, _, err := t.deps.ServiceAccountToken(ctx, t.sa)
	if err != nil {
		return nil, err
	}
	return []byte(tok), nil
}

// refreshEarly has the SDK's cache obtain new temporary credentials five
// minutes before the old ones expire, so that no call waits for them.
func refreshEarly(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute }
