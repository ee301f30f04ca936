package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/conjurfake"
)

// The Conjur tests run against test/conjurfake, a strict loopback fake of
// Conjur's REST API (Conjur cannot run here), reached by the operator's
// conjur provider over TLS with the fake's CA as the store's caBundle.

var (
	conjurOnce sync.Once
	conjurFake *conjurfake.Server
)

func needConjur() *conjurfake.Server {
	conjurOnce.Do(func() { conjurFake = conjurfake.Start("myorg") })
	return conjurFake
}

func conjurStore(t *testing.T, ns, name string, auth v1alpha1.ConjurAuth) {
	t.Helper()
	spec := &v1alpha1.ConjurProvider{URL: conjurFake.URL, CABundle: conjurFake.CA, Auth: auth}
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Conjur: spec}}}))
}

func TestConjurVariablesSyncAndARotatedAPIKeyKeepsTheTarget(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake := needConjur()
	login, key := "host/"+ns+"/app", "api-key-"+ns
	fake.AddAPIKey(login, key, "")
	id := ns + "/db/password"
	fake.Set(id, []byte("old"))
	fake.Set(id, []byte(sentinel))
	fake.Set(ns+"/settings", []byte(`{"mode":"blue"}`))
	createSecret(t, ns, "conjur-host", map[string]string{"login": login, "apikey": key})
	conjurStore(t, ns, "conjur", v1alpha1.ConjurAuth{APIKey: &v1alpha1.ConjurAPIKeyAuth{Account: "myorg",
		UserRef: v1alpha1.SecretKeySelector{Name: "conjur-host", Key: "login"}, APIKeyRef: v1alpha1.SecretKeySelector{Name: "conjur-host", Key: "apikey"}}})
	newES(t, ns, "es", "conjur", withData("password", id, ""), withData("mode", ns+"/settings", "mode"))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "mode": "blue"})
	es := waitReady(t, ns, "es")
	if v := versionOf(es, id); v != "2" {
		t.Errorf("status version of %s %q; want Conjur's version 2", id, v)
	}

	// The host's API key is rotated in Conjur, and the access token
	// refused: the condition names the Secret, and the target keeps what
	// it held.
	fake.RotateAPIKey(login, key+"-rotated")
	fake.ExpireTokens()
	fake.Set(ns+"/settings", []byte(`{"mode":"green"}`))
	forceSync(t, ns, "es")
	es = waitCondition(t, ns, "es", "PermissionDenied", "HTTP 401", `key "apikey" of Secret "`+ns+`/conjur-host"`)
	if msg := readyCond(es).Message; strings.Contains(msg, key) || strings.Contains(msg, sentinel) {
		t.Error("the condition holds the API key or a value")
	}
	consistently(t, 2*wait/10, func() (bool, string) {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "es"}, &s); err != nil {
			return false, err.Error()
		}
		return string(s.Data["password"]) == sentinel && string(s.Data["mode"]) == "blue", "the target changed"
	})

	// The new key in the Secret rebuilds the client, and the sync resumes.
	updateSecret(t, ns, "conjur-host", func(s *corev1.Secret) { s.Data["apikey"] = []byte(key + "-rotated") })
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "mode": "green"})
}

func TestConjurJWTWithAServiceAccountToken(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake := needConjur()
	ctx := context.Background()
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	// authn-jwt takes the host from the token's subject: a token the API
	// server issued for the service account.
	fake.AddJWTSubject("kubernetes", fmt.Sprintf("system:serviceaccount:%s:app", ns), "host/"+ns+"/app")
	fake.Set(ns+"/token", []byte(sentinel))
	conjurStore(t, ns, "conjur", v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{Account: "myorg", ServiceID: "kubernetes",
		ServiceAccountRef: &v1alpha1.ServiceAccountSelector{Name: "app", Audiences: []string{"conjur"}}}})
	newES(t, ns, "es", "conjur", withData("token", ns+"/token", ""))
	waitSecretData(t, ns, "es", map[string]string{"token": sentinel})

	// Another service account's token is refused, naming the account.
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	conjurStore(t, ns, "other", v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{Account: "myorg", ServiceID: "kubernetes",
		ServiceAccountRef: &v1alpha1.ServiceAccountSelector{Name: "intruder", Audiences: []string{"conjur"}}}})
	newES(t, ns, "es2", "other", withData("token", ns+"/token", ""))
	waitCondition(t, ns, "es2", "PermissionDenied", "HTTP 401", `service account "`+ns+`/intruder"`, "authn-jwt/kubernetes")
}
