package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
	"github.com/watchword-dev/watchword/internal/provider/vault"
	"github.com/watchword-dev/watchword/pkg/conformance"
)

// The conformance suite (pkg/conformance) against the in-tree providers
// that talk to a real server: the kubernetes provider against this
// control plane, the vault provider against the shared Vault server.

// tokenDeps hands a provider one credential, as the key "token" of the
// Secret "cred", and this cluster's address and CA.
type tokenDeps struct{ token string }

func (d tokenDeps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	if sel.Name != "cred" || sel.Key != "token" {
		return nil, fmt.Errorf("no Secret key %s/%s in this test", sel.Name, sel.Key)
	}
	return []byte(d.token), nil
}
func (tokenDeps) ConfigMapValue(context.Context, string, string, string) ([]byte, error) {
	return nil, errors.New("no ConfigMaps in this test")
}
func (tokenDeps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return "", 0, errors.New("no service account tokens in this test")
}
func (tokenDeps) LocalConfig() *rest.Config {
	return &rest.Config{Host: restCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: restCfg.CAData, CAFile: restCfg.CAFile}}
}

var credRef = v1alpha1.SecretKeySelector{Name: "cred", Key: "token"}

// publisherToken returns a token of a service account of ns that may get,
// create, update and delete the Secrets of ns: what a publishing store's
// identity needs.
func publisherToken(t *testing.T, ns string) string {
	t.Helper()
	return accountToken(t, ns, secretsAccount(t, ns, "publisher", "get", "create", "update", "delete"))
}

// allowWatch lets the service account sa of ns also list and watch the
// Secrets of ns, which a kubernetes store needs to announce changes.
func allowWatch(t *testing.T, ns, sa string) {
	t.Helper()
	grantSecrets(t, ns, "secret-lister", sa, "list", "watch")
}

func TestConformanceKubernetes(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	token := publisherToken(t, ns)
	// The store announces changes (WatchAnnouncesWrites) when its
	// identity may list and watch the Secrets it reads.
	allowWatch(t, ns, "publisher")
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: ns, Name: "kube",
		Spec: &v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: credRef}}}}}
	ops, err := kubeprovider.Factory{}.New(context.Background(), store, tokenDeps{token: token})
	must(t, err)
	secrets := kube.CoreV1().Secrets(ns)
	// seed writes as an administrator would, without Watchword's marker.
	seed := func(ctx context.Context, key string, fields map[string][]byte) error {
		cur, err := secrets.Get(ctx, key, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key}, Data: fields}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur.Data, cur.Annotations, cur.Labels = fields, nil, nil
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	conformance.Run(t, conformance.Harness{Name: "kubernetes", Ops: ops, Seed: seed})
}

func TestConformanceVault(t *testing.T) {
	parallel(t)
	needVault(t)
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "conformance", Name: "vault",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2", Auth: v1alpha1.VaultAuth{TokenSecretRef: &credRef}}}}
	ops, err := vault.Factory{}.New(context.Background(), store, tokenDeps{token: vaultSrv.RootToken})
	must(t, err)
	defer func() { _ = ops.Closer.Close() }()
	prefix := "conformance/" + randomHex(t) + "/"
	seed := func(_ context.Context, key string, fields map[string][]byte) error {
		data := make(map[string]any, len(fields))
		for k, v := range fields {
			data[k] = string(v)
		}
		return vaultSrv.PutKV2("secret", escapedPath(key), data)
	}
	// Dynamic database credentials from the real PostgreSQL, for the
	// lease checks: they must log in.
	dsn, mount := vaultDatabase(t, "conformance-"+randomHex(t), 10*time.Minute, time.Hour)
	conformance.Run(t, conformance.Harness{Name: "vault", Ops: ops, Seed: seed, KeepsVersions: true,
		Key:   func(name string) string { return prefix + name },
		Lease: &engine.LeaseRequest{Path: mount + "/creds/app"},
		LeaseWorks: func(_ context.Context, obj engine.Object) error {
			return pgLogin(dsn, string(obj.Fields["username"]), string(obj.Fields["password"]))
		}})
}

// escapedPath escapes a key for the test server's helpers, which send a
// path as it is given: the suite's keys hold '%', spaces and the like.
func escapedPath(key string) string { return (&url.URL{Path: key}).EscapedPath() }

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestConformanceVaultKV1: a KV v1 mount reads, without versions, and
// cannot write.
func TestConformanceVaultKV1(t *testing.T) {
	parallel(t)
	needVault(t)
	mount := "kv1-" + randomHex(t)
	must(t, vaultSrv.Do(http.MethodPost, "sys/mounts/"+mount, map[string]any{"type": "kv", "options": map[string]string{"version": "1"}}, nil))
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "conformance", Name: "vault-kv1",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: mount, Version: "v1", Auth: v1alpha1.VaultAuth{TokenSecretRef: &credRef}}}}
	ops, err := vault.Factory{}.New(context.Background(), store, tokenDeps{token: vaultSrv.RootToken})
	must(t, err)
	defer func() { _ = ops.Closer.Close() }()
	seed := func(_ context.Context, key string, fields map[string][]byte) error {
		data := make(map[string]any, len(fields))
		for k, v := range fields {
			data[k] = string(v)
		}
		return vaultSrv.Do(http.MethodPost, mount+"/"+escapedPath(key), data, nil)
	}
	conformance.Run(t, conformance.Harness{Name: "vault KV v1", Ops: ops, Seed: seed})
}
