package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// digestKeySecret is the suite operator's digest key Secret, in default.
const digestKeySecret = "watchword-digest-key"

func digestKey(t *testing.T) (cur []byte, s *corev1.Secret) {
	t.Helper()
	s = &corev1.Secret{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: digestKeySecret}, s))
	return s.Data["key"], s
}

// TestDataHashIsKeyedAndARotationWritesNothing: the operator made its
// digest key (32 random bytes) and a PushSecret's status.dataHash is an
// HMAC under it, named by the key's ID and not the plain SHA-256 of
// before; after a rotation of the key (the old one kept as previous-key),
// the next reconcile records the hash under the new key and writes
// nothing to the store; a change of the data is still published.
//
// Serial: rotates the suite operator's digest key, under which every other test's digests are made.
func TestDataHashIsKeyedAndARotationWritesNothing(t *testing.T) {
	key, _ := digestKey(t)
	if len(key) != 32 {
		t.Fatalf("the operator's digest key holds %d bytes, want 32", len(key))
	}
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "db", map[string]string{"password": "hunter2"})
	newPush(t, ns, "db", "db", pushKey("password", ""), pushTo("app-db"))
	ps := waitPushReady(t, ns, "db")
	written := waitSecretData(t, remote, "app-db", map[string]string{"password": "hunter2"}).ResourceVersion
	first := engine.NewDigestKey(key)
	hash := ps.Status.Destinations[0].DataHash
	if !strings.HasPrefix(hash, "hmac-sha256:"+first.ID+":") {
		t.Fatalf("dataHash %q, want an HMAC under key %s", hash, first.ID)
	}

	// Rotate: the current key becomes the previous one.
	second := make([]byte, 32)
	_, _ = rand.Read(second)
	_, s := digestKey(t)
	s.Data["previous-key"], s.Data["key"] = s.Data["key"], second
	must(t, k8s.Update(context.Background(), s))
	t.Cleanup(func() {
		// The next test of the suite starts from one key, as a fresh
		// installation would.
		_, s := digestKey(t)
		delete(s.Data, "previous-key")
		_ = k8s.Update(context.Background(), s)
	})
	next := engine.NewDigestKey(second)
	// A reconcile (a new generation: its refresh interval) with nothing
	// changed in what is published, once the key was read again.
	time.Sleep(2 * time.Second)
	interval := time.Hour
	eventually(t, wait, func() (bool, string) {
		interval += time.Second
		updatePush(t, ns, "db", func(p *v1alpha1.PushSecret) { p.Spec.RefreshInterval = &metav1.Duration{Duration: interval} })
		time.Sleep(500 * time.Millisecond)
		h := getPush(t, ns, "db").Status.Destinations[0].DataHash
		return strings.HasPrefix(h, "hmac-sha256:"+next.ID+":"), fmt.Sprintf("dataHash %q, want one under the new key %s", h, next.ID)
	})
	if got, err := getSecret(remote, "app-db"); err != nil || got.ResourceVersion != written {
		t.Fatalf("the key's rotation wrote the remote Secret again (resourceVersion %s, was %s; %v)", got.ResourceVersion, written, err)
	}
	// New data is still published, under the new key.
	updateSecret(t, ns, "db", func(s *corev1.Secret) { s.Data["password"] = []byte("hunter3") })
	waitSecretData(t, remote, "app-db", map[string]string{"password": "hunter3"})
}
