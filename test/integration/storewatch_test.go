package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

// watcherToken returns a token of a service account that may get, list
// and watch the Secrets of ns: what a kubernetes store needs to have its
// changes watched.
func watcherToken(t *testing.T, ns string) string {
	t.Helper()
	return accountToken(t, ns, secretsAccount(t, ns, "watcher", "get", "list", "watch"))
}

// waitWatchState waits until the store's ChangesWatched condition has
// the reason.
func waitWatchState(t *testing.T, ns, name, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	eventually(t, wait, func() (bool, string) {
		var s v1alpha1.SecretStore
		must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s))
		got = meta.FindStatusCondition(s.Status.Conditions, conditions.ChangesWatched)
		return got != nil && got.Reason == reason, fmt.Sprintf("store %s/%s: ChangesWatched %+v, want reason %s", ns, name, got, reason)
	})
	return got
}

// settledReadCount waits until the store has not been read for two
// seconds (four times the delay of a notified refresh), and returns how
// many times it was read.
func settledReadCount(t *testing.T, store string) int {
	t.Helper()
	n, since := readCount(store), time.Now()
	eventually(t, wait, func() (bool, string) {
		if m := readCount(store); m != n {
			n, since = m, time.Now()
		}
		return time.Since(since) >= 2*time.Second, fmt.Sprintf("store %s is still being read (%d reads)", store, n)
	})
	return n
}

func TestKubernetesStoreWatchRefreshesAtOnce(t *testing.T) {
	parallel(t)
	// The ExternalSecret refreshes once an hour, and nothing the operator
	// watches for its own sake changes with the remote Secret: only the
	// store's watch can bring the new value within the test.
	ns, src := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "watcher-token", map[string]string{"token": watcherToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"password": "one"})
	createSecret(t, src, "unrelated", map[string]string{"x": "0"})
	kubeStore(t, ns, "watched", src, "watcher-token")
	newES(t, ns, "follow", "watched", withRefresh(time.Hour), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "follow", map[string]string{"password": "one"})
	if c := waitWatchState(t, ns, "watched", conditions.WatchActive); c.Status != metav1.ConditionTrue {
		t.Fatalf("ChangesWatched %+v, want True", c)
	}
	// The watch's start refreshes the ExternalSecret once more (what
	// changed before the watch was in place is not known): counted from
	// after that read.
	before := settledReadCount(t, ns+"/watched")

	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["password"] = []byte("two") })
	waitSecretData(t, ns, "follow", map[string]string{"password": "two"})
	waitEvent(t, ns, "follow", "Rotated", "keys changed: password")

	// Changes of a Secret that nobody reads make no reads; the rotation
	// made one (or two, should the first sync's own write of the
	// ExternalSecret race with the notice).
	for i := range 5 {
		updateSecret(t, src, "unrelated", func(s *corev1.Secret) { s.Data["x"] = []byte(fmt.Sprint(i + 1)) })
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		n := readCount(ns+"/watched") - before
		return n >= 1 && n <= 2, fmt.Sprintf("%d reads of the store for one change of one key read by one ExternalSecret", n)
	})
}

func TestKubernetesStoreWithoutWatchRightsIsPolled(t *testing.T) {
	parallel(t)
	// readerToken may only get Secrets: the store says its changes are
	// not watched, and syncing goes on.
	ns, src := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"password": "one"})
	kubeStore(t, ns, "polled", src, "reader-token")
	newES(t, ns, "poll", "polled", withRefresh(2*time.Second), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "poll", map[string]string{"password": "one"})
	c := waitWatchState(t, ns, "polled", conditions.WatchDenied)
	if c.Status != metav1.ConditionFalse {
		t.Fatalf("ChangesWatched %+v, want False", c)
	}
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["password"] = []byte("two") })
	waitSecretData(t, ns, "poll", map[string]string{"password": "two"})
	if es := waitReady(t, ns, "poll"); readyCond(es) == nil {
		t.Fatalf("the ExternalSecret is not ready: %s", describeES(es))
	}
}

func TestNoWatchForAStoreNobodyReads(t *testing.T) {
	parallel(t)
	ns, src := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "watcher-token", map[string]string{"token": watcherToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"password": "one"})
	kubeStore(t, ns, "idle", src, "watcher-token")
	if c := waitWatchState(t, ns, "idle", conditions.WatchUnneeded); c.Status != metav1.ConditionFalse {
		t.Fatalf("ChangesWatched %+v, want False", c)
	}
	// A reader starts the watch; without it again, the watch stops.
	newES(t, ns, "reader", "idle", withRefresh(time.Hour), withData("password", "upstream", "password"))
	waitWatchState(t, ns, "idle", conditions.WatchActive)
	must(t, k8s.Delete(context.Background(), &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}))
	waitWatchState(t, ns, "idle", conditions.WatchUnneeded)
}
