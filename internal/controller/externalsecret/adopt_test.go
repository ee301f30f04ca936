package externalsecret

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
)

// TestAdoptionNeverDeletes: adopt: true on an ownerless Secret of another
// type (a Helm release's) neither deletes nor re-creates it: the sync is
// refused, terminal, saying what to change, and the Secret keeps its UID
// and data. With the Secret's type in the template, it is adopted in place.
func TestAdoptionNeverDeletes(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "v1")
	release := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "es", UID: "release-uid", Labels: map[string]string{"owner": "helm"}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("chart")}}
	if err := h.c.Create(ctx, release); err != nil {
		t.Fatal(err)
	}
	es := h.es(t)
	es.Spec.Target.Adopt = true
	if err := h.c.Update(ctx, es); err != nil {
		t.Fatal(err)
	}
	res, err := h.r.Reconcile(ctx, h.req)
	if err != nil {
		t.Fatalf("a type that cannot change is terminal, not retried with backoff: %v", err)
	}
	if res.RequeueAfter != refreshInterval(es) {
		t.Errorf("requeue after %v, want only the terminal recheck %v", res.RequeueAfter, refreshInterval(es))
	}
	es = h.es(t)
	ready := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Reason != string(failure.TargetConflict) ||
		!strings.Contains(ready.Message, "helm.sh/release.v1") || !strings.Contains(ready.Message, "spec.target.template.type") ||
		!strings.Contains(ready.Message, "never deletes") {
		t.Fatalf("Ready = %+v", ready)
	}
	if conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled) == nil {
		t.Error("the refusal does not stall the ExternalSecret")
	}
	var s corev1.Secret
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil {
		t.Fatal(err)
	}
	if s.UID != "release-uid" || s.Type != "helm.sh/release.v1" || string(s.Data["release"]) != "chart" || len(s.OwnerReferences) != 0 {
		t.Fatalf("the Helm release's Secret was replaced or changed: uid %s, type %s, keys %d, owners %v", s.UID, s.Type, len(s.Data), s.OwnerReferences)
	}

	// The same type: adopted in place.
	es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Type: "helm.sh/release.v1"}
	es.Generation++
	if err := h.c.Update(ctx, es); err != nil {
		t.Fatal(err)
	}
	h.reconcile(t)
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&s); s.UID != "release-uid" || ref == nil || ref.UID != es.UID || string(s.Data["password"]) != "v1" {
		t.Fatalf("adopted with its type: uid %s, controller %+v", s.UID, ref)
	}
}

// TestAdoptionRefusesATokenSecret: a service-account token Secret is never
// adopted, whatever the ExternalSecret asks.
func TestAdoptionRefusesATokenSecret(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "v1")
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "es", UID: "token-uid",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte("t")}}
	if err := h.c.Create(ctx, token); err != nil {
		t.Fatal(err)
	}
	es := h.es(t)
	es.Spec.Target.Adopt = true
	if err := h.c.Update(ctx, es); err != nil {
		t.Fatal(err)
	}
	h.reconcile(t)
	ready := conditions.FindES(h.es(t).Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Reason != string(failure.TargetConflict) || !strings.Contains(ready.Message, "never writes or replaces") {
		t.Fatalf("Ready = %+v", ready)
	}
	var s corev1.Secret
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil || s.UID != "token-uid" {
		t.Fatalf("the token Secret was replaced: %v %s", err, s.UID)
	}
}
