package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

// These tests cover ExternalSecret.spec.publishConnectionDetailsTo: the
// data an ExternalSecret renders, published to another store.

// publishTo sets publishConnectionDetailsTo.
func publishTo(name string, change ...func(*v1alpha1.ExternalSecretPublication)) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		p := &v1alpha1.ExternalSecretPublication{PushSecretDestination: v1alpha1.PushSecretDestination{Name: name}}
		for _, c := range change {
			c(p)
		}
		es.Spec.PublishConnectionDetailsTo = p
	}
}

func publishPolicy(policy v1alpha1.DeletionPolicy) func(*v1alpha1.ExternalSecretPublication) {
	return func(p *v1alpha1.ExternalSecretPublication) { p.DeletionPolicy = policy }
}

func publishVia(name string) func(*v1alpha1.ExternalSecretPublication) {
	return func(p *v1alpha1.ExternalSecretPublication) { p.ConfigRef = &v1alpha1.StoreRef{Name: name} }
}

// secretsHolding lists, across every namespace of the API server, the
// Secrets with a value that contains value.
func secretsHolding(t *testing.T, value string) []string {
	t.Helper()
	var list corev1.SecretList
	must(t, k8s.List(context.Background(), &list))
	var out []string
	for _, s := range list.Items {
		for k, v := range s.Data {
			if strings.Contains(string(v), value) {
				out = append(out, s.Namespace+"/"+s.Name+":"+k)
			}
		}
	}
	return out
}

// publishedEntry is the status entry of the destination name.
func publishedEntry(es *v1alpha1.ExternalSecret, name string) *v1alpha1.PushSecretDestinationStatus {
	for i := range es.Status.PublishedTo {
		if es.Status.PublishedTo[i].Name == name {
			return &es.Status.PublishedTo[i]
		}
	}
	return nil
}

// TestPublishProviderToProviderWritesNothingElse: with creationPolicy None
// the value goes from a fake store to a kubernetes store's namespace, and
// no other Secret anywhere in the API server holds it.
func TestPublishProviderToProviderWritesNothingElse(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	// Other tests hold the sentinel in Secrets of their own: this value
	// is this test's alone.
	value := sentinel + "-" + ns
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: value}, fakeEntry{key: "user", value: "app"})
	publisherStore(t, ns, "default", remote)
	newES(t, ns, "db", "source", withData("password", "db", ""), withData("username", "user", ""),
		withTarget("", v1alpha1.CreationPolicyNone),
		publishTo("app-db", func(p *v1alpha1.ExternalSecretPublication) {
			p.Metadata = v1alpha1.PushSecretMetadata{Labels: map[string]string{"team": "a"}, Type: "kubernetes.io/basic-auth"}
		}))
	es := waitReady(t, ns, "db")
	got := waitSecretData(t, remote, "app-db", map[string]string{"password": value, "username": "app"})
	if want := "ExternalSecret/" + ns + "/db/" + string(es.UID); got.Annotations[kubeprovider.PublisherAnnotation] != want {
		t.Errorf("marker %q, want %q", got.Annotations[kubeprovider.PublisherAnnotation], want)
	}
	if got.Labels["team"] != "a" || got.Type != "kubernetes.io/basic-auth" {
		t.Errorf("published Secret has labels %v and type %s", got.Labels, got.Type)
	}
	holding := secretsHolding(t, value)
	if len(holding) != 1 || holding[0] != remote+"/app-db:password" {
		t.Errorf("Secrets holding the value: %v, want only %s/app-db", holding, remote)
	}
	if _, err := getSecret(ns, "db"); err == nil {
		t.Error("creationPolicy None wrote a target Secret")
	}
	e := publishedEntry(es, "app-db")
	if e == nil || e.State != v1alpha1.PushPublished || e.StoreName != "default" || e.Version != got.ResourceVersion ||
		!strings.HasPrefix(e.DataHash, "hmac-sha256:") || e.PublishedTime == nil {
		t.Fatalf("publishedTo %+v (remote resourceVersion %s)", es.Status.PublishedTo, got.ResourceVersion)
	}
	waitEvent(t, ns, "db", "Published", `published keys password, username to remote secret "app-db" of SecretStore`)

	// A sync that brings the same data writes nothing remotely.
	written := got.ResourceVersion
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) { es.Spec.RefreshInterval = &metav1.Duration{Duration: 2 * time.Hour} })
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "db")
		return es.Status.ObservedGeneration == es.Generation && readyCond(es) != nil && readyCond(es).Status == metav1.ConditionTrue, describeES(es)
	})
	if s, err := getSecret(remote, "app-db"); err != nil || s.ResourceVersion != written {
		t.Errorf("the published Secret was written again though its data did not change (%v)", err)
	}

	// Changed data in the source store reaches the destination.
	updateStore(t, ns, "source", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[1].Value = "app2" })
	waitSecretData(t, remote, "app-db", map[string]string{"password": value, "username": "app2"})
	if holding := secretsHolding(t, value); len(holding) != 1 {
		t.Errorf("Secrets holding the value: %v", holding)
	}
}

