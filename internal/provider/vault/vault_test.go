package vault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

// These tests run against a real Vault server built from the
// github.com/hashicorp/vault module (make tools-vault).

var (
	srv *vaultserver.Server
	// skipVault says why srv is nil.
	skipVault = "needs a Vault server; skipped with -short"
)

func TestMain(m *testing.M) {
	if !testingShort() {
		bin, skip, err := vaultserver.Lookup()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if bin == "" {
			skipVault = skip
		} else if srv, err = vaultserver.Start(bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if srv != nil {
		srv.Close()
	}
	os.Exit(code)
}

func testingShort() bool {
	for _, a := range os.Args {
		if a == "-test.short=true" || a == "-test.short" {
			return true
		}
	}
	return false
}

func needVault(t *testing.T) {
	t.Helper()
	if srv == nil {
		t.Skip(skipVault)
	}
}

// deps is the Kubernetes side of a store, in memory: these tests are about
// Vault.
type deps struct {
	secrets map[string][]byte // "name/key"
}

func (d deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	v, ok := d.secrets[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, fmt.Errorf("%w: no Secret key %s/%s", engine.ErrInvalidConfig, sel.Name, sel.Key)
	}
	return v, nil
}
func (d deps) ConfigMapValue(context.Context, string, string, string) ([]byte, error) {
	return nil, errors.New("no ConfigMaps here")
}
func (d deps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return "", 0, errors.New("no service accounts here")
}
func (d deps) LocalConfig() *rest.Config { return &rest.Config{} }

func newTestClient(t *testing.T, spec v1alpha1.VaultProvider, secrets map[string][]byte) *Client {
	t.Helper()
	c, err := Factory{}.client(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "vault",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &spec}}, deps{secrets: secrets})
	if err != nil {
		t.Fatalf("building the client: %v", err)
	}
	return c
}

func rootClient(t *testing.T, mount, version string) *Client {
	return newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Path: mount, Version: v1alpha1.VaultKVVersion(version),
		Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault", Key: "token"}}},
		map[string][]byte{"vault/token": []byte(srv.RootToken)})
}

func get(t *testing.T, c *Client, key, version string) (engine.Object, error) {
	t.Helper()
	return c.GetSecret(context.Background(), engine.Ref{Key: key, Version: version})
}

func TestKVv2ReadsVersionsAndFields(t *testing.T) {
	needVault(t)
	must(t, srv.PutKV2("secret", "app/db", map[string]any{"user": "app", "password": "one", "port": 5432, "opts": map[string]any{"tls": true}}))
	must(t, srv.PutKV2("secret", "app/db", map[string]any{"user": "app", "password": "two", "port": 5432, "opts": map[string]any{"tls": true}}))
	c := rootClient(t, "", "") // default mount, detected version
	if c.version != "2" {
		t.Fatalf("detected KV version %q, want 2", c.version)
	}
	obj, err := get(t, c, "app/db", "")
	must(t, err)
	if obj.Version != "2" || string(obj.Fields["password"]) != "two" || string(obj.Fields["port"]) != "5432" || string(obj.Fields["opts"]) != `{"tls":true}` {
		t.Fatalf("current version: %q %v", obj.Version, obj.Fields)
	}
	pw, err := engine.Extract("app/db", obj, "opts.tls")
	if err != nil || string(pw) != "true" {
		t.Fatalf("property path into a JSON field: %q %v", pw, err)
	}
	old, err := get(t, c, "app/db", "1")
	must(t, err)
	if old.Version != "1" || string(old.Fields["password"]) != "one" {
		t.Fatalf("pinned version 1: %q %v", old.Version, old.Fields)
	}
	v, err := c.CurrentVersion(context.Background(), "app/db")
	if err != nil || v != "2" {
		t.Fatalf("CurrentVersion = %q, %v", v, err)
	}
	if _, err := get(t, c, "app/db", "9"); !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "no version 9") {
		t.Fatalf("missing version: %v", err)
	}
	if _, err := get(t, c, "app/nope", ""); !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), `"app/nope"`) {
		t.Fatalf("missing path: %v", err)
	}
}

