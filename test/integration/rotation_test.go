package integration

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// TestRotationIsReportedAsSuch: of the syncs that change a target, only
// new data from the store is a rotation, with its event, status and
// metric; a first sync, a drift repair and a spec change are reported as
// what they are and leave lastRotationTime alone.
func TestRotationIsReportedAsSuch(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"password": "one", "user": "app"})
	kubeStore(t, ns, "remote", src, "reader-token")
	rotations := metrics.Rotations.WithLabelValues("kubernetes", v1alpha1.SecretStoreKind, ns+"/remote")
	before := testutil.ToFloat64(rotations)

	newES(t, ns, "rot", "remote", withRefresh(2*time.Second), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "rot", map[string]string{"password": "one"})
	waitEvent(t, ns, "rot", "Created", "keys: password")

	// Someone edits the target: repaired, not a rotation.
	updateSecret(t, ns, "rot", func(s *corev1.Secret) { s.Data["password"] = []byte("tampered") })
	waitEvent(t, ns, "rot", "DriftRepaired", "keys restored: password")
	waitSecretData(t, ns, "rot", map[string]string{"password": "one"})
	if es := getES(t, ns, "rot"); es.Status.LastRotationTime != nil {
		t.Errorf("lastRotationTime = %v after a first sync and a drift repair", es.Status.LastRotationTime)
	}

	// The store's data changes: a rotation, naming the key and the new
	// version of the remote object.
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["password"] = []byte("two") })
	waitSecretData(t, ns, "rot", map[string]string{"password": "two"})
	up, err := getSecret(src, "upstream")
	must(t, err)
	waitEvent(t, ns, "rot", "Rotated", "keys changed: password; new versions: upstream@"+up.ResourceVersion)
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "rot")
		return es.Status.LastRotationTime != nil, "status.lastRotationTime is not set"
	})
	if keys := getES(t, ns, "rot").Status.LastRotatedKeys; len(keys) != 1 || keys[0] != "password" {
		t.Errorf("status.lastRotatedKeys = %v, want [password]", keys)
	}
	if got := testutil.ToFloat64(rotations); got != before+1 {
		t.Errorf("watchword_rotations_total grew by %v, want 1", got-before)
	}
	rotated := getES(t, ns, "rot").Status.LastRotationTime

	// A spec change is an update, not a rotation.
	updateES(t, ns, "rot", withData("user", "upstream", "user"))
	waitSecretData(t, ns, "rot", map[string]string{"password": "two", "user": "app"})
	waitEvent(t, ns, "rot", "Updated", "keys changed: user")
	if es := getES(t, ns, "rot"); !es.Status.LastRotationTime.Equal(rotated) {
		t.Errorf("a spec change moved lastRotationTime from %v to %v", rotated, es.Status.LastRotationTime)
	}
	if got := testutil.ToFloat64(rotations); got != before+1 {
		t.Errorf("watchword_rotations_total grew by %v after a spec change, want 1 in all", got-before)
	}
}
