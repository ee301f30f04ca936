package azurekv

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/azurefake"
)

const (
	tenant     = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	vaultHost  = "watchword.vault.azure.net"
	appID      = "0b1f2c3d-0000-4000-8000-000000000001"
	appSecret  = "client-secret-value-1"
	readerSubj = "system:serviceaccount:team:reader"
)

// env is a fake Azure with one vault and one app that may do everything.
type env struct {
	fake *azurefake.Server
	deps *azurefake.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := azurefake.New(t)
	f.AddVault(vaultHost, tenant, azurefake.Public)
	f.AddApp(tenant, appID, appSecret, readerSubj, "get", "list", "set", "delete")
	iss := azurefake.NewIssuer()
	f.VerifyAssertion = iss.Verify
	d := &azurefake.Deps{Issuer: iss, Namespace: "team"}
	d.SetSecret("azure", "client-secret", []byte(appSecret))
	return &env{fake: f, deps: d}
}

func secretStore(spec *v1alpha1.AzureKVProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "azure",
		Spec: &v1alpha1.SecretStoreProvider{AzureKV: spec}}
}

func clientSecretSpec() *v1alpha1.AzureKVProvider {
	return &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, TenantID: tenant, Auth: v1alpha1.AzureKVAuth{
		ClientSecret: &v1alpha1.AzureClientSecretAuth{ClientID: appID,
			ClientSecretRef: v1alpha1.SecretKeySelector{Name: "azure", Key: "client-secret"}}}}
}

func workloadSpec() *v1alpha1.AzureKVProvider {
	return &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, TenantID: tenant, Auth: v1alpha1.AzureKVAuth{
		WorkloadIdentity: &v1alpha1.AzureWorkloadIdentityAuth{ClientID: appID,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "reader"}}}}
}

func (e *env) ops(t *testing.T, store provider.Store) engine.Ops {
	t.Helper()
	ops, err := Factory{Transport: e.fake.Client()}.New(context.Background(), store, e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "azurekv")
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "azurekv",
		Ops:  e.ops(t, secretStore(clientSecretSpec())),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			text, err := fieldsText(fields)
			if err != nil {
				return err
			}
			e.fake.SetSecret(vaultHost, key, text, nil)
			return nil
		},
		Key:           func(name string) string { return "conformance-" + name },
		KeepsVersions: true,
	})
}

// mustClass fails unless err wraps class, and checks that the message
// holds no secret value.
func mustClass(t *testing.T, err, class error, fragments ...string) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Fatalf("error %v: want class %v", err, class)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %q", err, f)
		}
	}
	for _, secret := range []string{appSecret, "s3cr3t-value", "fake-at-"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret", err)
		}
	}
}
