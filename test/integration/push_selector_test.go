package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// labelledSecret creates a Secret of ns with labels.
func labelledSecret(t *testing.T, ns, name string, labels, data map[string]string) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, StringData: data}))
}

// newSelectorPush creates a PushSecret of ns that publishes the Secrets
// labelled publish=yes.
func newSelectorPush(t *testing.T, ns, name string, opts ...pushOpt) {
	t.Helper()
	ps := &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.PushSecretSpec{
		SecretSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"publish": "yes"}}}}
	for _, o := range opts {
		o(ps)
	}
	must(t, k8s.Create(context.Background(), ps))
}

// published lists "secretName→remote name" of the Published entries.
func publishedFrom(ps *v1alpha1.PushSecret) map[string]string {
	out := map[string]string{}
	for _, d := range ps.Status.Destinations {
		if d.State == v1alpha1.PushPublished {
			out[d.SecretName] = d.Name
		}
	}
	return out
}

func remoteAbsent(ns, name string) func() (bool, string) {
	return func() (bool, string) {
		_, err := getSecret(ns, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("remote Secret %s/%s exists (%v)", ns, name, err)
	}
}

func TestPushSelectorFollowsTheLabels(t *testing.T) {
	parallel(t)
	ns, remote, other := newNamespace(t, nil), newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	yes := map[string]string{"publish": "yes"}
	labelledSecret(t, ns, "a", yes, map[string]string{"password": sentinel, "extra": "x"})
	labelledSecret(t, ns, "b", yes, map[string]string{"password": "b-pass"})
	labelledSecret(t, ns, "c", map[string]string{"publish": "no"}, map[string]string{"password": "c-pass"})
	// Labelled alike, in another namespace: never the PushSecret's.
	labelledSecret(t, other, "outsider", yes, map[string]string{"password": "outside"})
	newSelectorPush(t, ns, "labelled", pushKey("password", ""), pushTo("copy-{{ .secretName }}"))

	ps := waitPushReady(t, ns, "labelled")
	waitSecretData(t, remote, "copy-a", map[string]string{"password": sentinel})
	waitSecretData(t, remote, "copy-b", map[string]string{"password": "b-pass"})
	if got := publishedFrom(ps); len(got) != 2 || got["a"] != "copy-a" || got["b"] != "copy-b" || len(ps.Status.Destinations) != 2 {
		t.Errorf("status destinations %+v, want a→copy-a and b→copy-b published", ps.Status.Destinations)
	}
	c, _ := pushReady(ps)
	if c == nil || c.Reason != "Published" || c.Message != `2 Secrets matched by spec.secretSelector are published to 2 of 2 remote secrets (status.destinations): "a", "b"` {
		t.Errorf("Ready: %+v", c)
	}
	consistently(t, 2*time.Second, remoteAbsent(remote, "copy-c"))
	consistently(t, time.Second, remoteAbsent(remote, "copy-outsider"))

	// A Secret that starts matching is published, without any change of
	// the PushSecret.
	updateSecret(t, ns, "c", func(s *corev1.Secret) { s.Labels["publish"] = "yes" })
	waitSecretData(t, remote, "copy-c", map[string]string{"password": "c-pass"})
	eventually(t, wait, func() (bool, string) {
		got := publishedFrom(getPush(t, ns, "labelled"))
		return len(got) == 3 && got["c"] == "copy-c", fmt.Sprintf("published %v", got)
	})

	// One that stops matching is unpublished (deletionPolicy Delete, and
	// the remote Secret carries this PushSecret's marker).
	updateSecret(t, ns, "a", func(s *corev1.Secret) { delete(s.Labels, "publish") })
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "copy-a"}})
	waitEvent(t, ns, "labelled", "Unpublished", `deleted remote secret "copy-a" of SecretStore`)
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, "labelled")
		got := publishedFrom(ps)
		return len(got) == 2 && got["b"] == "copy-b" && got["c"] == "copy-c" && len(ps.Status.Destinations) == 2, fmt.Sprintf("status %+v", ps.Status.Destinations)
	})
	// An edit of a selected Secret reaches its remote copy at once.
	updateSecret(t, ns, "b", func(s *corev1.Secret) { s.Data["password"] = []byte("rotated") })
	waitSecretData(t, remote, "copy-b", map[string]string{"password": "rotated"})
	consistently(t, time.Second, remoteAbsent(remote, "copy-outsider"))
}

