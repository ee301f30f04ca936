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
	"github.com/watchword-dev/watchword/internal/provider/onepassword"
	"github.com/watchword-dev/watchword/test/onepasswordfake"
)

// The 1Password tests run against test/onepasswordfake, a strict loopback
// fake of the 1Password Connect server's REST API (the real one needs a
// 1Password account), reached by the operator's onepassword provider
// through 1Password's Connect SDK. Each test starts a fake of its own.

func onePasswordFake(t *testing.T, ns, token string) *onepasswordfake.Server {
	t.Helper()
	fake := onepasswordfake.Start(token)
	t.Cleanup(fake.Close)
	createSecret(t, ns, "op-token", map[string]string{"token": token})
	return fake
}

func onePasswordStore(t *testing.T, ns, name, host string, vaults map[string]int32) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{OnePassword: &v1alpha1.OnePasswordProvider{
			ConnectHost: host, Vaults: vaults,
			Auth: v1alpha1.OnePasswordAuth{SecretRef: v1alpha1.OnePasswordAuthSecretRef{
				ConnectToken: v1alpha1.SecretKeySelector{Name: "op-token", Key: "token"}}}}}}}))
}

// TestOnePasswordItemsSyncAndARevokedTokenKeepsTheTarget: an ExternalSecret
// reads fields of an item from the first vault (by priority) that holds it;
// a change of the item reaches the target; a revoked token gives a
// condition that names neither the token nor a value, the target keeps
// what it held, and a new token in the Secret resumes the sync.
func TestOnePasswordItemsSyncAndARevokedTokenKeepsTheTarget(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	token := "op-token-" + ns
	fake := onePasswordFake(t, ns, token)
	prod, shared := fake.AddVault("prod"), fake.AddVault("shared")
	fake.Put(shared, "database", map[string]string{"password": "from-the-second-vault", "username": "app"}, nil)
	fake.Put(prod, "database", map[string]string{"password": sentinel, "username": "app"}, nil)
	onePasswordStore(t, ns, "op", fake.URL, map[string]int32{"prod": 1, "shared": 2})
	newES(t, ns, "es", "op", withData("password", "database", "password"), withData("user", "database", "username"))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "user": "app"})
	waitReady(t, ns, "es")

	fake.Put(prod, "database", map[string]string{"password": sentinel + "-2", "username": "app"}, nil)
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel + "-2", "user": "app"})

	// The token is revoked: the condition says the store refused it.
	fake.SetToken(token + "-new")
	fake.Put(prod, "database", map[string]string{"password": "after-revocation", "username": "app"}, nil)
	forceSync(t, ns, "es")
	es := waitCondition(t, ns, "es", "PermissionDenied")
	if msg := readyCond(es).Message; strings.Contains(msg, token) || strings.Contains(msg, sentinel) {
		t.Error("the condition holds the token or a value")
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "es")
		return err == nil && string(s.Data["password"]) == sentinel+"-2", "the target changed while the token was refused"
	})

	// A new token in the Secret: the sync resumes.
	updateSecret(t, ns, "op-token", func(s *corev1.Secret) { s.Data["token"] = []byte(token + "-new") })
	waitSecretData(t, ns, "es", map[string]string{"password": "after-revocation", "user": "app"})
}

// TestOnePasswordPushSecretWritesItemsWithTheMarker: a PushSecret creates
// an item with Watchword's ownership field, refuses an item without it,
// and deleting the PushSecret deletes only the item it owns.
func TestOnePasswordPushSecretWritesItemsWithTheMarker(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake := onePasswordFake(t, ns, "op-token-"+ns)
	vault := fake.AddVault("prod")
	fake.Put(vault, "foreign", map[string]string{"password": "theirs"}, nil)
	onePasswordStore(t, ns, "op", fake.URL, map[string]int32{"prod": 1})
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	via := viaStore("SecretStore", "op")
	newPush(t, ns, "p", "src", pushKey("password", "password"), pushTo("published", via))
	ps := waitPushReady(t, ns, "p")
	owner := "PushSecret/" + ns + "/p/" + string(ps.UID)
	eventually(t, wait, func() (bool, string) {
		fields, _, ok := fake.Item(vault, "published")
		return ok && fields["password"] == sentinel && fields[onepassword.OwnerField] == owner,
			fmt.Sprintf("item found %v, owner field %q", ok, fields[onepassword.OwnerField])
	})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations, v1alpha1.PushSecretDestination{Name: "foreign", ConfigRef: &v1alpha1.StoreRef{Name: "op"}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", `"foreign"`, onepassword.OwnerField)
	if fields, _, _ := fake.Item(vault, "foreign"); fields["password"] != "theirs" || fields[onepassword.OwnerField] != "" {
		t.Error("an unmarked 1Password item was written over")
	}

	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, _, ok := fake.Item(vault, "published"); ok {
		t.Error("the published item is still there")
	}
	if fields, _, ok := fake.Item(vault, "foreign"); !ok || fields["password"] != "theirs" {
		t.Error("an unmarked 1Password item was deleted")
	}
}
