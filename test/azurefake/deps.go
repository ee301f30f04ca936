package azurefake

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// Deps is a provider.Deps for tests of the Key Vault provider: Secret keys
// from a map (changeable, as a rotated Secret is) and service-account
// tokens signed by an Issuer that stands in for the cluster's.
type Deps struct {
	mu      sync.Mutex
	secrets map[string][]byte
	// Issuer signs the service-account tokens; nil refuses them.
	Issuer *Issuer
	// Namespace of the store, for the token's subject.
	Namespace string
	// TokenRequests counts the tokens requested.
	TokenRequests int
}

// SetSecret sets the value of key of Secret name.
func (d *Deps) SetSecret(name, key string, value []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.secrets == nil {
		d.secrets = map[string][]byte{}
	}
	d.secrets[name+"/"+key] = value
}

// SecretValue is provider.Deps.
func (d *Deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.secrets[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %q has no key %q: %w", sel.Name, sel.Key, engine.ErrInvalidConfig)
	}
	return v, nil
}

// ConfigMapValue is provider.Deps; the Key Vault provider names no
// ConfigMap.
func (d *Deps) ConfigMapValue(context.Context, string, string, string) ([]byte, error) {
	return nil, fmt.Errorf("no ConfigMaps here: %w", engine.ErrInvalidConfig)
}

// ServiceAccountToken is provider.Deps: a token of the Issuer with the
// subject system:serviceaccount:<namespace>:<name>.
func (d *Deps) ServiceAccountToken(_ context.Context, sel v1alpha1.ServiceAccountSelector) (string, int64, error) {
	d.mu.Lock()
	d.TokenRequests++
	d.mu.Unlock()
	if d.Issuer == nil {
		return "", 0, fmt.Errorf("no tokens here: %w", engine.ErrPermissionDenied)
	}
	ns := sel.Namespace
	if ns == "" {
		ns = d.Namespace
	}
	tok, err := d.Issuer.Token("system:serviceaccount:"+ns+":"+sel.Name, sel.Audiences)
	return tok, 3600, err
}

// LocalConfig is provider.Deps.
func (d *Deps) LocalConfig() *rest.Config { return &rest.Config{} }

// Issuer signs JWTs as a cluster's service-account issuer would, and
// verifies them for the fake's token endpoint (Verify fits
// Server.VerifyAssertion).
type Issuer struct {
	key *ecdsa.PrivateKey
}

// NewIssuer makes an issuer with a fresh key.
func NewIssuer() *Issuer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return &Issuer{key: k}
}

const issuerURL = "https://kubernetes.default.svc.cluster.local"

// Token signs a token for subject with audiences, valid for an hour.
func (i *Issuer) Token(subject string, audiences []string) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	return jwt.Signed(sig).Claims(jwt.Claims{Issuer: issuerURL, Subject: subject, Audience: audiences,
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
}

// Verify checks a token's signature, issuer and lifetime and returns its
// subject and audiences.
func (i *Issuer) Verify(_ context.Context, token string) (string, []string, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return "", nil, err
	}
	var c jwt.Claims
	if err := parsed.Claims(&i.key.PublicKey, &c); err != nil {
		return "", nil, err
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: issuerURL, Time: time.Now()}, time.Minute); err != nil {
		return "", nil, err
	}
	return c.Subject, c.Audience, nil
}
