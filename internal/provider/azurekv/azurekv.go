// Package azurekv is a provider for the secrets of Azure Key Vault, on
// Microsoft's official SDK (azsecrets for the vault, azidentity for
// Microsoft Entra ID). It reads secrets by name and version (a JSON object
// value as fields, for property and dataFrom), tells the current version
// from the version listing without reading the value where it can, and
// writes and deletes secrets that carry its ownership tag (for publishing).
package azurekv

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// AssertionAudience is the audience of the service-account token that
// workload identity presents to Entra ID, unless the store names others.
const AssertionAudience = "api://AzureADTokenExchange"

// Factory builds Key Vault clients.
type Factory struct {
	// Transport, when set, carries every HTTP request of the SDK, to Key
	// Vault and to Entra ID. Tests set it to reach a loopback fake; nil is
	// the SDK's own transport.
	Transport policy.Transporter
}

var _ provider.Factory = Factory{}

// Validate checks what CEL cannot: managed identity belongs to the whole
// machine, so only a ClusterSecretStore (made by a cluster administrator)
// may use it; the tenant is needed by the sign-ins that name an app; the
// vault URL must be a bare https address.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.AzureKV
	a := spec.Auth
	if a.ManagedIdentity != nil && !store.Cluster() {
		return fmt.Errorf("%w: azurekv.auth.managedIdentity acts as the identity of the machine Watchword runs on, which every namespace would share: use it in a ClusterSecretStore, or use workloadIdentity or clientSecret in this SecretStore", engine.ErrInvalidConfig)
	}
	if (a.WorkloadIdentity != nil || a.ClientSecret != nil || a.ClientCertificate != nil) && spec.TenantID == "" {
		return fmt.Errorf("%w: azurekv.tenantID is required with workloadIdentity, clientSecret and clientCertificate: set it to the directory (tenant) ID of the app registration", engine.ErrInvalidConfig)
	}
	u, err := url.Parse(spec.VaultURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("%w: azurekv.vaultURL must be the vault's address alone, such as https://myvault.vault.azure.net", engine.ErrInvalidConfig)
	}
	if spec.AuthorityHost != "" {
		if u, err := url.Parse(spec.AuthorityHost); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%w: azurekv.authorityHost must be an https address, such as https://login.microsoftonline.us/", engine.ErrInvalidConfig)
		}
	}
	return nil
}

// Refs names the client secret, the client certificate and its password, and the workload identity's service account.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	a := store.Spec.AzureKV.Auth
	var out []provider.ObjectRef
	if a.ClientSecret != nil {
		out = append(out, provider.SecretKeyRef("azurekv.auth.clientSecret.clientSecretRef", a.ClientSecret.ClientSecretRef))
	}
	if c := a.ClientCertificate; c != nil {
		out = append(out, provider.SecretKeyRef("azurekv.auth.clientCertificate.certificateRef", c.CertificateRef))
		if c.PasswordRef != nil {
			out = append(out, provider.SecretKeyRef("azurekv.auth.clientCertificate.passwordRef", *c.PasswordRef))
		}
	}
	if a.WorkloadIdentity != nil {
		out = append(out, provider.ServiceAccountRef("azurekv.auth.workloadIdentity.serviceAccountRef", a.WorkloadIdentity.ServiceAccountRef))
	}
	return out
}

// New builds the client. It reads the client secret or certificate, but signs in only at
// the first request, as the SDK does (after Key Vault's challenge names the
// tenant and resource).
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.AzureKV
	opts := azcore.ClientOptions{Transport: f.Transport, Retry: policy.RetryOptions{MaxRetries: 3, MaxRetryDelay: 10 * time.Second}}
	if spec.AuthorityHost != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: spec.AuthorityHost}
	} else {
		opts.Cloud = cloud.AzurePublic
	}
	build := func(ctx context.Context) (*azsecrets.Client, string, error) {
		cred, who, err := credential(ctx, store, deps, opts)
		if err != nil {
			return nil, "", err
		}
		api, err := azsecrets.NewClient(strings.TrimSuffix(spec.VaultURL, "/"), cred, &azsecrets.ClientOptions{ClientOptions: opts})
		if err != nil {
			return nil, "", fmt.Errorf("%w: azurekv.vaultURL: %v", engine.ErrInvalidConfig, err)
		}
		return api, who, nil
	}
	api, who, err := build(ctx)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{api: api, who: who, vault: spec.VaultURL, rebuild: func(ctx context.Context) (*azsecrets.Client, error) {
		api, _, err := build(ctx)
		return api, err
	}}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Writer: c}, nil
}

// credential builds the credential of the store's auth method, and says
// who it signs in as (never a secret).
func credential(ctx context.Context, store provider.Store, deps provider.Deps, opts azcore.ClientOptions) (azcore.TokenCredential, string, error) {
	spec := store.Spec.AzureKV
	a := spec.Auth
	switch {
	case a.ClientSecret != nil:
		secret, err := deps.SecretValue(ctx, a.ClientSecret.ClientSecretRef)
		if err != nil {
			return nil, "", err
		}
		who := fmt.Sprintf("application %q of tenant %q (client secret)", a.ClientSecret.ClientID, spec.TenantID)
		cred, err := azidentity.NewClientSecretCredential(spec.TenantID, a.ClientSecret.ClientID, strings.TrimSpace(string(secret)),
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts})
		if err != nil {
			return nil, "", fmt.Errorf("%w: azurekv.auth.clientSecret: %s", engine.ErrInvalidConfig, safeSDKText(err))
		}
		return cred, who, nil
	case a.ClientCertificate != nil:
		return certificateCredential(ctx, spec.TenantID, a.ClientCertificate, deps, opts)
	case a.WorkloadIdentity != nil:
		w := a.WorkloadIdentity
		sa := w.ServiceAccountRef
		if len(sa.Audiences) == 0 {
			sa.Audiences = []string{AssertionAudience}
		}
		who := fmt.Sprintf("application %q of tenant %q (workload identity of service account %q)", w.ClientID, spec.TenantID,
			store.NamespaceOf(sa.Namespace)+"/"+sa.Name)
		assertion := func(ctx context.Context) (string, error) {
			tok, _, err := deps.ServiceAccountToken(ctx, sa)
			return tok, err
		}
		cred, err := azidentity.NewClientAssertionCredential(spec.TenantID, w.ClientID, assertion,
			&azidentity.ClientAssertionCredentialOptions{ClientOptions: opts})
		if err != nil {
			return nil, "", fmt.Errorf("%w: azurekv.auth.workloadIdentity: %s", engine.ErrInvalidConfig, safeSDKText(err))
		}
		return cred, who, nil
	case a.ManagedIdentity != nil:
		mo := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: opts}
		who := "the system-assigned managed identity of the machine"
		if id := a.ManagedIdentity.ClientID; id != "" {
			mo.ID = azidentity.ClientID(id)
			who = fmt.Sprintf("the user-assigned managed identity %q", id)
		}
		cred, err := azidentity.NewManagedIdentityCredential(mo)
		if err != nil {
			return nil, "", fmt.Errorf("%w: azurekv.auth.managedIdentity: %s", engine.ErrInvalidConfig, safeSDKText(err))
		}
		return cred, who, nil
	}
	return nil, "", fmt.Errorf("%w: azurekv.auth must set one of workloadIdentity, managedIdentity, clientSecret or clientCertificate", engine.ErrInvalidConfig)
}

// safeSDKText is the text of an SDK error raised before any request: it
// is about the shape of an ID or a host, never about a secret; it is cut
// short all the same.
func safeSDKText(err error) string {
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
