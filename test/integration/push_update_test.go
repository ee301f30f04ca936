package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

func pushUpdate(p v1alpha1.PushUpdatePolicy) pushOpt {
	return func(ps *v1alpha1.PushSecret) { ps.Spec.UpdatePolicy = p }
}

// destinationState waits until the named destination of the PushSecret is
// in state with reason.
func destinationState(t *testing.T, ns, name, dest string, state v1alpha1.PushState, reason string) v1alpha1.PushSecretDestinationStatus {
	t.Helper()
	var got v1alpha1.PushSecretDestinationStatus
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, name)
		for _, d := range ps.Status.Destinations {
			if d.Name == dest {
				got = d
				return d.State == state && d.Reason == reason, fmt.Sprintf("destination %q is %s/%s: %s", dest, d.State, d.Reason, d.Message)
			}
		}
		return false, fmt.Sprintf("no status of destination %q", dest)
	})
	return got
}

// With updatePolicy IfNotExists, a remote secret that exists, another's
// or one the PushSecret created, is never written; a missing one is
// created with the marker, and created again when it is deleted.
func TestPushIfNotExistsWritesOnlyWhatIsMissing(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "theirs"},
		StringData: map[string]string{"k": "theirs"}}))
	createSecret(t, ns, "src", map[string]string{"k": sentinel})
	newPush(t, ns, "p", "src", pushUpdate(v1alpha1.PushUpdateIfNotExists), pushRefresh(time.Second), pushTo("theirs"), pushTo("fresh"))

	ps := waitPushReady(t, ns, "p")
	if c, why := pushReady(ps); !strings.Contains(c.Message, "1 left as they exist (updatePolicy IfNotExists)") {
		t.Errorf("Ready does not tell of the destination left as it is: %s", why)
	}
	d := destinationState(t, ns, "p", "theirs", v1alpha1.PushExists, "Exists")
	if d.PublishedTime != nil || !strings.Contains(d.Message, "updatePolicy IfNotExists leaves it as it is") {
		t.Errorf("status of the existing destination: %+v", d)
	}
	theirs := waitSecretData(t, remote, "theirs", map[string]string{"k": "theirs"})
	if theirs.Annotations[kubeprovider.PublisherAnnotation] != "" {
		t.Errorf("the existing Secret got a marker: %v", theirs.Annotations)
	}
	waitEvent(t, ns, "p", "Exists", `remote secret "theirs" of SecretStore`)
	fresh := waitSecretData(t, remote, "fresh", map[string]string{"k": sentinel})
	if want := "PushSecret/" + ns + "/p/" + string(ps.UID); fresh.Annotations[kubeprovider.PublisherAnnotation] != want {
		t.Errorf("created Secret's marker %q, want %q", fresh.Annotations[kubeprovider.PublisherAnnotation], want)
	}
	destinationState(t, ns, "p", "fresh", v1alpha1.PushPublished, "Published")

	// A change of the source is not written over a remote secret that
	// exists, even one the PushSecret created: the store is the source of
	// truth.
	updateSecret(t, ns, "src", func(s *corev1.Secret) { s.Data["k"] = []byte("rotated") })
	d = destinationState(t, ns, "p", "fresh", v1alpha1.PushExists, "Exists")
	if d.PublishedTime == nil {
		t.Error("the destination the PushSecret created lost its publishedTime (deletionPolicy Delete would leave it)")
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		s, err := getSecret(remote, "fresh")
		if err != nil {
			return false, err.Error()
		}
		return string(s.Data["k"]) == sentinel, "the existing remote secret was written"
	})
	waitSecretData(t, remote, "theirs", map[string]string{"k": "theirs"})

	// A remote secret that goes away is created again, with what the
	// source holds now.
	must(t, k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "fresh"}}))
	waitSecretData(t, remote, "fresh", map[string]string{"k": "rotated"})
	destinationState(t, ns, "p", "fresh", v1alpha1.PushPublished, "Published")

	// Back to Replace: the PushSecret's own remote secret follows the
	// source again, and the other's is refused, untouched.
	updateSecret(t, ns, "src", func(s *corev1.Secret) { s.Data["k"] = []byte("again") })
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) { ps.Spec.UpdatePolicy = v1alpha1.PushUpdateReplace })
	waitSecretData(t, remote, "fresh", map[string]string{"k": "again"})
	destinationState(t, ns, "p", "theirs", v1alpha1.PushNotOwned, "NotOwned")
	waitSecretData(t, remote, "theirs", map[string]string{"k": "theirs"})

	// Deleting the PushSecret (deletionPolicy Delete) deletes only the
	// remote secret it created.
	must(t, k8s.Delete(ctx, getPush(t, ns, "p")))
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "fresh"}})
	waitSecretData(t, remote, "theirs", map[string]string{"k": "theirs"})
}

