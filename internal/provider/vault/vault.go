// Package vault is a provider for the KV secrets engines (v1 and v2) of
// HashiCorp Vault, and of OpenBao, which speaks the same HTTP API. It reads
// secrets, reports KV v2 versions, reads metadata alone to check for
// changes, and writes and deletes secrets it owns (for publishing).
package vault

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
)

// Factory builds Vault clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks what needs no I/O. The namespace rules of the objects
// the store names are checked by the registry, from Refs.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Vault
	if spec == nil {
		return fmt.Errorf("%w: the store has no vault block", engine.ErrInvalidConfig)
	}
	a := spec.Auth
	if a.Cert != nil && spec.TLS != nil {
		return fmt.Errorf("%w: vault.auth.cert presents its own client certificate on every connection: drop vault.tls", engine.ErrInvalidConfig)
	}
	if a.Cert != nil && !strings.HasPrefix(spec.Server, "https://") {
		return fmt.Errorf("%w: vault.auth.cert needs an https:// vault.server: the certificate is presented in the TLS handshake", engine.ErrInvalidConfig)
	}
	if a.IAM != nil {
		return awsbase.ValidateBlock(store, iamBlockName, iamBlock(a.IAM))
	}
	return nil
}

// Refs names the CA, the client certificate and every credential of every
// auth method set in the block.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Vault
	var out []provider.ObjectRef
	if spec.CAProvider != nil {
		out = append(out, provider.CAProviderRef("vault.caProvider", *spec.CAProvider))
	}
	if spec.TLS != nil {
		out = append(out,
			provider.SecretKeyRef("vault.tls.certSecretRef", spec.TLS.CertSecretRef),
			provider.SecretKeyRef("vault.tls.keySecretRef", spec.TLS.KeySecretRef))
	}
	a := spec.Auth
	if a.TokenSecretRef != nil {
		out = append(out, provider.SecretKeyRef("vault.auth.tokenSecretRef", *a.TokenSecretRef))
	}
	if a.AppRole != nil {
		if a.AppRole.RoleRef != nil {
			out = append(out, provider.SecretKeyRef("vault.auth.appRole.roleRef", *a.AppRole.RoleRef))
		}
		out = append(out, provider.SecretKeyRef("vault.auth.appRole.secretRef", a.AppRole.SecretRef))
	}
	if a.Kubernetes != nil {
		out = append(out, provider.ServiceAccountRef("vault.auth.kubernetes.serviceAccountRef", a.Kubernetes.ServiceAccountRef))
	}
	if a.JWT != nil {
		out = append(out, provider.ServiceAccountRef("vault.auth.jwt.serviceAccountRef", a.JWT.ServiceAccountRef))
	}
	if a.UserPass != nil {
		out = append(out, provider.SecretKeyRef("vault.auth.userPass.secretRef", a.UserPass.SecretRef))
	}
	if a.LDAP != nil {
		out = append(out, provider.SecretKeyRef("vault.auth.ldap.secretRef", a.LDAP.SecretRef))
	}
	if a.Cert != nil {
		out = append(out,
			provider.SecretKeyRef("vault.auth.cert.clientCert", a.Cert.ClientCert),
			provider.SecretKeyRef("vault.auth.cert.clientKey", a.Cert.ClientKey))
	}
	if a.IAM != nil {
		out = append(out, awsbase.BlockRefs(iamBlockName, iamBlock(a.IAM))...)
	}
	if a.GCP != nil {
		out = append(out, provider.SecretKeyRef("vault.auth.gcp.secretRef.secretAccessKeySecretRef", a.GCP.SecretRef.SecretAccessKeySecretRef))
	}
	return out
}

// New builds a client: it reads the CA and credentials, and detects the KV
// version when the spec does not declare it. It does not log in yet: the
// first request does. Every mount can be read, listed and checked; a KV
// v2 mount also tells versions, keeps custom metadata and can be written,
// a KV v1 mount cannot.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	c, err := f.client(ctx, store, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	return c.ops(), nil
}

func (c *Client) ops() engine.Ops {
	ops := engine.Ops{Reader: c, Checker: c, Closer: c, Lister: c, Leaser: c}
	if c.version == "2" {
		ops.Versions, ops.Writer, ops.Metadata = c, c, c
	}
	// A scope is a parent path under the mount: the secrets of publishers
	// of namespace "team-a" live under <mount>/team-a/.
	scoped := ops
	ops.Scope = func(scope string) (engine.Ops, error) {
		return engine.PrefixKeys(scoped, scope+"/"), nil
	}
	return ops
}

func (f Factory) client(ctx context.Context, store provider.Store, deps provider.Deps) (*Client, error) {
	if err := f.Validate(store); err != nil {
		return nil, err
	}
	spec := store.Spec.Vault
	ca := spec.CABundle
	if p := spec.CAProvider; p != nil {
		var err error
		if p.Type == "ConfigMap" {
			ca, err = deps.ConfigMapValue(ctx, p.Namespace, p.Name, p.Key)
		} else {
			ca, err = deps.SecretValue(ctx, v1alpha1.SecretKeySelector{Name: p.Name, Key: p.Key, Namespace: p.Namespace})
		}
		if err != nil {
			return nil, err
		}
	}
	cert, key, err := clientCertificate(ctx, spec, deps)
	if err != nil {
		return nil, err
	}
	t, err := newHTTPTransport(spec.Server, spec.Namespace, ca, cert, key)
	if err != nil {
		return nil, err
	}
	sess, err := newSession(ctx, t, store, deps, cert)
	if err != nil {
		return nil, err
	}
	return newClient(ctx, t, sess, spec.Path, string(spec.Version))
}

