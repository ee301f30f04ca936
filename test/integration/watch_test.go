package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// secretInCache tells whether the operator's cache holds the Secret's
// metadata.
func secretInCache(t *testing.T, ns, name string) bool {
	t.Helper()
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := opCache.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &m)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading the cache: %v", err)
	}
	return err == nil
}

func TestCacheHoldsOnlyOwnedTargets(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "unrelated", map[string]string{"a": "b"})
	createSecret(t, ns, "merge-into", map[string]string{"local": "kept"})
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"})
	newES(t, ns, "owned", "store", withData("x", "k", ""))
	newES(t, ns, "merged", "store", withTarget("merge-into", v1alpha1.CreationPolicyMerge), withData("x", "k", ""))
	waitReady(t, ns, "owned")
	waitReady(t, ns, "merged")
	eventually(t, wait, func() (bool, string) {
		return secretInCache(t, ns, "owned"), "the owned target is not in the metadata cache"
	})
	if secretInCache(t, ns, "unrelated") {
		t.Error("an unrelated Secret is in the operator's cache")
	}
	if secretInCache(t, ns, "merge-into") {
		t.Error("a Merge target (watched by name) is in the label-selected cache")
	}
}

func TestMergeTargetEditIsRepairedAtOnce(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"})
	createSecret(t, ns, "cfg", map[string]string{"local": "kept"})
	newES(t, ns, "merger", "store", withTarget("cfg", v1alpha1.CreationPolicyMerge), withData("x", "k", ""), withRefresh(time.Hour))
	waitReady(t, ns, "merger")
	waitSecretData(t, ns, "cfg", map[string]string{"local": "kept", "x": "remote"})
	// Someone removes the merged key; the watch by name brings it back
	// long before the next refresh.
	updateSecret(t, ns, "cfg", func(s *corev1.Secret) { delete(s.Data, "x") })
	waitSecretData(t, ns, "cfg", map[string]string{"local": "kept", "x": "remote"})
}
