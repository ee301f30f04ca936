package secretstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
)

func secretStore(spec v1alpha1.SecretStoreProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "s", Spec: &spec}
}

func clusterStore(spec v1alpha1.SecretStoreProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: "c", Spec: &spec}
}

func TestDependencies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store provider.Store
		want  []dependency
	}{
		{
			name:  "fake store names nothing",
			store: secretStore(v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}),
		},
		{
			name: "service account of a SecretStore is in its namespace",
			store: secretStore(v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				Auth: v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "reader"}}}}),
			want: []dependency{{Kind: "ServiceAccount", Namespace: "team", Name: "reader"}},
		},
		{
			name: "client certificate Secret named twice is listed once, after the CA Secret",
			store: secretStore(v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				Server: &v1alpha1.KubernetesServer{CASecretRef: &v1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}},
				Auth: v1alpha1.KubernetesAuth{Cert: &v1alpha1.KubernetesCertAuth{
					ClientCert: v1alpha1.SecretKeySelector{Name: "cert", Key: "tls.crt"},
					ClientKey:  v1alpha1.SecretKeySelector{Name: "cert", Key: "tls.key"}}}}}),
			want: []dependency{{Kind: "Secret", Namespace: "team", Name: "ca"}, {Kind: "Secret", Namespace: "team", Name: "cert"}},
		},
		{
			name: "vault CA ConfigMap and Kubernetes auth service account of a ClusterSecretStore",
			store: clusterStore(v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
				CAProvider: &v1alpha1.CAProvider{Type: "ConfigMap", Name: "ca", Key: "ca.crt", Namespace: "infra"},
				Auth: v1alpha1.VaultAuth{Kubernetes: &v1alpha1.VaultKubernetesAuth{
					ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "vault-auth", Namespace: "infra"}}}}}),
			want: []dependency{{Kind: "ConfigMap", Namespace: "infra", Name: "ca"}, {Kind: "ServiceAccount", Namespace: "infra", Name: "vault-auth"}},
		},
		{
			name: "references that break the namespace rules are configuration errors, not dependencies",
			store: secretStore(v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
					BearerToken: v1alpha1.SecretKeySelector{Name: "token", Key: "token", Namespace: "elsewhere"}}}}}),
		},
		{
			name: "a ClusterSecretStore reference without namespace is left out",
			store: clusterStore(v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
				Auth: v1alpha1.KubernetesAuth{ServiceAccount: &v1alpha1.ServiceAccountSelector{Name: "reader"}}}}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dependencies(tc.store); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "ca"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "token"}},
	}
	deps := []dependency{
		{Kind: "ConfigMap", Namespace: "infra", Name: "ca"},
		{Kind: "ServiceAccount", Namespace: "infra", Name: "vault-auth"},
		{Kind: "Secret", Namespace: "gone", Name: "a"},
		{Kind: "Secret", Namespace: "gone", Name: "b"},
		{Kind: "Secret", Namespace: "infra", Name: "token"},
	}
	store := clusterStore(v1alpha1.SecretStoreProvider{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	got, err := missing(context.Background(), c, store, deps)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`ServiceAccount "infra/vault-auth"`, `namespace "gone"`}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if msg := listed(got); msg != `ServiceAccount "infra/vault-auth" and namespace "gone"` {
		t.Fatalf("listed: %s", msg)
	}

	// A lookup the API server refuses is an error that names the object
	// and the reason, not the server's text.
	refusing := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, key.Name, errorWithText("server text"))
		},
	}).Build()
	got, err = missing(context.Background(), refusing, provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "infra"}, deps[1:2])
	if err == nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want an error and nothing missing", got, err)
	}
	if !strings.Contains(err.Error(), `ServiceAccount "infra/vault-auth"`) || !strings.Contains(err.Error(), "Forbidden") ||
		strings.Contains(err.Error(), "server text") {
		t.Fatalf("error %q", err)
	}
}

type errorWithText string

func (e errorWithText) Error() string { return string(e) }

func TestRetryBackoff(t *testing.T) {
	rl := RetryBackoff()
	a := reconcile.Request{}
	a.Name = "a"
	base := time.Second
	for i := 0; i < 12; i++ {
		d := rl.When(a)
		if d < base || d > base*6/5 {
			t.Fatalf("try %d: delay %s, want between %s and %s", i, d, base, base*6/5)
		}
		if d > 2*time.Minute {
			t.Fatalf("try %d: delay %s is over two minutes", i, d)
		}
		base = min(2*base, 100*time.Second)
	}
	rl.Forget(a)
	if d := rl.When(a); d > 1200*time.Millisecond {
		t.Fatalf("after Forget: delay %s, want about a second", d)
	}
}