func newClient(ctx context.Context, t transport, sess *session, mount, version string) (*Client, error) {
	mount = strings.Trim(mount, "/")
	if mount == "" {
		mount = "secret"
	}
	c := &Client{t: t, session: sess, mount: mount, version: strings.TrimPrefix(version, "v")}
	if c.version == "" {
		v, err := c.detectVersion(ctx)
		if err != nil {
			return nil, err
		}
		c.version = v
	}
	return c, nil
}

// detectVersion asks Vault what the mount is.
func (c *Client) detectVersion(ctx context.Context) (string, error) {
	var out struct {
		Data struct {
			Type    string            `json:"type"`
			Options map[string]string `json:"options"`
		} `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "sys/internal/ui/mounts/"+c.mount, nil, nil, &out); err != nil {
		return "", fmt.Errorf("detecting the KV version of mount %q (set vault.version to skip this): %w", c.mount, classify("mount "+c.mount, err))
	}
	if out.Data.Type != "kv" && out.Data.Type != "generic" {
		return "", fmt.Errorf("%w: mount %q is a %q engine, not kv", engine.ErrInvalidConfig, c.mount, out.Data.Type)
	}
	if out.Data.Options["version"] == "2" {
		return "2", nil
	}
	return "1", nil
}

// clientCertificate reads the client certificate that every connection
// presents: that of the cert auth method, or of vault.tls (Validate keeps
// them apart).
func clientCertificate(ctx context.Context, spec *v1alpha1.VaultProvider, deps provider.Deps) (cert, key []byte, err error) {
	var certRef, keyRef v1alpha1.SecretKeySelector
	switch {
	case spec.Auth.Cert != nil:
		certRef, keyRef = spec.Auth.Cert.ClientCert, spec.Auth.Cert.ClientKey
	case spec.TLS != nil:
		certRef, keyRef = spec.TLS.CertSecretRef, spec.TLS.KeySecretRef
	default:
		return nil, nil, nil
	}
	if cert, err = deps.SecretValue(ctx, certRef); err != nil {
		return nil, nil, err
	}
	if key, err = deps.SecretValue(ctx, keyRef); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// newSession reads the credentials of the store's auth method and returns
// a session that holds a static token or logs in with them. cert is the
// client certificate the transport presents.
func newSession(ctx context.Context, t transport, store provider.Store, deps provider.Deps, cert []byte) (*session, error) {
	auth := store.Spec.Vault.Auth
	switch {
	case auth.TokenSecretRef != nil:
		tok, err := deps.SecretValue(ctx, *auth.TokenSecretRef)
		if err != nil {
			return nil, err
		}
		return staticSession(t, strings.TrimSpace(string(tok))), nil
	case auth.AppRole != nil:
		a := auth.AppRole
		roleID := a.RoleID
		if a.RoleRef != nil {
			b, err := deps.SecretValue(ctx, *a.RoleRef)
			if err != nil {
				return nil, err
			}
			roleID = strings.TrimSpace(string(b))
		}
		secretID, err := deps.SecretValue(ctx, a.SecretRef)
		if err != nil {
			return nil, err
		}
		body := map[string]any{"role_id": roleID, "secret_id": strings.TrimSpace(string(secretID))}
		return loginSession(t, &login{method: "AppRole", mount: orDefault(a.Path, "approle"),
			body: func(context.Context) (map[string]any, error) { return body, nil }}), nil
	case auth.Kubernetes != nil:
		k := auth.Kubernetes
		return loginSession(t, serviceAccountLogin("Kubernetes", orDefault(k.MountPath, "kubernetes"), k.Role, k.ServiceAccountRef, store, deps)), nil
	case auth.JWT != nil:
		j := auth.JWT
		return loginSession(t, serviceAccountLogin("JWT", orDefault(j.Path, "jwt"), j.Role, j.ServiceAccountRef, store, deps)), nil
	case auth.UserPass != nil, auth.LDAP != nil:
		method, mount, a := "userpass", "userpass", auth.UserPass
		if a == nil {
			method, mount, a = "LDAP", "ldap", auth.LDAP
		}
		l, err := passwordLogin(ctx, method, mount, a, deps)
		if err != nil {
			return nil, err
		}
		return loginSession(t, l), nil
	case auth.Cert != nil:
		return loginSession(t, certLogin(auth.Cert, cert)), nil
	case auth.IAM != nil:
		l, err := iamLogin(ctx, store, deps)
		if err != nil {
			return nil, err
		}
		return loginSession(t, l), nil
	case auth.GCP != nil:
		l, err := gcpLogin(ctx, auth.GCP, deps)
		if err != nil {
			return nil, err
		}
		return loginSession(t, l), nil
	}
	return nil, fmt.Errorf("%w: vault.auth must set one of tokenSecretRef, appRole, kubernetes, jwt, userPass, ldap, cert, iam or gcp", engine.ErrInvalidConfig)
}

func orDefault(s, def string) string {
	if s = strings.Trim(s, "/"); s == "" {
		return def
	}
	return s
}