// A PushSecret created with IfNotExists and deleted deletes the remote
// secret it created, and never one that existed before it.
func TestPushIfNotExistsDeletesOnlyWhatItCreated(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "theirs"},
		StringData: map[string]string{"k": "theirs"}}))
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushUpdate(v1alpha1.PushUpdateIfNotExists), pushTo("theirs"), pushTo("fresh"))
	waitPushReady(t, ns, "p")
	destinationState(t, ns, "p", "theirs", v1alpha1.PushExists, "Exists")
	waitSecretData(t, remote, "fresh", map[string]string{"k": "v"})
	ps := getPush(t, ns, "p")
	must(t, k8s.Delete(ctx, ps))
	waitGone(t, ps)
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "fresh"}})
	waitSecretData(t, remote, "theirs", map[string]string{"k": "theirs"})
}

// An unknown updatePolicy is refused at admission, saying which values
// are allowed.
func TestPushUpdatePolicyRefusedAtAdmission(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	ps := &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: v1alpha1.PushSecretSpec{SecretName: "src",
		UpdatePolicy: "Sometimes", Destinations: []v1alpha1.PushSecretDestination{{Name: "d"}}}}
	err := k8s.Create(context.Background(), ps)
	if err == nil || !strings.Contains(err.Error(), "spec.updatePolicy") || !strings.Contains(err.Error(), `"Replace", "IfNotExists"`) {
		t.Fatalf("an unknown updatePolicy was not refused clearly: %v", err)
	}
}

// A PushSecret without data publishes every key of its Secret under its
// own name: a key added is published, a key removed leaves the remote
// secret.
func TestPushWithoutDataPublishesEveryKey(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"a": "1", "b.txt": "2"})
	newPush(t, ns, "p", "src", pushTo("all"))
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "all", map[string]string{"a": "1", "b.txt": "2"})
	updateSecret(t, ns, "src", func(s *corev1.Secret) {
		s.Data["c"] = []byte("3")
		delete(s.Data, "a")
	})
	waitSecretData(t, remote, "all", map[string]string{"b.txt": "2", "c": "3"})
	waitEvent(t, ns, "p", "Published", "published keys b.txt, c to remote secret")
}

// TestPushIfNotExistsStoreSwappedKeepsTheRemoteSecret: with updatePolicy
// IfNotExists, a destination's store swapped for one that points at the
// same place finds the remote secret there and leaves it; the removed
// destination's cleanup recognises it as the current one's and deletes
// nothing, even after the source changed (the remote no longer holds the
// source's data, as IfNotExists allows).
func TestPushIfNotExistsStoreSwappedKeepsTheRemoteSecret(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "a", remote)
	publisherStore(t, ns, "same-place", remote)
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushTo("d", viaStore("SecretStore", "a")), func(ps *v1alpha1.PushSecret) {
		ps.Spec.UpdatePolicy = v1alpha1.PushUpdateIfNotExists
	})
	waitPushReady(t, ns, "p")
	first := waitSecretData(t, remote, "d", map[string]string{"k": "v"})
	updateSecret(t, ns, "src", func(s *corev1.Secret) { s.Data["k"] = []byte("v2") })
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations[0].ConfigRef = &v1alpha1.StoreRef{Kind: "SecretStore", Name: "same-place"}
	})
	eventually(t, wait, func() (bool, string) {
		st := getPush(t, ns, "p").Status.Destinations
		return len(st) == 1 && st[0].StoreName == "same-place", fmt.Sprintf("destinations %+v", st)
	})
	consistently(t, 3*time.Second, func() (bool, string) {
		s, err := getSecret(remote, "d")
		return err == nil && s.UID == first.UID && string(s.Data["k"]) == "v", fmt.Sprintf("the remote Secret after the swap: %v", err)
	})
}