func TestKVv2DeletedAndDestroyedVersions(t *testing.T) {
	needVault(t)
	for i := 1; i <= 3; i++ {
		must(t, srv.PutKV2("secret", "gone", map[string]any{"v": fmt.Sprint(i)}))
	}
	must(t, srv.Do(http.MethodPost, "secret/delete/gone", map[string]any{"versions": []int{3}}, nil))
	must(t, srv.Do(http.MethodPost, "secret/destroy/gone", map[string]any{"versions": []int{2}}, nil))
	c := rootClient(t, "secret", "v2")
	_, err := get(t, c, "gone", "")
	if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "version 3 was deleted") {
		t.Fatalf("deleted current version: %v", err)
	}
	_, err = get(t, c, "gone", "2")
	if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "version 2 was destroyed") {
		t.Fatalf("destroyed version: %v", err)
	}
	obj, err := get(t, c, "gone", "1")
	if err != nil || string(obj.Fields["v"]) != "1" {
		t.Fatalf("live version 1: %v %v", obj, err)
	}
}

func TestKVv1(t *testing.T) {
	needVault(t)
	must(t, srv.Do(http.MethodPost, "sys/mounts/kv1", map[string]any{"type": "kv", "options": map[string]string{"version": "1"}}, nil))
	must(t, srv.Do(http.MethodPost, "kv1/team/api", map[string]any{"token": "abc", "n": 1}, nil))
	for _, declared := range []string{"", "v1"} {
		c := rootClient(t, "kv1", declared)
		if c.version != "1" {
			t.Fatalf("declared %q: version %q", declared, c.version)
		}
		obj, err := get(t, c, "team/api", "")
		if err != nil || string(obj.Fields["token"]) != "abc" || obj.Version != "" {
			t.Fatalf("KV v1 read: %v %v", obj, err)
		}
	}
	if _, err := get(t, rootClient(t, "kv1", "v1"), "team/api", "2"); err == nil || !strings.Contains(err.Error(), "KV v1 mount keeps no versions") {
		t.Fatalf("pinning a version on KV v1: %v", err)
	}
	// A KV v1 mount lists its keys, without versions, and has no tags to
	// list by.
	page, err := rootClient(t, "kv1", "v1").List(context.Background(), engine.ListRequest{Prefix: "team/"})
	if err != nil || len(page.Items) != 1 || page.Items[0].Key != "team/api" || page.Items[0].Version != "" || page.NextPageToken != "" {
		t.Fatalf("listing KV v1 team/: %+v %v, want team/api without a version", page, err)
	}
	if _, err = rootClient(t, "kv1", "v1").List(context.Background(), engine.ListRequest{Tags: map[string]string{"team": "a"}}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("listing KV v1 by tags: %v, want ErrNotSupported", err)
	}
	// A KV v1 mount declared as v2 is a clear error, not a crash.
	if _, err := get(t, rootClient(t, "kv1", "v2"), "team/api", ""); err == nil {
		t.Fatal("reading KV v1 as v2 must fail")
	}
}

func TestNotAKVMount(t *testing.T) {
	needVault(t)
	_, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{Server: srv.Addr(), Path: "cubbyhole",
			Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault", Key: "token"}}}}},
		deps{secrets: map[string][]byte{"vault/token": []byte(srv.RootToken)}})
	if !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "not kv") {
		t.Fatalf("got %v", err)
	}
}

func TestPermissionDeniedIsSpecific(t *testing.T) {
	needVault(t)
	must(t, srv.PutKV2("secret", "private/x", map[string]any{"v": "1"}))
	must(t, srv.Policy("read-public", `path "secret/data/public/*" { capabilities = ["read"] }`))
	tok, err := srv.Token("read-public")
	must(t, err)
	c := newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2",
		Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "t", Key: "t"}}}, map[string][]byte{"t/t": []byte(tok)})
	_, err = get(t, c, "private/x", "")
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("got %v, want permission denied", err)
	}
	// The refusal names the key, the operation and path refused, and who
	// was refused (the token's display name and policies, and where the
	// token came from), never the token.
	for _, want := range []string{`"private/x"`, `read "secret/data/private/x"`, "read-public", "vault.auth.tokenSecretRef"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), tok) {
		t.Fatal("the error leaks the token")
	}
	// A write refused names the write.
	_, err = c.PutSecret(context.Background(), "private/y", fields("v", "1"), engine.Owner{ID: "PushSecret/ns/p"})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "read-public") {
		t.Fatalf("got %v, want a refusal naming the token's policies", err)
	}
}