func TestPushSelectorRemovesOnlyWhatItOwnsAndWhatDeletionPolicyAllows(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	yes := map[string]string{"publish": "yes"}
	labelledSecret(t, ns, "kept", yes, map[string]string{"k": "v"})
	labelledSecret(t, ns, "theirs", yes, map[string]string{"k": "v"})
	createSecret(t, remote, "copy-theirs", map[string]string{"k": "someone else's"})
	newSelectorPush(t, ns, "p", pushTo("copy-{{ .secretName }}"))
	ps := waitPushCondition(t, ns, "p", "NotOwned", "1 of 2 destinations published")
	waitSecretData(t, remote, "copy-kept", map[string]string{"k": "v"})
	for _, d := range ps.Status.Destinations {
		if d.Name == "copy-theirs" && (d.State != v1alpha1.PushNotOwned || d.SecretName != "theirs") {
			t.Errorf("entry of the foreign copy: %+v", d)
		}
	}

	// Relabelled out: a remote Secret without this PushSecret's marker is
	// left as it is.
	updateSecret(t, ns, "theirs", func(s *corev1.Secret) { s.Labels = nil })
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "copy-theirs", map[string]string{"k": "someone else's"})

	// Under Retain a Secret that stops matching leaves its remote copy.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) { ps.Spec.DeletionPolicy = v1alpha1.DeletionPolicyRetain })
	waitPushReady(t, ns, "p")
	updateSecret(t, ns, "kept", func(s *corev1.Secret) { s.Labels = nil })
	waitEvent(t, ns, "p", "Retained", `remote secret "copy-kept" of SecretStore`)
	waitSecretData(t, remote, "copy-kept", map[string]string{"k": "v"})
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, "p")
		c, why := pushReady(ps)
		return len(ps.Status.Destinations) == 0 && c != nil && c.Message == "no Secret of the namespace matches spec.secretSelector: nothing is published", why
	})
}

func TestPushSelectorRefusesACollision(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	yes := map[string]string{"publish": "yes"}
	labelledSecret(t, ns, "db", yes, map[string]string{"k": "from-db"})
	labelledSecret(t, ns, "app-db", yes, map[string]string{"k": "from-app-db"})
	// "app-{{ .secretName }}" of db and "{{ .secretName }}" of app-db are
	// both app-db.
	newSelectorPush(t, ns, "p", pushTo("app-{{ .secretName }}"), pushTo("{{ .secretName }}"))
	ps := waitPushCondition(t, ns, "p", "RemoteNameCollision",
		`Secret "db" (destination "app-{{ .secretName }}") and Secret "app-db" (destination "{{ .secretName }}") would all be published to remote secret "app-db"`)
	waitSecretData(t, remote, "app-app-db", map[string]string{"k": "from-app-db"})
	waitSecretData(t, remote, "db", map[string]string{"k": "from-db"})
	consistently(t, 2*time.Second, remoteAbsent(remote, "app-db"))
	refused := 0
	for _, d := range ps.Status.Destinations {
		if d.Name == "app-db" {
			refused++
			if d.State != v1alpha1.PushFailed || d.Reason != "RemoteNameCollision" {
				t.Errorf("the colliding entry: %+v", d)
			}
		}
	}
	if refused != 1 || len(ps.Status.Destinations) != 3 {
		t.Errorf("status destinations %+v, want app-app-db, app-db (refused once), db", ps.Status.Destinations)
	}

	// Relabelling one of them ends the collision: the other is published
	// there.
	updateSecret(t, ns, "db", func(s *corev1.Secret) { s.Labels = nil })
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "app-db", map[string]string{"k": "from-app-db"})
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "db"}})
}

func TestPushSelectorStampedByAClusterPushSecret(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, map[string]string{"stamp-selector": "yes"}), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	labelledSecret(t, ns, "one", map[string]string{"publish": "yes"}, map[string]string{"k": "v1"})
	labelledSecret(t, ns, "two", map[string]string{"publish": "yes"}, map[string]string{"k": "v2"})
	cps := &v1alpha1.ClusterPushSecret{ObjectMeta: metav1.ObjectMeta{Name: "stamp-" + ns}, Spec: v1alpha1.ClusterPushSecretSpec{
		PushSecretName:   "stamped",
		NamespaceTargets: v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stamp-selector": "yes"}}}},
		PushSecretSpec: v1alpha1.PushSecretSpec{
			SecretSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"publish": "yes"}},
			Destinations:   []v1alpha1.PushSecretDestination{{Name: "stamped-{{ .secretName }}"}}}}}
	must(t, k8s.Create(context.Background(), cps))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cps) })
	// The ClusterPushSecret's controller stamps the PushSecret: wait for it
	// to exist before waiting for it to be Ready.
	eventually(t, wait, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "stamped"}, &v1alpha1.PushSecret{})
		return err == nil, fmt.Sprintf("the stamped PushSecret: %v", err)
	})
	waitPushReady(t, ns, "stamped")
	waitSecretData(t, remote, "stamped-one", map[string]string{"k": "v1"})
	waitSecretData(t, remote, "stamped-two", map[string]string{"k": "v2"})
}
