package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// vaultData reads the current data of a KV v2 secret under the mount
// "secret"; found is false when it does not exist.
func vaultData(t *testing.T, path string) (data map[string]any, version int, found bool) {
	t.Helper()
	var out struct {
		Data struct {
			Data     map[string]any `json:"data"`
			Metadata struct {
				Version int `json:"version"`
			} `json:"metadata"`
		} `json:"data"`
	}
	if err := vaultSrv.Do(http.MethodGet, "secret/data/"+path, nil, &out); err != nil {
		return nil, 0, false
	}
	return out.Data.Data, out.Data.Metadata.Version, out.Data.Data != nil
}

func TestVaultPushPublishesRefusesAndUnpublishes(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	createSecret(t, ns, "src", map[string]string{"password": sentinel, "user": "app"})
	vaultPut(t, ns+"/foreign", map[string]any{"password": "theirs"})
	via := viaStore("SecretStore", "vault")
	newPush(t, ns, "p", "src", pushKey("password", "db-password"), pushTo(ns+"/pub", via))
	ps := waitPushReady(t, ns, "p")
	eventually(t, wait, func() (bool, string) {
		data, _, found := vaultData(t, ns+"/pub")
		return found && data["db-password"] == sentinel && len(data) == 1, fmt.Sprintf("found %v with %d fields", found, len(data))
	})
	if d := ps.Status.Destinations; len(d) != 1 || d[0].Version != "1" || d[0].StoreName != "vault" {
		t.Errorf("destination status %+v", d)
	}

	// An unmarked secret is refused, and metadata a Vault secret cannot
	// hold is too; neither changes what is already published.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations,
			v1alpha1.PushSecretDestination{Name: ns + "/foreign", ConfigRef: &v1alpha1.StoreRef{Name: "vault"}},
			v1alpha1.PushSecretDestination{Name: ns + "/labelled", ConfigRef: &v1alpha1.StoreRef{Name: "vault"},
				Metadata: v1alpha1.PushSecretMetadata{Labels: map[string]string{"team": "a"}}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", `Vault secret "`+ns+`/foreign"`, "no Watchword ownership marker", "1 of 3 destinations published")
	eventually(t, wait, func() (bool, string) {
		for _, d := range getPush(t, ns, "p").Status.Destinations {
			if d.Name == ns+"/labelled" {
				return d.State == v1alpha1.PushFailed && d.Reason == "NotSupported", fmt.Sprintf("%+v", d)
			}
		}
		return false, "no status of the labelled destination"
	})
	if data, _, _ := vaultData(t, ns+"/foreign"); data["password"] != "theirs" {
		t.Error("an unmarked Vault secret was written over")
	}

	// Deleting the PushSecret deletes what it owns, and only that.
	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, _, found := vaultData(t, ns+"/pub"); found {
		t.Error("the published Vault secret is still there")
	}
	if data, _, _ := vaultData(t, ns+"/foreign"); data["password"] != "theirs" {
		t.Error("an unmarked Vault secret was deleted")
	}
}

// TestVaultPublishFromAFakeStoreWritesNoSecret: an ExternalSecret of
// creationPolicy None publishes what it reads from a fake store to Vault;
// no Secret of the API server holds the value.
func TestVaultPublishFromAFakeStoreWritesNoSecret(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	// Other tests hold the sentinel in Secrets of their own: this value
	// is this test's alone.
	value := sentinel + "-" + ns
	fakeStore(t, ns, "source", fakeEntry{key: "db", value: value})
	vaultPut(t, ns+"/foreign", map[string]any{"password": "theirs"})
	newES(t, ns, "db", "source", withData("password", "db", ""), withTarget("", v1alpha1.CreationPolicyNone),
		publishTo(ns+"/db", publishVia("vault")))
	es := waitReady(t, ns, "db")
	eventually(t, wait, func() (bool, string) {
		data, _, found := vaultData(t, ns+"/db")
		return found && data["password"] == value && len(data) == 1, fmt.Sprintf("found %v with %d fields", found, len(data))
	})
	if e := publishedEntry(es, ns+"/db"); e == nil || e.Version != "1" || e.StoreName != "vault" {
		t.Errorf("publishedTo %+v", es.Status.PublishedTo)
	}
	if holding := secretsHolding(t, value); len(holding) != 0 {
		t.Errorf("Secrets of the API server hold the value: %v", holding)
	}

	// An unmarked Vault secret is refused.
	newES(t, ns, "foreign", "source", withData("password", "db", ""), withTarget("", v1alpha1.CreationPolicyNone),
		publishTo(ns+"/foreign", publishVia("vault")))
	waitCondition(t, ns, "foreign", "NotOwned", `Vault secret "`+ns+`/foreign"`, "no Watchword ownership marker")
	if data, _, _ := vaultData(t, ns+"/foreign"); data["password"] != "theirs" {
		t.Error("an unmarked Vault secret was written over")
	}

	// Deleting the ExternalSecret deletes what it owns, and only that.
	must(t, k8s.Delete(context.Background(), getES(t, ns, "db")))
	waitGone(t, es)
	if _, _, found := vaultData(t, ns+"/db"); found {
		t.Error("the published Vault secret is still there")
	}
	foreign := getES(t, ns, "foreign")
	must(t, k8s.Delete(context.Background(), foreign))
	waitGone(t, foreign)
	if data, _, _ := vaultData(t, ns+"/foreign"); data["password"] != "theirs" {
		t.Error("an unmarked Vault secret was deleted")
	}
}

// TestVaultTenantsSharingAClusterStoreStayApart: through one Vault
// ClusterSecretStore, publishers of two namespaces that choose the same
// name land under their own parent paths (<mount>/<namespace>/), and a
// secret outside their scope is out of reach even with adopt.
func TestVaultTenantsSharingAClusterStoreStayApart(t *testing.T) {
	parallel(t)
	needVault(t)
	ops := newNamespace(t, nil)
	a, b := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ops, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	store := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: "vault-" + ops},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2",
			Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault-token", Key: "token", Namespace: ops}}}}}}
	must(t, k8s.Create(context.Background(), store))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), store) })
	vaultPut(t, "creds-"+a, map[string]any{"password": "outside every scope"})
	createSecret(t, a, "src", map[string]string{"password": sentinel + "-a"})
	createSecret(t, b, "src", map[string]string{"password": sentinel + "-b"})
	via := viaStore("ClusterSecretStore", store.Name)
	newPush(t, a, "p", "src", pushTo("creds", via))
	pb := newPush(t, b, "p", "src", pushTo("creds", via), pushTo("../creds-"+a, via, func(d *v1alpha1.PushSecretDestination) { d.Adopt = true }))
	waitPushReady(t, a, "p")
	for ns, want := range map[string]string{a: sentinel + "-a", b: sentinel + "-b"} {
		eventually(t, wait, func() (bool, string) {
			data, _, found := vaultData(t, ns+"/creds")
			return found && data["password"] == want, fmt.Sprintf("%s/creds: found %v", ns, found)
		})
	}
	eventually(t, wait, func() (bool, string) {
		for _, d := range getPush(t, b, "p").Status.Destinations {
			if d.Name == "../creds-"+a {
				return d.State == v1alpha1.PushFailed && d.Reason == "RemoteNameInvalid", fmt.Sprintf("%+v", d)
			}
		}
		return false, "no status of the destination outside the scope"
	})
	if data, _, _ := vaultData(t, "creds-"+a); data["password"] != "outside every scope" {
		t.Error("a publisher reached a Vault secret outside its scope")
	}
	must(t, k8s.Delete(context.Background(), pb))
	waitGone(t, pb)
	if _, _, found := vaultData(t, b+"/creds"); found {
		t.Error("b's published secret is still there after b's publisher went")
	}
	if data, _, _ := vaultData(t, a+"/creds"); data["password"] != sentinel+"-a" {
		t.Error("a's published secret changed when b's publisher went")
	}
}

