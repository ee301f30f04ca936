package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// The namespaced install of docs/install.md, beside the cluster-wide
// release: a second release with namespaced.enabled in its own namespace
// (restricted Pod Security), of its own controller class (a namespace must
// not be served by two instances of one class), without the CRDs and the
// cluster-scoped admission policy the first release installed. Its pod
// becomes Ready with Roles only, and syncs an ExternalSecret of its
// namespace whose store names its class; a store of its class in another
// namespace is left alone.
func TestNamespacedInstall(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	const ns, class = "team-a", "team-a"
	_, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_, _ = s.helmRun(context.Background(), "uninstall", "team-a", "--namespace", ns, "--wait", "--timeout", "2m")
		_ = s.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	if out, err := s.helmRun(ctx, "install", "team-a", s.chart, "--namespace", ns, "--skip-crds", "--wait", "--timeout", "3m",
		"--set", "image.tag=e2e", "--set", "image.pullPolicy=Never", "--set", "namespaced.enabled=true",
		"--set", "controllerClass="+class, "--set", "admissionPolicy.enabled=false"); err != nil {
		t.Fatalf("helm install of the namespaced release: %v: %s\n%s", err, out, s.describePods(ctx, ns))
	}

	classStore := func(namespace string) {
		st := &v1alpha1.SecretStore{
			ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: namespace},
			Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{
				Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "team-value"}}},
			}},
		}
		must(t, s.k8s.Create(ctx, st))
	}
	classStore(ns)
	externalSecret(t, s, ns, "creds", "store", "k", "key")
	waitTarget(t, s, ns, "creds", "key", "team-value", 2*time.Minute)

	// Another namespace: neither instance serves a store of this class
	// there (the cluster-wide one is of the default class).
	other := newNamespace(t, s, "not-team-a")
	classStore(other)
	externalSecret(t, s, other, "creds", "store", "k", "key")
	consistently(t, 10*time.Second, func() (bool, string) {
		if _, err := s.kube.CoreV1().Secrets(other).Get(ctx, "creds", metav1.GetOptions{}); err == nil {
			return false, "a target was written in a namespace the namespaced release does not serve"
		}
		var st v1alpha1.SecretStore
		if err := s.k8s.Get(ctx, client.ObjectKey{Namespace: other, Name: "store"}, &st); err != nil {
			return false, err.Error()
		}
		return len(st.Status.Conditions) == 0, "the store of another namespace got a status"
	})
}
