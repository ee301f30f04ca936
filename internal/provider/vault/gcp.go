package vault

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// gcpJWTLifetime is how long a login JWT is good for: Vault's gcp auth
// method refuses one that expires more than 15 minutes from now (and a
// role may ask for less, with max_jwt_exp).
const gcpJWTLifetime = 5 * time.Minute

// gcpLogin logs in through the iam type of Vault's gcp auth method: a JWT
// for the service account, with the audience vault/<role>, signed with the
// account's key from the Secret (the key never reaches Vault, which
// fetches the key's public certificate from Google). Each login signs a
// new JWT.
func gcpLogin(ctx context.Context, a *v1alpha1.VaultGCPAuth, deps provider.Deps) (*login, error) {
	raw, err := deps.SecretValue(ctx, a.SecretRef.SecretAccessKeySecretRef)
	if err != nil {
		return nil, err
	}
	email, signer, err := gcpKeySigner(raw)
	if err != nil {
		return nil, err
	}
	return &login{method: "GCP", mount: orDefault(a.Path, "gcp"),
		as: fmt.Sprintf("service account %q with role %q", email, a.Role),
		body: func(context.Context) (map[string]any, error) {
			now := time.Now()
			tok, err := jwt.Signed(signer).Claims(jwt.Claims{Subject: email, Audience: jwt.Audience{"vault/" + a.Role},
				IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(gcpJWTLifetime))}).Serialize()
			if err != nil {
				return nil, fmt.Errorf("signing the JWT of Vault's GCP login: %w", err)
			}
			return map[string]any{"role": a.Role, "jwt": tok}, nil
		}}, nil
}

// gcpKeySigner reads a service account's JSON key file: its email and an
// RS256 signer that names the key. Errors name no part of the key.
func gcpKeySigner(raw []byte) (string, jose.Signer, error) {
	const what = "vault.auth.gcp.secretRef.secretAccessKeySecretRef"
	var key struct {
		Type         string `json:"type"`
		PrivateKeyID string `json:"private_key_id"`
		PrivateKey   string `json:"private_key"`
		ClientEmail  string `json:"client_email"`
	}
	if json.Unmarshal(raw, &key) != nil || key.Type != "service_account" || key.ClientEmail == "" || key.PrivateKeyID == "" {
		return "", nil, fmt.Errorf("%w: %s does not hold a service account's JSON key file (type service_account, with client_email and private_key_id)", engine.ErrInvalidConfig, what)
	}
	block, _ := pem.Decode([]byte(key.PrivateKey))
	if block == nil {
		return "", nil, fmt.Errorf("%w: the private_key of the key file in %s is not PEM", engine.ErrInvalidConfig, what)
	}
	var pk crypto.Signer
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		pk, _ = k.(crypto.Signer)
	} else if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		pk = k
	}
	if pk == nil {
		return "", nil, fmt.Errorf("%w: the private_key of the key file in %s is not an RSA key", engine.ErrInvalidConfig, what)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: pk},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.PrivateKeyID))
	if err != nil {
		return "", nil, fmt.Errorf("%w: the key file in %s cannot sign RS256: %v", engine.ErrInvalidConfig, what, err)
	}
	return key.ClientEmail, signer, nil
}