// vaultCustomMetadata reads the custom metadata of a KV v2 secret under
// the mount "secret".
func vaultCustomMetadata(t *testing.T, path string) map[string]string {
	t.Helper()
	var out struct {
		Data struct {
			CustomMetadata map[string]string `json:"custom_metadata"`
		} `json:"data"`
	}
	must(t, vaultSrv.Do(http.MethodGet, "secret/metadata/"+path, nil, &out))
	return out.Data.CustomMetadata
}

// TestVaultPushTagsGoIntoCustomMetadata: a destination's tags land in the
// Vault secret's custom metadata beside the ownership marker; a tag that
// would replace the marker is refused, and a Kubernetes destination, which
// has no tags, refuses them too.
func TestVaultPushTagsGoIntoCustomMetadata(t *testing.T) {
	parallel(t)
	needVault(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	tags := func(m map[string]string) func(*v1alpha1.PushSecretDestination) {
		return func(d *v1alpha1.PushSecretDestination) { d.Metadata.Tags = m }
	}
	via := viaStore("SecretStore", "vault")
	newPush(t, ns, "p", "src", pushTo(ns+"/tagged", via, tags(map[string]string{"team": "payments", "env": "prod"})))
	waitPushReady(t, ns, "p")
	custom := vaultCustomMetadata(t, ns+"/tagged")
	if custom["team"] != "payments" || custom["env"] != "prod" || !strings.HasPrefix(custom["watchword-owner"], "PushSecret/"+ns+"/p/") {
		t.Errorf("custom metadata %v, want the tags and the marker", custom)
	}

	newPush(t, ns, "reserved", "src", pushTo(ns+"/reserved", via, tags(map[string]string{"watchword-owner": "me"})))
	waitPushCondition(t, ns, "reserved", "NotSupported", `tag "watchword-owner" is where Watchword keeps its ownership marker`)
	newPush(t, ns, "kube", "src", pushTo("tagged", tags(map[string]string{"team": "payments"})))
	waitPushCondition(t, ns, "kube", "NotSupported", "a Kubernetes Secret has no tags; use metadata.labels instead")
	if _, err := getSecret(remote, "tagged"); err == nil {
		t.Error("a Kubernetes destination with tags was published")
	}
}

// TestVaultDefaultScopeIsAParentPath: a Vault SecretStore's defaultScope is
// a parent path under its mount for what its publishers write.
func TestVaultDefaultScopeIsAParentPath(t *testing.T) {
	parallel(t)
	needVault(t)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	vaultStore(t, ns, "vault", tokenAuth("vault-token"), "v2")
	updateStore(t, ns, "vault", func(s *v1alpha1.SecretStore) { s.Spec.DefaultScope = "scope-" + ns })
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushTo("creds", viaStore("SecretStore", "vault")))
	waitPushReady(t, ns, "p")
	if data, _, found := vaultData(t, "scope-"+ns+"/creds"); !found || data["password"] != sentinel {
		t.Errorf("scope-%s/creds: found %v", ns, found)
	}
	if _, _, found := vaultData(t, "creds"); found {
		t.Error("the secret was written outside the store's default scope")
	}
}
