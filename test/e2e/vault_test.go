package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/node"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

// A real Vault on the host, listening on the node's address, read by the
// operator's pod: a KV v2 secret synced with a token that only its
// policy allows.
func TestVaultOnTheHostSyncsIntoThePod(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	bin, skip, err := vaultserver.Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	v, err := vaultserver.StartOn(bin, node.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	must(t, v.PutKV2("secret", "app/db", map[string]any{"password": "from-vault"}))
	must(t, v.Policy("app", `path "secret/data/app/*" { capabilities = ["read"] }`))
	token, err := v.Token("app")
	must(t, err)

	ns := newNamespace(t, s, "vault")
	_, err = s.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vault-token"},
		StringData: map[string]string{"token": token}}, metav1.CreateOptions{})
	must(t, err)
	must(t, s.k8s.Create(ctx, &v1alpha1.SecretStore{
		ObjectMeta: metav1.ObjectMeta{Name: "vault", Namespace: ns},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: v.Addr(), Path: "secret", Version: v1alpha1.VaultKVv2,
			Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault-token", Key: "token"}},
		}}},
	}))
	must(t, s.k8s.Create(ctx, &v1alpha1.ExternalSecret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.ExternalSecretSpec{
			SecretStoreRef:  v1alpha1.StoreRef{Name: "vault"},
			RefreshInterval: &metav1.Duration{Duration: time.Hour},
			Data: []v1alpha1.ExternalSecretData{{SecretKey: "password",
				RemoteRef: v1alpha1.RemoteReference{Key: "app/db", Property: "password"}}},
		},
	}))
	waitTarget(t, s, ns, "db", "password", "from-vault", 2*time.Minute)
}
