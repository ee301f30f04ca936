package integration

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
	"github.com/watchword-dev/watchword/internal/provider/vault"
)

// kubeOps builds the kubernetes provider's operations for namespace ns,
// acting with token.
func kubeOps(t *testing.T, ns, token string) engine.Ops {
	t.Helper()
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: ns, Name: "kube",
		Spec: &v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{BearerToken: credRef}}}}}
	ops, err := kubeprovider.Factory{}.New(context.Background(), store, tokenDeps{token: token})
	must(t, err)
	return ops
}

// TestKubernetesListsByPrefixAndLabelsAsItsIdentityMay: the kubernetes
// store lists the Secrets of its namespace by name prefix and labels, with
// their resourceVersions, across pages; an identity that may get but not
// list Secrets is told it cannot list, by identity and verb.
func TestKubernetesListsByPrefixAndLabelsAsItsIdentityMay(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	ctx := context.Background()
	secrets := kube.CoreV1().Secrets(ns)
	versions := map[string]string{}
	for name, team := range map[string]string{"app-db": "a", "app-web": "b", "app-cache": "a", "other": "a"} {
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}},
			Data: map[string][]byte{"password": []byte("pw-" + name)}}, metav1.CreateOptions{})
		must(t, err)
		versions[name] = s.ResourceVersion
	}

	lister := kubeOps(t, ns, accountToken(t, ns, secretsAccount(t, ns, "lister", "get", "list"))).Lister
	items, err := engine.ListAll(ctx, lister, engine.ListRequest{Prefix: "app-", Tags: map[string]string{"team": "a"}, Limit: 1}, nil, 0)
	must(t, err)
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Version != versions[it.Key] {
			t.Errorf("Secret %s listed at version %q, its resourceVersion is %q", it.Key, it.Version, versions[it.Key])
		}
		if it.Tags["team"] != "a" {
			t.Errorf("Secret %s listed with labels %v, want team=a", it.Key, it.Tags)
		}
	}
	slices.Sort(got)
	if want := []string{"app-cache", "app-db"}; !slices.Equal(got, want) {
		t.Fatalf("listing prefix app- with team=a one at a time = %v, want %v", got, want)
	}

	getter := kubeOps(t, ns, accountToken(t, ns, secretsAccount(t, ns, "getter", "get"))).Lister
	_, err = getter.List(ctx, engine.ListRequest{})
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("listing as an identity that may only get: %v, want ErrPermissionDenied", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "serviceaccount:"+ns+":getter") || !strings.Contains(msg, `verb "list"`) {
		t.Errorf("the refusal %q does not name the identity and the verb", msg)
	}
}

// vaultOps builds the vault provider's operations for the KV v2 mount
// "secret" of the test server, acting with token.
func vaultOps(t *testing.T, token string) engine.Ops {
	t.Helper()
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "list", Name: "vault",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2", Auth: v1alpha1.VaultAuth{TokenSecretRef: &credRef}}}}
	ops, err := vault.Factory{}.New(context.Background(), store, tokenDeps{token: token})
	must(t, err)
	t.Cleanup(func() { _ = ops.Closer.Close() })
	return ops
}

// TestVaultListsRecursivelyWithMetadata: a KV v2 store lists the secrets
// under a prefix through its folders, in path order, a page at a time,
// with each one's current version and custom metadata (its tags, which a
// listing filters by); a secret whose current version is deleted is not
// listed, since it cannot be read; a token without the list capability is
// told so.
func TestVaultListsRecursivelyWithMetadata(t *testing.T) {
	parallel(t)
	needVault(t)
	ctx := context.Background()
	base := "list-" + randomHex(t) + "/"
	for _, k := range []string{"a/x", "a/y/z", "b", "c-d", "a-b", "a/x"} {
		must(t, vaultSrv.PutKV2("secret", base+k, map[string]any{"password": "pw-" + k}))
	}
	must(t, vaultSrv.Do(http.MethodPost, "secret/metadata/"+base+"b", map[string]any{"custom_metadata": map[string]string{"team": "a"}}, nil))
	must(t, vaultSrv.Do(http.MethodDelete, "secret/data/"+base+"c-d", nil, nil))

	lister := vaultOps(t, vaultSrv.RootToken).Lister
	items, err := engine.ListAll(ctx, lister, engine.ListRequest{Prefix: base, Limit: 1}, nil, 0)
	must(t, err)
	var got []string
	for _, it := range items {
		got = append(got, strings.TrimPrefix(it.Key, base)+"@"+it.Version)
	}
	if want := []string{"a-b@1", "a/x@2", "a/y/z@1", "b@1"}; !slices.Equal(got, want) {
		t.Fatalf("listing %s one at a time = %v, want %v (path order, current versions, without the deleted c-d)", base, got, want)
	}
	items, err = engine.ListAll(ctx, lister, engine.ListRequest{Prefix: base, Tags: map[string]string{"team": "a"}}, nil, 0)
	must(t, err)
	if len(items) != 1 || items[0].Key != base+"b" || items[0].Tags["team"] != "a" {
		t.Fatalf("listing %s by tag team=a = %+v, want only b with its tag", base, items)
	}
	// A prefix inside a folder's name lists that folder's matching keys.
	items, err = engine.ListAll(ctx, lister, engine.ListRequest{Prefix: base + "a/y"}, nil, 0)
	must(t, err)
	if len(items) != 1 || items[0].Key != base+"a/y/z" {
		t.Fatalf("listing %sa/y = %+v, want only a/y/z", base, items)
	}

	// A prefix with a leading slash (reads ignore it): the keys carry it.
	items, err = engine.ListAll(ctx, lister, engine.ListRequest{Prefix: "/" + base + "a/"}, nil, 0)
	must(t, err)
	if len(items) != 2 || items[0].Key != "/"+base+"a/x" || items[1].Key != "/"+base+"a/y/z" {
		t.Fatalf("listing /%sa/ = %+v, want /%[2]sa/x and /%[2]sa/y/z", base, items, base)
	}
	// A secret whose versions are deleted after a while
	// (delete_version_after) has a deletion time in the future: it is
	// readable, and listed.
	must(t, vaultSrv.Do(http.MethodPost, "secret/metadata/"+base+"b", map[string]any{"delete_version_after": "1h"}, nil))
	must(t, vaultSrv.PutKV2("secret", base+"b", map[string]any{"password": "pw-b2"}))
	items, err = engine.ListAll(ctx, lister, engine.ListRequest{Prefix: base + "b"}, nil, 0)
	must(t, err)
	if len(items) != 1 || items[0].Key != base+"b" || items[0].Version != "2" {
		t.Fatalf("listing %sb with delete_version_after set = %+v, want b at version 2", base, items)
	}

	must(t, vaultSrv.Policy("list-read-only", `path "secret/data/*" { capabilities = ["read"] }`))
	tok, err := vaultSrv.Token("list-read-only")
	must(t, err)
	_, err = vaultOps(t, tok).Lister.List(ctx, engine.ListRequest{Prefix: base})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "list") {
		t.Fatalf("listing with a token that may only read: %v, want ErrPermissionDenied naming list", err)
	}
}
