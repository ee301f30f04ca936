package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

func TestStoreChangeRotatesTargetAndRecordsVersion(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v1"})
	newES(t, ns, "rot", "store", withData("k", "k", ""))
	waitSecretData(t, ns, "rot", map[string]string{"k": "v1"})
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: "k", Value: "v2"})
	})
	waitSecretData(t, ns, "rot", map[string]string{"k": "v2"})
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "rot")
		return len(es.Status.Versions) == 1 && es.Status.Versions[0].Version == "2", "status.versions does not show version 2"
	})
}

func TestRefreshIntervalFollowsRemoteChanges(t *testing.T) {
	parallel(t)
	// The kubernetes provider reads Secrets of another namespace; changing
	// one changes nothing the operator watches, so only the periodic
	// refresh can bring the new value.
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	token := readerToken(t, src)
	createSecret(t, ns, "reader-token", map[string]string{"token": token})
	createSecret(t, src, "upstream", map[string]string{"password": "one"})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "follow", "remote", withRefresh(2*time.Second), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "follow", map[string]string{"password": "one"})
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["password"] = []byte("two") })
	waitSecretData(t, ns, "follow", map[string]string{"password": "two"})
	up, err := getSecret(src, "upstream")
	must(t, err)
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "follow")
		return len(es.Status.Versions) == 1 && es.Status.Versions[0].Version == up.ResourceVersion,
			"status.versions does not show the source Secret's resourceVersion"
	})
}

func TestForceSyncAnnotationReadsNow(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"v": "old"})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "forced", "remote", withData("v", "upstream", "v")) // refreshes hourly
	waitSecretData(t, ns, "forced", map[string]string{"v": "old"})
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["v"] = []byte("new") })
	updateES(t, ns, "forced", func(es *v1alpha1.ExternalSecret) {
		if es.Annotations == nil {
			es.Annotations = map[string]string{}
		}
		es.Annotations[conditions.ForceSyncAnnotation] = time.Now().Format(time.RFC3339Nano)
	})
	waitSecretData(t, ns, "forced", map[string]string{"v": "new"})
}

func TestDriftIsRepairedWithoutCallingTheProvider(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "k", value: "v"})
	newES(t, ns, "drift", "store", withData("k", "k", ""))
	waitReady(t, ns, "drift")
	waitSecretData(t, ns, "drift", map[string]string{"k": "v"})
	before := readCount(ns + "/store")

	updateSecret(t, ns, "drift", func(s *corev1.Secret) { s.Data["k"] = []byte("tampered"); s.Data["extra"] = []byte("x") })
	waitSecretData(t, ns, "drift", map[string]string{"k": "v"})

	s, err := getSecret(ns, "drift")
	must(t, err)
	must(t, k8s.Delete(context.Background(), s))
	eventually(t, wait, func() (bool, string) {
		again, err := getSecret(ns, "drift")
		return err == nil && again.UID != s.UID && string(again.Data["k"]) == "v", "target not restored"
	})
	if after := readCount(ns + "/store"); after != before {
		t.Fatalf("drift repair made %d provider reads, want 0 (the last read is still fresh)", after-before)
	}
}

func TestRefreshIntervalZeroSyncsOnce(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"v": "first"})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "once", "remote", withRefresh(0), withData("v", "upstream", "v"))
	waitSecretData(t, ns, "once", map[string]string{"v": "first"})
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "once")
		return es.Status.Phase == v1alpha1.PhaseCompleted, "phase is " + string(es.Status.Phase)
	})
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["v"] = []byte("second") })
	consistently(t, 3*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "once")
		return err == nil && string(s.Data["v"]) == "first", "a sync-once ExternalSecret read again"
	})
	// A spec change syncs again.
	updateES(t, ns, "once", func(es *v1alpha1.ExternalSecret) { es.Spec.Data[0].SecretKey = "renamed" })
	waitSecretData(t, ns, "once", map[string]string{"renamed": "second"})
	if c := readyCond(getES(t, ns, "once")); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatal("not Ready after the spec change")
	}
}

// TestRejectedTargetIsSyncedAgainAtRefresh: the API server refuses a
// target made too large by the store's data, a terminal failure that no
// watch can end, since the store's data is the cause. It is synced again
// at the refresh interval all the same, and recovers once the data
// shrinks.
func TestRejectedTargetIsSyncedAgainAtRefresh(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	big := strings.Repeat("x", 600<<10)
	createSecret(t, src, "upstream", map[string]string{"v": big})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "twice", "remote", withRefresh(2*time.Second), withData("v", "upstream", "v"),
		withTemplate(&v1alpha1.ExternalSecretTemplate{Data: map[string]string{"a": "{{ .data.v }}", "b": "{{ .data.v }}"}}))
	es := waitCondition(t, ns, "twice", "TargetRejected", `Secret "twice"`)
	if s := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled); s == nil || !strings.Contains(s.Message, "checked again every 2s") {
		t.Errorf("Stalled = %+v, want it to say when it is checked again", s)
	}
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["v"] = []byte("small") })
	waitSecretData(t, ns, "twice", map[string]string{"a": "small", "b": "small"})
	waitReady(t, ns, "twice")
}