// TestPublishWithAnOwnedTarget: the target is written as usual, and the
// same data is published; a failure to publish leaves the target written.
func TestPublishWithAnOwnedTarget(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: "v1"})
	publisherStore(t, ns, "dest", remote)
	newES(t, ns, "db", "source", withData("password", "db", ""), publishTo("copy", publishVia("dest")))
	waitReady(t, ns, "db")
	waitSecretData(t, ns, "db", map[string]string{"password": "v1"})
	waitSecretData(t, remote, "copy", map[string]string{"password": "v1"})

	// A destination store that does not exist: Ready says so, the sync
	// itself succeeded and the target has the new data.
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) {
		es.Spec.PublishConnectionDetailsTo.ConfigRef = &v1alpha1.StoreRef{Name: "nowhere"}
		es.Spec.PublishConnectionDetailsTo.DeletionPolicy = v1alpha1.DeletionPolicyRetain
	})
	updateStore(t, ns, "source", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = "v2" })
	es := waitCondition(t, ns, "db", "StoreNotFound", `SecretStore "nowhere" not found in namespace "`+ns+`"`,
		`Secret "db" holds the data; it is not published`)
	waitSecretData(t, ns, "db", map[string]string{"password": "v2"})
	for _, c := range es.Status.Conditions {
		if c.Type == v1alpha1.ConditionInSync && c.Status != metav1.ConditionTrue {
			t.Errorf("InSync is %s though the target was synced", c.Status)
		}
	}
	// The former destination is retained, not deleted.
	waitSecretData(t, remote, "copy", map[string]string{"password": "v1"})
	waitEvent(t, ns, "db", "Retained", `destination "copy" of SecretStore`)

	// Its creation publishes.
	publisherStore(t, ns, "nowhere", remote)
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) { es.Spec.PublishConnectionDetailsTo.Name = "copy2" })
	waitReady(t, ns, "db")
	waitSecretData(t, remote, "copy2", map[string]string{"password": "v2"})
}

// TestPublishRefusesAForeignSecretUntilAdopted: a remote Secret without
// Watchword's marker is left untouched until adopt: true.
func TestPublishRefusesAForeignSecretUntilAdopted(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: sentinel})
	publisherStore(t, ns, "default", remote)
	createSecret(t, remote, "taken", map[string]string{"k": "theirs"})
	newES(t, ns, "db", "source", withData("k", "db", ""), withTarget("", v1alpha1.CreationPolicyNone), publishTo("taken"))
	es := waitCondition(t, ns, "db", "NotOwned", `publishing to "taken" of SecretStore "`+ns+`/default"`,
		"Secret "+remote+"/taken exists and carries no Watchword publisher marker", "adopt: true")
	if c := readyCond(es); strings.Contains(c.Message, "theirs") {
		t.Error("the refusal names a value")
	}
	if e := publishedEntry(es, "taken"); e == nil || e.State != v1alpha1.PushNotOwned {
		t.Errorf("publishedTo %+v", es.Status.PublishedTo)
	}
	waitEvent(t, ns, "db", "NotOwned", `not published to remote secret "taken"`)
	waitSecretData(t, remote, "taken", map[string]string{"k": "theirs"})

	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) { es.Spec.PublishConnectionDetailsTo.Adopt = true })
	es = waitReady(t, ns, "db")
	s := waitSecretData(t, remote, "taken", map[string]string{"k": sentinel})
	if want := "ExternalSecret/" + ns + "/db/" + string(es.UID); s.Annotations[kubeprovider.PublisherAnnotation] != want {
		t.Errorf("adopted Secret has marker %q, want %q", s.Annotations[kubeprovider.PublisherAnnotation], want)
	}
}

