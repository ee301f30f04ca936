package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// leader is the pod that holds the operator's lease.
func leader(t *testing.T, s *env) string {
	t.Helper()
	var holder string
	eventually(t, time.Minute, func() (bool, string) {
		l, err := s.kube.CoordinationV1().Leases(releaseNS).Get(t.Context(), "watchword-leader", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, "the lease has no holder"
		}
		// controller-runtime's identity is the pod's host name and a
		// suffix.
		holder, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_")
		return true, ""
	})
	return holder
}

// Two replicas with leader election: deleting the leader's pod (a clean
// stop, which releases the lease) hands over to the other, and a new
// ExternalSecret is synced soon after, as docs/operations.md says.
func TestLeaderPodDeletedHandsOver(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	waitOperatorReady(t, s, 2)
	old := leader(t, s)
	if _, err := s.kube.CoreV1().Pods(releaseNS).Get(ctx, old, metav1.GetOptions{}); err != nil {
		t.Fatalf("the lease holder %q is not an operator pod: %v", old, err)
	}
	ns := newNamespace(t, s, "leader")
	fakeStore(t, s, ns, "store", "k", "v1")
	start := time.Now()
	if err := s.kube.CoreV1().Pods(releaseNS).Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		return leader(t, s) != old, "the deleted pod " + old + " still holds the lease"
	})
	t.Logf("the lease changed hands %.1fs after the leader's pod was deleted", time.Since(start).Seconds())
	// Created once the new leader holds the lease: it is the one to sync.
	created := time.Now()
	externalSecret(t, s, ns, "after-handover", "store", "k", "key")
	waitTarget(t, s, ns, "after-handover", "key", "v1", 2*time.Minute)
	t.Logf("a new ExternalSecret synced %.1fs after it was created under the new leader", time.Since(created).Seconds())
}

// The admission webhook, enabled through the chart, is called by the API
// server through its Service and refuses a second writer of a target,
// naming the first; with no operator pod to answer, admission fails open
// and the second writer is refused at reconcile time instead.
func TestWebhookThroughItsServiceAndFailingOpen(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	waitOperatorReady(t, s, 2)
	ns := newNamespace(t, s, "webhook")
	fakeStore(t, s, ns, "store", "k", "v1")
	externalSecret(t, s, ns, "first", "store", "k", "key")
	waitTarget(t, s, ns, "first", "key", "v1", time.Minute)

	second := func(name string) error {
		es := &v1alpha1.ExternalSecret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.ExternalSecretSpec{
				SecretStoreRef: v1alpha1.StoreRef{Name: "store"},
				Target:         v1alpha1.ExternalSecretTarget{Name: "first"},
				Data:           []v1alpha1.ExternalSecretData{{SecretKey: "key", RemoteRef: v1alpha1.RemoteReference{Key: "k"}}},
			},
		}
		return s.k8s.Create(ctx, es)
	}
	// The webhook's certificate is issued by the controller after it
	// starts; until the caBundle is in place the webhook fails open too.
	eventually(t, time.Minute, func() (bool, string) {
		err := second("second")
		if err == nil {
			_ = s.k8s.Delete(ctx, &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns}})
			return false, "the second writer was admitted"
		}
		return strings.Contains(err.Error(), "first"), fmt.Sprintf("refused without naming the first writer: %v", err)
	})

	// No pod behind the Service: the API server cannot call the webhook
	// and, by its failurePolicy Ignore, admits.
	scale(t, s, 0)
	t.Cleanup(func() { scale(t, s, 2) })
	eventually(t, time.Minute, func() (bool, string) {
		pods, err := s.kube.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=watchword"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d operator pods left", len(pods.Items))
	})
	if err := second("admitted-while-down"); err != nil {
		t.Fatalf("with the webhook's pods gone, admission did not fail open: %v", err)
	}
}

// scale sets the operator Deployment's replicas.
func scale(t *testing.T, s *env, n int32) {
	t.Helper()
	// Not t.Context(): this runs in a cleanup too, after it is done.
	ctx := context.Background()
	sc, err := s.kube.AppsV1().Deployments(releaseNS).GetScale(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = n
	if _, err := s.kube.AppsV1().Deployments(releaseNS).UpdateScale(ctx, release, sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		waitOperatorReady(t, s, int(n))
	}
}
