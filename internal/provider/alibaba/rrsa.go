package alibaba

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"
	credential "github.com/aliyun/credentials-go/credentials"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// DefaultAudience is the audience of the service-account token that RRSA
// exchanges, as Alibaba Cloud's RRSA expects by default.
const DefaultAudience = "sts.aliyuncs.com"

// refreshBefore is how long before their expiry the role's credentials
// are renewed.
const refreshBefore = 5 * time.Minute

// rrsaCredential is a credential of the SDK that holds the temporary
// credentials of a RAM role, obtained with AssumeRoleWithOIDC for a token
// of a Kubernetes service account and renewed before they expire.
//
// The official STS SDK (sts-20150401) is not served by the Go module
// proxy here, so the call goes through the generic RPC client of the
// same SDK core (darabonba-openapi's CallApi) with STS's action, version
// and parameters; the request is built, sent and its errors parsed by
// that client, not by hand. (The SDK's own OIDC provider in credentials-go
// reads the token from a file, and Watchword requests its tokens instead.)
type rrsaCredential struct {
	sts  *openapi.Client
	lock *sync.Mutex
	deps provider.Deps
	spec v1alpha1.AlibabaRRSA
	sa   v1alpha1.ServiceAccountSelector
	name string // the role session's name
	who  string

	mu      sync.Mutex
	model   *credential.CredentialModel
	expires time.Time
}

var _ credential.Credential = (*rrsaCredential)(nil)

func newRRSA(store provider.Store, deps provider.Deps) (*rrsaCredential, string, error) {
	spec := store.Spec.Alibaba
	r := spec.Auth.RRSA
	host := "sts." + spec.RegionID + ".aliyuncs.com"
	cfg := &openapi.Config{RegionId: tea.String(spec.RegionID), Endpoint: tea.String(host)}
	if spec.STSEndpoint != "" {
		protocol, h, err := endpoint(spec.STSEndpoint, "alibaba.stsEndpoint")
		if err != nil {
			return nil, "", err
		}
		cfg.Protocol, cfg.Endpoint = tea.String(protocol), tea.String(h)
		host = h
	}
	sts, err := openapi.NewClient(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("%w: alibaba.auth.rrsa: the STS client cannot be built", engine.ErrInvalidConfig)
	}
	sa := r.ServiceAccountRef
	if len(sa.Audiences) == 0 {
		sa.Audiences = []string{DefaultAudience}
	}
	name := r.SessionName
	if name == "" {
		name = "watchword-" + store.Namespace + "-" + store.Name
		if store.Namespace == "" {
			name = "watchword-" + store.Name
		}
		name = strings.Map(func(c rune) rune {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c) {
				return c
			}
			return '-'
		}, name)
		name = name[:min(len(name), 64)]
	}
	who := fmt.Sprintf("RAM role %q through Kubernetes service account %q", r.RoleARN, store.NamespaceOf(sa.Namespace)+"/"+sa.Name)
	return &rrsaCredential{sts: sts, lock: lockFor(host, stsConnectMS, stsReadMS), deps: deps, spec: *r, sa: sa, name: name, who: who}, who, nil
}

// stsError is a refusal of the token exchange, already classified.
type stsError struct{ err error }

func (e *stsError) Error() string { return e.err.Error() }
func (e *stsError) Unwrap() error { return e.err }

// GetCredential returns the role's credentials, assuming the role again
// when they are missing or about to expire.
func (c *rrsaCredential) GetCredential() (*credential.CredentialModel, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.model != nil && time.Until(c.expires) > refreshBefore {
		return c.model, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), engine.CallTimeout)
	defer cancel()
	token, _, err := c.deps.ServiceAccountToken(ctx, c.sa)
	if err != nil {
		return nil, &stsError{fmt.Errorf("requesting a token of Kubernetes service account %q for RRSA: %w", c.sa.Name, err)}
	}
	resp, err := call(ctx, c.lock, stsConnectMS, stsReadMS, func(rt *util.RuntimeOptions) (map[string]any, error) {
		return c.sts.CallApi(&openapi.Params{
			Action: tea.String("AssumeRoleWithOIDC"), Version: tea.String("2015-04-01"), Protocol: tea.String("HTTPS"),
			Pathname: tea.String("/"), Method: tea.String("POST"), AuthType: tea.String("Anonymous"), Style: tea.String("RPC"),
			ReqBodyType: tea.String("formData"), BodyType: tea.String("json"),
		}, &openapi.OpenApiRequest{Body: map[string]any{
			"RoleArn":         c.spec.RoleARN,
			"OIDCProviderArn": c.spec.OIDCProviderARN,
			"OIDCToken":       token,
			"RoleSessionName": c.name,
		}}, rt)
	})
	if err != nil {
		return nil, &stsError{c.classify(err)}
	}
	body, _ := resp["body"].(map[string]any)
	creds, _ := body["Credentials"].(map[string]any)
	id, _ := creds["AccessKeyId"].(string)
	secret, _ := creds["AccessKeySecret"].(string)
	sessionToken, _ := creds["SecurityToken"].(string)
	expiration, _ := creds["Expiration"].(string)
	expires, perr := time.Parse(time.RFC3339, expiration)
	if id == "" || secret == "" || sessionToken == "" || perr != nil {
		return nil, &stsError{fmt.Errorf("assuming %s: STS answered without complete credentials: %w", c.who, engine.ErrUnavailable)}
	}
	c.model = &credential.CredentialModel{AccessKeyId: tea.String(id), AccessKeySecret: tea.String(secret),
		SecurityToken: tea.String(sessionToken), Type: tea.String("sts")}
	c.expires = expires
	return c.model, nil
}

// classify maps a refusal of AssumeRoleWithOIDC: the token, the OIDC
// provider or the role's trust policy are refused credentials.
func (c *rrsaCredential) classify(err error) error {
	var sdk *tea.SDKError
	if !errors.As(err, &sdk) || sdk.Code == nil || tea.IntValue(sdk.StatusCode) == 0 {
		return fmt.Errorf("assuming %s: the call to STS failed: %w", c.who, engine.ErrUnavailable)
	}
	code := tea.StringValue(sdk.Code)
	switch {
	case strings.HasPrefix(code, "Throttling"):
		return fmt.Errorf("assuming %s: STS throttled the call (%s): %w", c.who, code, engine.ErrThrottled)
	case tea.IntValue(sdk.StatusCode) >= 500:
		return fmt.Errorf("assuming %s: STS answered %s: %w", c.who, code, engine.ErrUnavailable)
	}
	return fmt.Errorf("assuming %s: STS refused AssumeRoleWithOIDC (%s): check the role's trust policy, the OIDC provider and the token's audience: %w", c.who, code, engine.ErrUnauthenticated)
}

// The getters of the SDK's Credential interface; the SDK itself calls
// GetCredential.

func (c *rrsaCredential) GetAccessKeyId() (*string, error) { //nolint:revive // the SDK's name
	m, err := c.GetCredential()
	if err != nil {
		return nil, err
	}
	return m.AccessKeyId, nil
}

func (c *rrsaCredential) GetAccessKeySecret() (*string, error) {
	m, err := c.GetCredential()
	if err != nil {
		return nil, err
	}
	return m.AccessKeySecret, nil
}

func (c *rrsaCredential) GetSecurityToken() (*string, error) {
	m, err := c.GetCredential()
	if err != nil {
		return nil, err
	}
	return m.SecurityToken, nil
}

func (c *rrsaCredential) GetBearerToken() *string { return tea.String("") }

func (c *rrsaCredential) GetType() *string { return tea.String("sts") }