// TestPublishDeletionPolicies: deleting the ExternalSecret deletes the
// copy it owns under Delete and leaves it under Retain; a copy whose
// marker is another's is never deleted.
func TestPublishDeletionPolicies(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: "v"})
	publisherStore(t, ns, "default", remote)
	newES(t, ns, "deletes", "source", withData("k", "db", ""), withTarget("", v1alpha1.CreationPolicyNone), publishTo("deleted"))
	newES(t, ns, "retains", "source", withData("k", "db", ""), publishTo("retained", publishPolicy(v1alpha1.DeletionPolicyRetain)))
	waitReady(t, ns, "deletes")
	waitReady(t, ns, "retains")
	waitSecretData(t, remote, "deleted", map[string]string{"k": "v"})
	waitSecretData(t, remote, "retained", map[string]string{"k": "v"})
	for _, name := range []string{"deletes", "retains"} {
		es := getES(t, ns, name)
		must(t, k8s.Delete(context.Background(), es))
		waitGone(t, es)
	}
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "deleted"}})
	waitEvent(t, ns, "deletes", "Unpublished", `deleted remote secret "deleted" of SecretStore`)
	waitSecretData(t, remote, "retained", map[string]string{"k": "v"})

	// A renamed destination under Delete unpublishes the old copy.
	newES(t, ns, "moves", "source", withData("k", "db", ""), withTarget("", v1alpha1.CreationPolicyNone), publishTo("old"))
	waitReady(t, ns, "moves")
	waitSecretData(t, remote, "old", map[string]string{"k": "v"})
	updateES(t, ns, "moves", func(es *v1alpha1.ExternalSecret) { es.Spec.PublishConnectionDetailsTo.Name = "new" })
	waitReady(t, ns, "moves")
	waitSecretData(t, remote, "new", map[string]string{"k": "v"})
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "old"}})
	if es := getES(t, ns, "moves"); len(es.Status.PublishedTo) != 1 {
		t.Errorf("publishedTo keeps %d entries: %+v", len(es.Status.PublishedTo), es.Status.PublishedTo)
	}

	// Its store gone, the ExternalSecret goes and deletes nothing.
	must(t, k8s.Delete(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	es := getES(t, ns, "moves")
	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, es)
	waitSecretData(t, remote, "new", map[string]string{"k": "v"})
}

// TestPublishBadInputDeletesNothing: a sync that fails publishes nothing
// and deletes nothing already published.
func TestPublishBadInputDeletesNothing(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: "v"})
	publisherStore(t, ns, "default", remote)
	newES(t, ns, "db", "source", withData("k", "db", ""), withTarget("", v1alpha1.CreationPolicyNone), publishTo("copy"))
	waitReady(t, ns, "db")
	waitSecretData(t, remote, "copy", map[string]string{"k": "v"})
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].RemoteRef.Key = "absent" })
	es := waitCondition(t, ns, "db", "NotFound")
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(remote, "copy")
		return err == nil && string(s.Data["k"]) == "v", fmt.Sprintf("the published copy changed (%v)", err)
	})
	if e := publishedEntry(es, "copy"); e == nil || e.State != v1alpha1.PushPublished {
		t.Errorf("publishedTo %+v", es.Status.PublishedTo)
	}
	var list corev1.SecretList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	for _, s := range list.Items {
		if s.Name == "db" {
			t.Error("creationPolicy None wrote a target Secret")
		}
	}
}
