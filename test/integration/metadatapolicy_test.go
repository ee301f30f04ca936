package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func withMetadata(secretKey, key, property string) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: secretKey,
			RemoteRef: v1alpha1.RemoteReference{Key: key, Property: property, MetadataPolicy: v1alpha1.MetadataFetch}})
	}
}

// TestKubernetesMetadataFetch: metadataPolicy Fetch copies the labels and
// annotations of a Secret of the kubernetes store (one label by a dotted
// property, all of them as JSON, each group as a key of dataFrom), never
// kubectl's and kapp's copies of its data and any annotation that holds
// one of its values, and follows a label's change;
// a fake store, which keeps no metadata, refuses it by name.
func TestKubernetesMetadataFetch(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	ctx := context.Background()
	// The store may watch, so that a label's change is told at once.
	createSecret(t, ns, "reader-token", map[string]string{"token": accountToken(t, src, secretsAccount(t, src, "watcher", "get", "list", "watch"))})
	_, err := kube.CoreV1().Secrets(src).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db",
		Labels: map[string]string{"team": "payments"},
		Annotations: map[string]string{"owner": "ops@example.com", "kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"cGFzcw=="}}`,
			"kapp.k14s.io/original": `{"data":{"password":"cGFzcw=="}}`, "copy.example.com/data": "password=pass"}},
		Data: map[string][]byte{"password": []byte("pass")}}, metav1.CreateOptions{})
	must(t, err)
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "meta", "remote",
		withData("password", "db", "password"),
		withMetadata("team", "db", "labels.team"),
		withMetadata("all", "db", ""),
		func(es *v1alpha1.ExternalSecret) {
			es.Spec.DataFrom = append(es.Spec.DataFrom, v1alpha1.ExternalSecretDataFrom{
				RemoteRef: &v1alpha1.RemoteReference{Key: "db", MetadataPolicy: v1alpha1.MetadataFetch}})
		})
	waitSecretData(t, ns, "meta", map[string]string{
		"password":    "pass",
		"team":        "payments",
		"all":         `{"annotations":{"owner":"ops@example.com"},"labels":{"team":"payments"}}`,
		"labels":      `{"team":"payments"}`,
		"annotations": `{"owner":"ops@example.com"}`,
	})

	updateSecret(t, src, "db", func(s *corev1.Secret) { s.Labels["team"] = "billing" })
	waitSecretData(t, ns, "meta", map[string]string{
		"password":    "pass",
		"team":        "billing",
		"all":         `{"annotations":{"owner":"ops@example.com"},"labels":{"team":"billing"}}`,
		"labels":      `{"team":"billing"}`,
		"annotations": `{"owner":"ops@example.com"}`,
	})

	fakeStore(t, ns, "plain", fakeEntry{key: "db", value: "v"})
	newES(t, ns, "nometa", "plain", withMetadata("team", "db", ""))
	waitCondition(t, ns, "nometa", "NotSupported", `SecretStore "`+ns+`/plain"`, `remote key "db"`, "metadataPolicy Fetch", "fetchMetadata")
}

// TestVaultMetadataFetch: metadataPolicy Fetch copies the custom metadata
// of a Vault KV v2 secret (one entry by property, all as JSON, each as a
// key of dataFrom) beside its value, and follows a change of it.
func TestVaultMetadataFetch(t *testing.T) {
	parallel(t)
	needVault(t)
	ns, path := tokenVaultStore(t, "tagged", map[string]any{"password": "pw"}, "v2")
	setMeta := func(m map[string]string) {
		must(t, vaultSrv.Do(http.MethodPost, "secret/metadata/"+path, map[string]any{"custom_metadata": m}, nil))
	}
	setMeta(map[string]string{"team": "payments", "tier": "gold"})
	newES(t, ns, "meta", "vault", withRefresh(2*time.Second),
		withData("password", path, "password"),
		withMetadata("team", path, "team"),
		withMetadata("all", path, ""),
		func(es *v1alpha1.ExternalSecret) {
			es.Spec.DataFrom = append(es.Spec.DataFrom, v1alpha1.ExternalSecretDataFrom{
				RemoteRef: &v1alpha1.RemoteReference{Key: path, MetadataPolicy: v1alpha1.MetadataFetch}})
		})
	waitSecretData(t, ns, "meta", map[string]string{
		"password": "pw", "team": "payments", "tier": "gold", "all": `{"team":"payments","tier":"gold"}`,
	})
	setMeta(map[string]string{"team": "billing", "tier": "gold"})
	waitSecretData(t, ns, "meta", map[string]string{
		"password": "pw", "team": "billing", "tier": "gold", "all": `{"team":"billing","tier":"gold"}`,
	})
}

// TestFakeMetadataFetch: a fake store's entry metadata is read by
// metadataPolicy Fetch, of the version pinned.
func TestFakeMetadataFetch(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tagged"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{
			{Key: "db", Value: "v1", Metadata: map[string]string{"team": "old"}},
			{Key: "db", Value: "v2", Metadata: map[string]string{"team": "new"}},
		}}}}}
	must(t, k8s.Create(context.Background(), s))
	newES(t, ns, "meta", "tagged", withData("value", "db", ""), withMetadata("team", "db", "team"),
		func(es *v1alpha1.ExternalSecret) {
			es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "pinned",
				RemoteRef: v1alpha1.RemoteReference{Key: "db", Version: "1", MetadataPolicy: v1alpha1.MetadataFetch}})
		})
	waitSecretData(t, ns, "meta", map[string]string{"value": "v2", "team": "new", "pinned": `{"team":"old"}`})
}