func TestRefusedLoginNamesTheServiceAccount(t *testing.T) {
	needVault(t)
	_ = srv.Do(http.MethodPost, "sys/auth/jwt-refused", map[string]any{"type": "jwt"}, nil)
	spec := v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{JWT: &v1alpha1.VaultJWTAuth{
		Path: "jwt-refused", Role: "reader", ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app"}}}}
	c, err := Factory{}.client(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "vault",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &spec}}, tokenDeps{token: "not-a-jwt"})
	must(t, err)
	_, err = get(t, c, "anything", "")
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("got %v, want permission denied", err)
	}
	for _, want := range []string{"JWT auth at auth/jwt-refused", `service account "team/app"`, `role "reader"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "not-a-jwt") {
		t.Fatal("the error leaks the token")
	}
}

// tokenDeps hands out a fixed service-account token.
type tokenDeps struct {
	deps
	token string
}

func (d tokenDeps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return d.token, 3600, nil
}

func TestCapabilitiesFollowTheKVVersion(t *testing.T) {
	needVault(t)
	for _, tc := range []struct {
		mount, version string
		want           engine.Capabilities
	}{
		{"kv1", "v1", engine.CanRead | engine.CanList | engine.CanLease},
		{"secret", "v2", engine.CanRead | engine.CanCheckVersion | engine.CanList | engine.CanWrite | engine.CanDelete | engine.CanLease | engine.CanFetchMetadata},
	} {
		got := rootClient(t, tc.mount, tc.version).ops().Capabilities()
		if got != tc.want {
			t.Errorf("KV %s: capabilities %s, want %s", tc.version, got, tc.want)
		}
	}
}

func setupAppRole(t *testing.T, name, ttl string) (roleID, secretID string) {
	t.Helper()
	_ = srv.Do(http.MethodPost, "sys/auth/approle", map[string]any{"type": "approle"}, nil)
	must(t, srv.Policy("read-all", `path "secret/*" { capabilities = ["read", "create", "update", "delete", "list"] }`))
	must(t, srv.Do(http.MethodPost, "auth/approle/role/"+name, map[string]any{"token_policies": []string{"read-all"}, "token_ttl": ttl, "token_max_ttl": "1h"}, nil))
	var rid struct {
		Data struct {
			RoleID string `json:"role_id"`
		} `json:"data"`
	}
	must(t, srv.Do(http.MethodGet, "auth/approle/role/"+name+"/role-id", nil, &rid))
	var sid struct {
		Data struct {
			SecretID string `json:"secret_id"`
		} `json:"data"`
	}
	must(t, srv.Do(http.MethodPost, "auth/approle/role/"+name+"/secret-id", map[string]any{}, &sid))
	return rid.Data.RoleID, sid.Data.SecretID
}

func TestAppRoleLogsInRenewsAndLogsInAgainAfterRevocation(t *testing.T) {
	needVault(t)
	must(t, srv.PutKV2("secret", "approle/x", map[string]any{"v": "ok"}))
	roleID, secretID := setupAppRole(t, "watchword", "4s")
	c := newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2",
		Auth: v1alpha1.VaultAuth{AppRole: &v1alpha1.VaultAppRoleAuth{RoleID: roleID, SecretRef: v1alpha1.SecretKeySelector{Name: "ar", Key: "sid"}}}},
		map[string][]byte{"ar/sid": []byte(secretID)})
	obj, err := get(t, c, "approle/x", "")
	if err != nil || string(obj.Fields["v"]) != "ok" {
		t.Fatalf("AppRole read: %v %v", obj, err)
	}
	first := c.session.token
	// Past two thirds of the token's life the session renews it; reads keep
	// working past the original TTL.
	for i := 0; i < 6; i++ {
		time.Sleep(time.Second)
		if _, err := get(t, c, "approle/x", ""); err != nil {
			t.Fatalf("read %d after login: %v", i, err)
		}
	}
	// A revoked token is refused with 403; the client logs in once more.
	must(t, srv.Do(http.MethodPost, "auth/token/revoke", map[string]any{"token": c.session.token}, nil))
	if _, err := get(t, c, "approle/x", ""); err != nil {
		t.Fatalf("read after revocation: %v", err)
	}
	if c.session.token == first {
		t.Fatal("the session still holds the revoked token")
	}
}

func TestAppRoleBadSecretID(t *testing.T) {
	needVault(t)
	roleID, _ := setupAppRole(t, "bad", "1h")
	c := newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2",
		Auth: v1alpha1.VaultAuth{AppRole: &v1alpha1.VaultAppRoleAuth{RoleID: roleID, SecretRef: v1alpha1.SecretKeySelector{Name: "ar", Key: "sid"}}}},
		map[string][]byte{"ar/sid": []byte("wrong-secret-id")})
	_, err := get(t, c, "anything", "")
	if err == nil || !strings.Contains(err.Error(), "logging in to Vault with AppRole auth at auth/approle") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-id") {
		t.Fatal("the error leaks the secret ID")
	}
}

func TestWriteOwnershipAndCheckAndSet(t *testing.T) {
	needVault(t)
	c := rootClient(t, "secret", "v2")
	ctx := context.Background()
	me := engine.Owner{ID: "PushSecret/ns/mine"}
	if v, err := c.PutSecret(ctx, "pub/owned", fields("k", "v1"), me); err != nil || v != "1" {
		t.Fatalf("first write: version %q, %v", v, err)
	}
	if v, err := c.PutSecret(ctx, "pub/owned", fields("k", "v2"), me); err != nil || v != "2" {
		t.Fatalf("second write: version %q, %v", v, err)
	}
	obj, err := get(t, c, "pub/owned", "")
	if err != nil || obj.Version != "2" || string(obj.Fields["k"]) != "v2" {
		t.Fatalf("after two writes: %v %v", obj, err)
	}
	withLabels := fields("k", "v3")
	withLabels.Labels = map[string]string{"team": "a"}
	if _, err := c.PutSecret(ctx, "pub/owned", withLabels, me); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("a publication with labels: %v, want NotSupported", err)
	}
	other := engine.Owner{ID: "PushSecret/ns/other"}
	if _, err := c.PutSecret(ctx, "pub/owned", fields("k", "x"), other); !errors.Is(err, engine.ErrNotOwned) || !strings.Contains(err.Error(), "PushSecret/ns/mine") {
		t.Fatalf("another owner's secret: %v", err)
	}
	if err := c.DeleteSecret(ctx, "pub/owned", other); !errors.Is(err, engine.ErrNotOwned) {
		t.Fatalf("deleting another owner's secret: %v", err)
	}
	must(t, srv.PutKV2("secret", "pub/foreign", map[string]any{"k": "theirs"}))
	if _, err := c.PutSecret(ctx, "pub/foreign", fields("k", "x"), me); !errors.Is(err, engine.ErrNotOwned) || !strings.Contains(err.Error(), "no Watchword ownership marker") {
		t.Fatalf("unmarked secret: %v", err)
	}
	obj, _ = get(t, c, "pub/foreign", "")
	if string(obj.Fields["k"]) != "theirs" {
		t.Fatal("an unmarked secret was written over")
	}
	if _, err := c.PutSecret(ctx, "pub/foreign", fields("k", "adopted"), engine.Owner{ID: me.ID, Adopt: true}); err != nil {
		t.Fatal(err)
	}
	must(t, c.DeleteSecret(ctx, "pub/owned", me))
	if _, err := get(t, c, "pub/owned", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	must(t, c.DeleteSecret(ctx, "pub/owned", me)) // deleting what is gone is fine
}

func TestSealedAndUnreachable(t *testing.T) {
	needVault(t)
	must(t, srv.PutKV2("secret", "avail/x", map[string]any{"v": "1"}))
	c := rootClient(t, "secret", "v2")
	must(t, srv.Seal())
	_, err := get(t, c, "avail/x", "")
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "Vault is sealed") {
		t.Fatalf("sealed: %v", err)
	}
	must(t, srv.Unseal())
	if _, err = get(t, c, "avail/x", ""); err != nil {
		t.Fatalf("after unseal: %v", err)
	}
	srv.Stop()
	_, err = get(t, c, "avail/x", "")
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "cannot reach Vault") {
		t.Fatalf("stopped: %v", err)
	}
	must(t, srv.Restart())
	must(t, srv.Unseal())
	obj, err := get(t, c, "avail/x", "")
	if err != nil || string(obj.Fields["v"]) != "1" {
		t.Fatalf("after restart: %v %v", obj, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fields is a publication of one field.
func fields(key, value string) engine.Publication {
	return engine.Publication{Fields: map[string][]byte{key: []byte(value)}}
}
