package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestOwnerCreatesTargetWithStatusAndEvent(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store",
		fakeEntry{key: "db", value: `{"user":"app","password":"pw-1","nested":{"port":5432}}`},
		fakeEntry{key: "db", value: `{"user":"app","password":"pw-2","nested":{"port":5432}}`},
		fakeEntry{key: "api", version: "v7", value: "token-abc"})
	newES(t, ns, "app", "store",
		withData("password", "db", "password"),
		withData("port", "db", "nested.port"),
		withData("token", "api", ""))
	es := waitReady(t, ns, "app")
	s := waitSecretData(t, ns, "app", map[string]string{"password": "pw-2", "port": "5432", "token": "token-abc"})

	ref := metav1.GetControllerOf(s)
	if ref == nil || ref.UID != es.UID || ref.Kind != "ExternalSecret" {
		t.Fatalf("target's controller reference = %+v, want the ExternalSecret", ref)
	}
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %s", s.Type)
	}
	if es.Status.Phase != v1alpha1.PhaseSyncing {
		t.Errorf("phase = %s, want Syncing", es.Status.Phase)
	}
	insync := es.Status.Conditions[0]
	for _, c := range es.Status.Conditions {
		if c.Type == v1alpha1.ConditionInSync {
			insync = c
		}
	}
	if insync.Type != v1alpha1.ConditionInSync || insync.Status != metav1.ConditionTrue || insync.LastSyncTime == nil {
		t.Errorf("InSync condition = %+v, want True with lastSyncTime", insync)
	}
	want := []v1alpha1.RemoteVersion{{Key: "api", Version: "v7"}, {Key: "db", Version: "2"}}
	if len(es.Status.Versions) != 2 || es.Status.Versions[0] != want[0] || es.Status.Versions[1] != want[1] {
		t.Errorf("status.versions = %v, want %v", es.Status.Versions, want)
	}
	if es.Status.RefreshTime == nil {
		t.Error("status.refreshTime is not set")
	}
	eventually(t, wait, func() (bool, string) {
		var evs corev1.EventList
		must(t, k8s.List(context.Background(), &evs, client.InNamespace(ns)))
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "app" && e.Reason == "Created" && strings.Contains(e.Message, "password, port, token") {
				return true, ""
			}
		}
		return false, "no Created event naming the keys"
	})
}

func TestOwnerRefusesSecretItDoesNotOwnUnlessAdopting(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"})
	createSecret(t, ns, "existing", map[string]string{"mine": "hands-off"})
	newES(t, ns, "grabber", "store", withTarget("existing", v1alpha1.CreationPolicyOwner), withData("k", "k", ""))
	waitCondition(t, ns, "grabber", "TargetConflict", `Secret "existing" already exists`, "spec.target.adopt")
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "existing")
		return err == nil && string(s.Data["mine"]) == "hands-off" && len(s.Data) == 1 && len(s.OwnerReferences) == 0, "the Secret was touched"
	})
	if es := getES(t, ns, "grabber"); es.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase = %s, want Failed", es.Status.Phase)
	}

	updateES(t, ns, "grabber", func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Adopt = true })
	es := waitReady(t, ns, "grabber")
	s := waitSecretData(t, ns, "existing", map[string]string{"k": "remote"})
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != es.UID {
		t.Fatalf("adopted Secret's controller = %+v", ref)
	}
}

// TestAdoptionNeverReplacesASecretOfAnotherType: adopt: true aimed at an
// ownerless Secret of another type (a Helm release's, a service-account
// token) deletes and re-creates nothing: the sync is refused with
// TargetConflict, stalled rather than retried, saying what to change, and
// the Secret keeps its UID and data.
func TestAdoptionNeverReplacesASecretOfAnotherType(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "remote"})
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	for _, tc := range []struct {
		name      string
		secret    *corev1.Secret
		fragments []string
	}{
		{"helm-release", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.app.v1", Labels: map[string]string{"owner": "helm"}},
			Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("chart")}},
			[]string{"helm.sh/release.v1", "never deletes", "spec.target.template.type"}},
		{"token", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"}},
			Type: corev1.SecretTypeServiceAccountToken},
			[]string{string(corev1.SecretTypeServiceAccountToken), "never writes or replaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, k8s.Create(ctx, tc.secret))
			newES(t, ns, tc.name, "store", withData("k", "k", ""), withTarget(tc.secret.Name, v1alpha1.CreationPolicyOwner),
				func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Adopt = true })
			es := waitCondition(t, ns, tc.name, "TargetConflict", tc.fragments...)
			t.Logf("refused: %s", readyCond(es).Message)
			if es.Status.Phase != v1alpha1.PhaseFailed {
				t.Errorf("phase = %s, want Failed (stalled, not retried)", es.Status.Phase)
			}
			consistently(t, 2*time.Second, func() (bool, string) {
				s, err := getSecret(ns, tc.secret.Name)
				return err == nil && s.UID == tc.secret.UID && s.Type == tc.secret.Type && len(s.OwnerReferences) == 0 && s.Labels["app.kubernetes.io/managed-by"] == "",
					"the Secret was replaced or written"
			})
		})
	}
}

func TestTwoWritersFirstKeepsWorking(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "from-first"}, fakeEntry{key: "b", value: "from-second"})
	newES(t, ns, "first", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns, "first")
	newES(t, ns, "second", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", ""))
	waitCondition(t, ns, "second", "TargetConflict", `ExternalSecret "first"`)
	waitSecretData(t, ns, "shared", map[string]string{"v": "from-first"})

	// The first keeps syncing: a change of its data still arrives.
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: "a", Value: "first-rotated"})
	})
	waitSecretData(t, ns, "shared", map[string]string{"v": "first-rotated"})
	if c := readyCond(getES(t, ns, "first")); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("first writer is not Ready: %+v", c)
	}
	waitCondition(t, ns, "second", "TargetConflict", `ExternalSecret "first"`)

	// When the first goes, its Secret goes with it and the second takes over.
	must(t, k8s.Delete(context.Background(), getES(t, ns, "first")))
	waitReady(t, ns, "second")
	waitSecretData(t, ns, "shared", map[string]string{"v": "from-second"})
}

func TestOwnedTargetIsGarbageCollected(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v"})
	es := newES(t, ns, "gone", "store", withData("k", "k", ""))
	waitReady(t, ns, "gone")
	s, err := getSecret(ns, "gone")
	must(t, err)
	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, s)
}

func TestRetainKeepsTargetAfterDeletion(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v"})
	es := newES(t, ns, "keeper", "store", withData("k", "k", ""), func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.DeletionPolicy = v1alpha1.DeletionPolicyRetain
	})
	waitReady(t, ns, "keeper")
	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, es)
	consistently(t, 3*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "keeper")
		if err != nil {
			return false, err.Error()
		}
		return len(s.OwnerReferences) == 0 && string(s.Data["k"]) == "v", "retained Secret lost its data or kept an owner"
	})
}

func TestNoneWritesNoSecret(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v"})
	newES(t, ns, "nothing", "store", withTarget("", v1alpha1.CreationPolicyNone), withData("k", "k", ""))
	es := waitReady(t, ns, "nothing")
	if _, err := getSecret(ns, "nothing"); err == nil {
		t.Fatal("creationPolicy None wrote a Secret")
	}
	if len(es.Status.Versions) != 1 || es.Status.Versions[0].Key != "k" {
		t.Fatalf("versions = %v", es.Status.Versions)
	}
}
