package vault

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
)

// The login bodies below follow the HTTP API of each auth method (Vault's
// API documentation): they are a few JSON fields each, which the
// provider's own transport posts like every other request, so Vault's Go
// client and its auth modules are not needed (the aws one would bring the
// AWS SDK v1 besides the v2 that the AWS providers use).

// passwordLogin logs in with a user name and a password read from a
// Secret, as the userpass and LDAP auth methods take them: the user name
// is the last segment of the login path.
func passwordLogin(ctx context.Context, method, defMount string, a *v1alpha1.VaultPasswordAuth, deps provider.Deps) (*login, error) {
	pw, err := deps.SecretValue(ctx, a.SecretRef)
	if err != nil {
		return nil, err
	}
	password := strings.TrimRight(string(pw), "\r\n")
	return &login{method: method, mount: orDefault(a.Path, defMount), endpoint: "login/" + url.PathEscape(a.Username),
		as: fmt.Sprintf("user %q", a.Username),
		body: func(context.Context) (map[string]any, error) {
			return map[string]any{"password": password}, nil
		}}, nil
}

// certLogin logs in with the TLS client certificate that the transport
// presents (see clientCertificate): the body names only the role.
func certLogin(a *v1alpha1.VaultCertAuth, certPEM []byte) *login {
	as := "the client certificate"
	if cn := commonName(certPEM); cn != "" {
		as = fmt.Sprintf("client certificate %q", cn)
	}
	if a.Name != "" {
		as += fmt.Sprintf(" with role %q", a.Name)
	}
	body := map[string]any{}
	if a.Name != "" {
		body["name"] = a.Name
	}
	return &login{method: "TLS certificate", mount: orDefault(a.Path, "cert"), as: as,
		body: func(context.Context) (map[string]any, error) { return body, nil }}
}

// commonName is the subject common name of the first certificate of a PEM
// bundle, or "".
func commonName(certPEM []byte) string {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return ""
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return ""
	}
	return c.Subject.CommonName
}

// iamServerIDHeader is the header that binds a signed request to one Vault
// server (the aws auth method's iam_server_id_header_value).
const iamServerIDHeader = "X-Vault-AWS-IAM-Server-ID"

// getCallerIdentity is the body of the signed STS request, the only one
// Vault's aws auth method accepts.
const getCallerIdentity = "Action=GetCallerIdentity&Version=2011-06-15"

// iamBlock is the AWS block of an IAM login: the credentials and the role
// to assume, as the awssm block takes them.
func iamBlock(a *v1alpha1.VaultIAMAuth) *v1alpha1.AWSProvider {
	return &v1alpha1.AWSProvider{Auth: a.Auth, Role: a.Role, ExternalID: a.ExternalID,
		Region: orDefault(a.Region, "us-east-1"), STSEndpoint: a.STSEndpoint}
}

const iamBlockName = "vault.auth.iam"

// iamLogin logs in through the IAM flavour of Vault's aws auth method: it
// signs an sts:GetCallerIdentity request with the AWS credentials (SigV4,
// the SDK's signer) and hands the request to Vault, which sends it to STS
// and learns who signed it. The credentials never reach Vault; the
// signature is good for a few minutes, so each login signs anew.
func iamLogin(ctx context.Context, store provider.Store, deps provider.Deps) (*login, error) {
	a := store.Spec.Vault.Auth.IAM
	block := iamBlock(a)
	sess, err := awsbase.NewBlockSession(ctx, store, iamBlockName, block, deps, nil)
	if err != nil {
		return nil, err
	}
	endpoint, err := stsURL(a.STSEndpoint)
	if err != nil {
		return nil, err
	}
	signer := v4.NewSigner()
	return &login{method: "AWS IAM", mount: orDefault(a.Path, "aws"),
		as: fmt.Sprintf("%s with role %q", sess.Who, a.VaultRole),
		body: func(ctx context.Context) (map[string]any, error) {
			creds, err := sess.Config.Credentials.Retrieve(ctx)
			if err != nil {
				return nil, sess.Classify(fmt.Sprintf("obtaining the AWS credentials of %s for Vault's AWS IAM login", sess.Who), err)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(getCallerIdentity))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			if a.IAMServerID != "" {
				req.Header.Set(iamServerIDHeader, a.IAMServerID)
			}
			sum := sha256.Sum256([]byte(getCallerIdentity))
			if serr := signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sts", block.Region, time.Now()); serr != nil {
				return nil, fmt.Errorf("signing the sts:GetCallerIdentity request for Vault's AWS IAM login: %w", serr)
			}
			headers, err := json.Marshal(req.Header)
			if err != nil {
				return nil, err
			}
			enc := base64.StdEncoding.EncodeToString
			return map[string]any{
				"role":                    a.VaultRole,
				"iam_http_request_method": http.MethodPost,
				"iam_request_url":         enc([]byte(endpoint)),
				"iam_request_body":        enc([]byte(getCallerIdentity)),
				"iam_request_headers":     enc(headers),
			}, nil
		}}, nil
}

// globalSTS is the STS address that a login names unless stsEndpoint says
// otherwise: AWS's global endpoint, which is also where Vault's aws auth
// method sends the request unless its sts_endpoint says otherwise.
const globalSTS = "https://sts.amazonaws.com/"

// stsURL is the STS address the signed request names: stsEndpoint, or
// the global endpoint.
func stsURL(override string) (string, error) {
	if override == "" {
		return globalSTS, nil
	}
	u, err := url.Parse(override)
	if err != nil || u.Host == "" || u.RawQuery != "" {
		return "", fmt.Errorf("%w: %s.stsEndpoint %q is not an https address without a query", engine.ErrInvalidConfig, iamBlockName, override)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}
