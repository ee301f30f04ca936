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
	"github.com/watchword-dev/watchword/test/webhookserver"
)

// webhookStore creates a writable webhook SecretStore of the test API in
// ns, whose bearer token is the key "token" of the Secret "api".
func webhookStore(t *testing.T, ns, name string, api *webhookserver.Server) {
	t.Helper()
	createSecret(t, ns, "api", map[string]string{"token": api.Token})
	secretURL := api.URL + "/v1/secrets/{{ .remoteRef.key }}"
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Webhook: &v1alpha1.WebhookProvider{
			URL:     secretURL,
			Headers: map[string]string{"Authorization": "Bearer {{ .api.token }}"},
			Secrets: []v1alpha1.WebhookSecret{{Name: "api", SecretRef: v1alpha1.SecretKeySelector{Name: "api", Key: "token"}}},
			Result:  &v1alpha1.WebhookResult{JSONPath: "$.data", VersionHeader: "ETag"},
			Push: &v1alpha1.WebhookPush{
				Put: v1alpha1.WebhookRequest{Method: "PUT", URL: secretURL, Headers: map[string]string{"Content-Type": "application/json"},
					Body: `{"data": {{ .fields | toJson }}, "owner": {{ .owner | toJson }}}`},
				Delete:        &v1alpha1.WebhookRequest{Method: "DELETE", URL: secretURL},
				OwnerJSONPath: "$.owner",
			}}}}}))
}

// TestWebhookReadsAndFollowsChanges: an ExternalSecret reads properties
// of a secret of an HTTP API through a webhook store, with the ETag as its
// version, and follows a change; a key the API does not have is
// NotFound.
func TestWebhookReadsAndFollowsChanges(t *testing.T) {
	parallel(t)
	api := webhookserver.Start("tok-" + randomHex(t))
	defer api.Close()
	ns := newNamespace(t, nil)
	webhookStore(t, ns, "http", api)
	api.Seed("team a/db", map[string]string{"user": "app", "password": sentinel})
	newES(t, ns, "es", "http", withData("password", "team a/db", "password"), withData("user", "team a/db", "user"),
		withRefresh(2*time.Second))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "user": "app"})
	doc, _ := api.Get("team a/db")
	es := waitReady(t, ns, "es")
	if v := es.Status.Versions; len(v) != 1 || v[0].Version != fmt.Sprintf("%q", fmt.Sprint(doc.Version)) {
		t.Errorf("status versions %+v: expected the ETag %q", v, fmt.Sprint(doc.Version))
	}

	api.Seed("team a/db", map[string]string{"user": "app", "password": "second"})
	waitSecretData(t, ns, "es", map[string]string{"password": "second", "user": "app"})

	newES(t, ns, "missing", "http", withData("x", "nothing/here", ""))
	waitCondition(t, ns, "missing", "NotFound", `"nothing/here"`, "HTTP 404")
}

// TestWebhookPublishes: a PushSecret publishes a Secret to the API with
// its ownership marker, refuses a secret someone else wrote, follows a
// change of the source, and deletes what it published when it is
// deleted, leaving the other secret alone. No value reaches a condition.
func TestWebhookPublishes(t *testing.T) {
	parallel(t)
	api := webhookserver.Start("tok-" + randomHex(t))
	defer api.Close()
	ns := newNamespace(t, nil)
	webhookStore(t, ns, "http", api)
	api.Seed("team/foreign", map[string]string{"password": "theirs"})
	createSecret(t, ns, "src", map[string]string{"password": sentinel, "user": "app"})
	via := viaStore("SecretStore", "http")
	newPush(t, ns, "p", "src", pushTo("team/db", via), pushTo("team/foreign", via))
	ps := waitPushCondition(t, ns, "p", "NotOwned", `key "team/foreign"`, "no Watchword ownership marker")
	for _, c := range ps.Status.Conditions {
		if strings.Contains(c.Message, sentinel) || strings.Contains(c.Message, api.Token) {
			t.Errorf("condition %s holds a value: %s", c.Type, c.Message)
		}
	}
	eventually(t, wait, func() (bool, string) {
		d, ok := api.Get("team/db")
		return ok && d.Data["password"] == sentinel && d.Data["user"] == "app" && strings.HasPrefix(d.Owner, "PushSecret/"),
			fmt.Sprintf("published: %v, owner %q", ok, d.Owner)
	})
	// Another store of the API reads back what was published.
	newES(t, ns, "read-back", "http", withData("user", "team/db", "user"))
	waitSecretData(t, ns, "read-back", map[string]string{"user": "app"})

	updateSecret(t, ns, "src", func(sec *corev1.Secret) { sec.Data["password"] = []byte("rotated") })
	eventually(t, wait, func() (bool, string) {
		d, _ := api.Get("team/db")
		return d.Data["password"] == "rotated", "not yet rotated"
	})
	if d, _ := api.Get("team/foreign"); d.Data["password"] != "theirs" || d.Owner != "" {
		t.Errorf("the unmarked secret was changed")
	}

	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}})
	if _, ok := api.Get("team/db"); ok {
		t.Error("the published secret is left after the PushSecret was deleted")
	}
	if _, ok := api.Get("team/foreign"); !ok {
		t.Error("the unmarked secret was deleted")
	}
}

// TestWebhookReadsVaultsHTTPAPI points a webhook store at an API it was
// not written for, a real Vault server's KV v2 HTTP API, as a user would
// from docs/providers.md: the token in a header, the value at
// $.data.data, the version at $.data.metadata.version, and a pinned
// version asked for in the url.
func TestWebhookReadsVaultsHTTPAPI(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	key := "webhook/" + randomHex(t) + "/db"
	must(t, vaultSrv.PutKV2("secret", key, map[string]any{"user": "app", "password": "first"}))
	must(t, vaultSrv.PutKV2("secret", key, map[string]any{"user": "app", "password": sentinel}))
	createSecret(t, ns, "vault", map[string]string{"token": vaultSrv.RootToken})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-http"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Webhook: &v1alpha1.WebhookProvider{
			URL:     vaultSrv.Addr() + "/v1/secret/data/{{ .remoteRef.key }}{{ if .remoteRef.version }}?version={{ .remoteRef.version }}{{ end }}",
			Headers: map[string]string{"X-Vault-Token": "{{ .vault.token }}"},
			Secrets: []v1alpha1.WebhookSecret{{Name: "vault", SecretRef: v1alpha1.SecretKeySelector{Name: "vault", Key: "token"}}},
			Result:  &v1alpha1.WebhookResult{JSONPath: "$.data.data", VersionJSONPath: "$.data.metadata.version"},
		}}}}))
	newES(t, ns, "current", "vault-http", withData("password", key, "password"), withDataFrom(key, ""))
	pinned := func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "password",
			RemoteRef: v1alpha1.RemoteReference{Key: key, Property: "password", Version: "1"}})
	}
	newES(t, ns, "pinned", "vault-http", pinned)
	waitSecretData(t, ns, "current", map[string]string{"password": sentinel, "user": "app"})
	waitSecretData(t, ns, "pinned", map[string]string{"password": "first"})
	if v := waitReady(t, ns, "current").Status.Versions; len(v) == 0 || v[0].Version != "2" {
		t.Errorf("status versions %+v: expected Vault's version 2", v)
	}
	newES(t, ns, "missing", "vault-http", withData("x", "webhook/nothing-here", ""))
	waitCondition(t, ns, "missing", "NotFound", "HTTP 404")
}
