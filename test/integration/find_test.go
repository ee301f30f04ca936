package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

func withFind(find v1alpha1.ExternalSecretFind, rewrites ...v1alpha1.ExternalSecretRewrite) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.DataFrom = append(es.Spec.DataFrom, v1alpha1.ExternalSecretDataFrom{Find: &find, Rewrite: rewrites})
	}
}

func rewriteRule(source, target string) v1alpha1.ExternalSecretRewrite {
	return v1alpha1.ExternalSecretRewrite{RegExp: &v1alpha1.RewriteRegExp{Source: source, Target: target}}
}

// TestFindCopiesWhatMatchesAndCountsIt: a dataFrom find lists the store,
// copies each object it matches into the Secret key of its name as the
// rewrites rename it, and the status counts the matches of every find;
// one that matches nothing is told in Ready's message.
func TestFindCopiesWhatMatchesAndCountsIt(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store",
		fakeEntry{key: "app/db-user", value: "app-user"},
		fakeEntry{key: "app/db-password", value: "first-password"},
		fakeEntry{key: "app/db-password", value: "second-password"},
		fakeEntry{key: "app/web-token", value: "web-token-value"},
		fakeEntry{key: "other/db-user", value: "other-user"})
	newES(t, ns, "found", "store",
		withFind(v1alpha1.ExternalSecretFind{Path: "app/", Name: &v1alpha1.FindName{RegExp: "/db-"}}, rewriteRule("^app/db-", "")),
		withFind(v1alpha1.ExternalSecretFind{Path: "missing/"}))
	waitSecretData(t, ns, "found", map[string]string{"user": "app-user", "password": "second-password"})
	es := waitReady(t, ns, "found")
	want := []v1alpha1.FoundCount{{DataFrom: 0, Matched: 2}, {DataFrom: 1, Matched: 0}}
	if !slices.Equal(es.Status.Found, want) {
		t.Errorf("status.found = %v, want %v", es.Status.Found, want)
	}
	if msg := readyCond(es).Message; !strings.Contains(msg, "dataFrom[1].find matched no remote object") {
		t.Errorf("Ready's message %q does not tell that dataFrom[1] matched nothing", msg)
	}
	versions := map[string]string{}
	for _, v := range es.Status.Versions {
		versions[v.Key] = v.Version
	}
	if len(versions) != 2 || versions["app/db-password"] != "2" || versions["app/db-user"] != "1" {
		t.Errorf("status.versions = %v, want the two matched objects at their current versions", es.Status.Versions)
	}
}

// TestFindRefusesACollisionByName: two matched objects that end at one
// Secret key fail the sync with both names, never a value.
func TestFindRefusesACollisionByName(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "a/b", value: "value-one"}, fakeEntry{key: "a_b", value: "value-two"})
	newES(t, ns, "clash", "store", withFind(v1alpha1.ExternalSecretFind{Path: "a"}))
	es := waitCondition(t, ns, "clash", "PropertyError", `remote key "a/b"`, `remote key "a_b"`, `Secret key "a_b"`)
	if msg := readyCond(es).Message; strings.Contains(msg, "value-one") || strings.Contains(msg, "value-two") {
		t.Errorf("Ready's message %q holds a value", msg)
	}
}

// TestFindOfAWatchedStoreFollowsNewMatches: a find of a kubernetes store
// that watches its namespace refreshes at once when a Secret it would
// match appears, or one it matched changes, long before its hourly
// refresh, and an event tells the new count (never the names).
func TestFindOfAWatchedStoreFollowsNewMatches(t *testing.T) {
	parallel(t)
	ns, src := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "watcher-token", map[string]string{"token": watcherToken(t, src)})
	createSecret(t, src, "app-db", map[string]string{"password": "one"})
	kubeStore(t, ns, "watched", src, "watcher-token")
	newES(t, ns, "found", "watched", withRefresh(time.Hour),
		withFind(v1alpha1.ExternalSecretFind{Path: "app-"}, rewriteRule("^app-", "")))
	waitSecretData(t, ns, "found", map[string]string{"db": `{"password":"one"}`})
	waitWatchState(t, ns, "watched", conditions.WatchActive)

	createSecret(t, src, "app-cache", map[string]string{"password": "two"})
	waitSecretData(t, ns, "found", map[string]string{"db": `{"password":"one"}`, "cache": `{"password":"two"}`})
	waitEvent(t, ns, "found", "FindMatchesChanged", "dataFrom[0].find matched 2 remote objects (was 1)")
	updateSecret(t, src, "app-db", func(s *corev1.Secret) { s.Data["password"] = []byte("three") })
	waitSecretData(t, ns, "found", map[string]string{"db": `{"password":"three"}`, "cache": `{"password":"two"}`})
	if es := waitReady(t, ns, "found"); len(es.Status.Found) != 1 || es.Status.Found[0].Matched != 2 {
		t.Errorf("status.found = %v, want one find that matched 2", es.Status.Found)
	}
}
