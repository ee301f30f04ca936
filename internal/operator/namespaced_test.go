package operator

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// The cache of a namespaced operator answers for ClusterSecretStores and
// Namespaces itself: the inner cache is nil here, so any call that reached
// it would panic.
func TestNamespacedCacheServesNoClusterScopedKind(t *testing.T) {
	ctx := context.Background()
	c := &namespacedCache{scheme: Scheme(), namespaces: []string{"team-a", "team-b"}}

	_, err := storeaccess.Resolve(ctx, c, "team-a", v1alpha1.StoreRef{Kind: v1alpha1.ClusterSecretStoreKind, Name: "shared"})
	class := failure.Classify(err)
	if class.Reason != failure.InvalidStoreRef || !class.Terminal {
		t.Errorf("resolving a ClusterSecretStore: %v (%+v), want a terminal InvalidStoreRef", err, class)
	}
	for _, want := range []string{`ClusterSecretStore "shared" is not served`, "--namespace team-a,team-b", "use a SecretStore"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resolving a ClusterSecretStore: %v, want a message with %q", err, want)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, &corev1.Namespace{}); failure.Classify(err).Reason != failure.InvalidStoreRef {
		t.Errorf("getting a Namespace: %v, want a refusal", err)
	}

	for _, list := range []client.ObjectList{&v1alpha1.ClusterSecretStoreList{}, &corev1.NamespaceList{}} {
		if err := c.List(ctx, list); err != nil {
			t.Errorf("listing %T: %v, want an empty list", list, err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Errorf("listing %T: %d items", list, n)
		}
	}
	if err := c.IndexField(ctx, &v1alpha1.ClusterSecretStore{}, "x", func(client.Object) []string { return nil }); err != nil {
		t.Errorf("indexing ClusterSecretStores: %v", err)
	}
	for _, get := range []func() (any, error){
		func() (any, error) { return c.GetInformer(ctx, &v1alpha1.ClusterSecretStore{}) },
		func() (any, error) {
			return c.GetInformer(ctx, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}})
		},
		func() (any, error) {
			return c.GetInformerForKind(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
		},
	} {
		inf, err := get()
		if err != nil {
			t.Fatal(err)
		}
		s, ok := inf.(silentInformer)
		if !ok || !s.HasSynced() {
			t.Errorf("informer %T: want a synced one that never reaches the API server", inf)
		}
		reg, err := s.AddEventHandler(nil)
		if err != nil || !reg.HasSynced() {
			t.Errorf("handler registration %v, %v: want a synced one", reg, err)
		}
	}
	for _, served := range []client.Object{&v1alpha1.SecretStore{}, &corev1.Secret{}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}} {
		if _, ok := c.unserved(served); ok {
			t.Errorf("%T is served in the namespaces", served)
		}
	}
}
