package onepassword

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/onepasswordfake"
)

const token = "connect-token-value-1"

// deps hands out the Connect token of a Secret.
type deps struct {
	mu    sync.Mutex
	token string
}

func (d *deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if sel.Name != "op" || sel.Key != "token" {
		return nil, fmt.Errorf("secret %q has no key %q: %w", sel.Name, sel.Key, engine.ErrInvalidConfig)
	}
	return []byte(d.token), nil
}

func (d *deps) ConfigMapValue(context.Context, string, string, string) ([]byte, error) {
	return nil, fmt.Errorf("no ConfigMaps here: %w", engine.ErrInvalidConfig)
}

func (d *deps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return "", 0, fmt.Errorf("no tokens here: %w", engine.ErrInvalidConfig)
}

func (d *deps) LocalConfig() *rest.Config { return &rest.Config{} }

type env struct {
	fake          *onepasswordfake.Server
	first, second string // vault IDs: "first" (priority 1), "second" (priority 2)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := onepasswordfake.Start(token)
	t.Cleanup(f.Close)
	return &env{fake: f, first: f.AddVault("first"), second: f.AddVault("second")}
}

func store(host string, vaults map[string]int32) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "op",
		Spec: &v1alpha1.SecretStoreProvider{OnePassword: &v1alpha1.OnePasswordProvider{ConnectHost: host, Vaults: vaults,
			Auth: v1alpha1.OnePasswordAuth{SecretRef: v1alpha1.OnePasswordAuthSecretRef{
				ConnectToken: v1alpha1.SecretKeySelector{Name: "op", Key: "token"}}}}}}
}

func (e *env) ops(t *testing.T) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(e.fake.URL, map[string]int32{"first": 1, "second": 2}), &deps{token: token})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func toStrings(fields map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range fields {
		out[k] = string(v)
	}
	return out
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "onepassword")
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "onepassword",
		Ops:  e.ops(t),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			e.fake.Put(e.first, key, toStrings(fields), nil)
			return nil
		},
		Unseed: func(_ context.Context, key string) error {
			e.fake.Remove(e.first, key)
			return nil
		},
		Key: func(name string) string { return "conformance-" + name },
	})
}

// mustClass fails unless err wraps class and names each fragment, and
// checks that it holds no secret value or token.
func mustClass(t *testing.T, err, class error, fragments ...string) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Fatalf("error %v: want class %v", err, class)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %q", err, f)
		}
	}
	for _, secret := range []string{token, "s3cr3t", "Invalid token signature", "does not have access"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret or the server's own text", err)
		}
	}
}

func TestVaultPriorityFieldsFilesAndVersion(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(e.second, "db", map[string]string{"password": "second-s3cr3t"}, nil)
	ops := e.ops(t)
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "second-s3cr3t" || obj.Version != "1" {
		t.Fatalf("read from the second vault: version %q, %v", obj.Version, err)
	}
	// The vault searched first wins once it holds the item.
	id := e.fake.Put(e.first, "db", map[string]string{"password": "first-s3cr3t", "user": "app"},
		map[string][]byte{"tls.crt": []byte("PEM")})
	obj, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if string(obj.Value) != "first-s3cr3t" || string(obj.Fields["user"]) != "app" || string(obj.Fields["tls.crt"]) != "PEM" || obj.Version != "1" {
		t.Fatalf("read from the first vault: fields %v, version %q", len(obj.Fields), obj.Version)
	}
	// By ID, too.
	byID, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: id})
	if err != nil || string(byID.Fields["user"]) != "app" {
		t.Fatalf("read by ID: %v", err)
	}
	// A new version: the version grows; a pinned read of the old one is
	// not found (Connect serves the current version only).
	e.fake.Put(e.first, "db", map[string]string{"password": "rotated"}, nil)
	v, err := ops.Versions.CurrentVersion(context.Background(), "db")
	if err != nil || v != "2" {
		t.Fatalf("current version %q, %v; want 2", v, err)
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db", Version: "1"})
	mustClass(t, err, engine.ErrNotFound, "current version 2")
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "nothing"})
	mustClass(t, err, engine.ErrNotFound, `"nothing"`, "first, second")
}

func TestListTakesTheFirstVaultsItem(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(e.first, "app-a", map[string]string{"password": "x"}, nil)
	e.fake.Put(e.second, "app-a", map[string]string{"password": "y"}, nil)
	e.fake.Put(e.second, "app-a", map[string]string{"password": "z"}, nil)
	e.fake.Put(e.second, "app-b", map[string]string{"password": "y"}, nil)
	e.fake.Put(e.second, "other", map[string]string{"password": "y"}, nil)
	page, err := e.ops(t).Lister.List(context.Background(), engine.ListRequest{Prefix: "app-"})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(page.Items)
	if want := fmt.Sprint([]engine.ListItem{{Key: "app-a", Version: "1"}, {Key: "app-b", Version: "1"}}); got != want {
		t.Fatalf("listed %s, want %s", got, want)
	}
	_, err = e.ops(t).Lister.List(context.Background(), engine.ListRequest{Tags: map[string]string{"a": "b"}})
	mustClass(t, err, engine.ErrNotSupported)
}

func TestWritesMarkOwnershipAndRefuseOthers(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t)
	owner := engine.Owner{ID: "PushSecret/team/db"}
	v, err := ops.Writer.PutSecret(context.Background(), "pushed", engine.Publication{Fields: map[string][]byte{"password": []byte("s3cr3t")}}, owner)
	if err != nil || v != "1" {
		t.Fatalf("create: version %q, %v", v, err)
	}
	fields, version, ok := e.fake.Item(e.first, "pushed")
	if !ok || fields[OwnerField] != owner.ID || fields["password"] != "s3cr3t" || version != 1 {
		t.Fatalf("the item in the first vault: %v, version %d", ok, version)
	}
	// The same write again makes no new version.
	if v, err = ops.Writer.PutSecret(context.Background(), "pushed", engine.Publication{Fields: map[string][]byte{"password": []byte("s3cr3t")}}, owner); err != nil || v != "1" {
		t.Fatalf("rewrite: version %q, %v", v, err)
	}
	// Someone else's item, and one without a marker, are not touched.
	_, err = ops.Writer.PutSecret(context.Background(), "pushed", engine.Publication{Fields: map[string][]byte{"password": []byte("x")}}, engine.Owner{ID: "PushSecret/other/x"})
	mustClass(t, err, engine.ErrNotOwned, "PushSecret/team/db")
	e.fake.Put(e.second, "manual", map[string]string{"password": "s3cr3t"}, nil)
	_, err = ops.Writer.PutSecret(context.Background(), "manual", engine.Publication{Fields: map[string][]byte{"password": []byte("x")}}, owner)
	mustClass(t, err, engine.ErrNotOwned, "adopt")
	mustClass(t, ops.Writer.DeleteSecret(context.Background(), "manual", owner), engine.ErrNotOwned)
	if f, _, _ := e.fake.Item(e.second, "manual"); f["password"] != "s3cr3t" {
		t.Fatal("the unowned item changed")
	}
	// Adopted: written in its own vault, with the marker.
	if _, err = ops.Writer.PutSecret(context.Background(), "manual", engine.Publication{Fields: map[string][]byte{"password": []byte("x")}}, engine.Owner{ID: owner.ID, Adopt: true}); err != nil {
		t.Fatal(err)
	}
	if f, v, _ := e.fake.Item(e.second, "manual"); f["password"] != "x" || f[OwnerField] != owner.ID || v != 2 {
		t.Fatalf("the adopted item: version %d", v)
	}
	if err = ops.Writer.DeleteSecret(context.Background(), "pushed", owner); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.fake.Item(e.first, "pushed"); ok {
		t.Fatal("the owned item was not deleted")
	}
	_, err = ops.Writer.PutSecret(context.Background(), "bad", engine.Publication{Fields: map[string][]byte{OwnerField: []byte("x")}}, owner)
	mustClass(t, err, engine.ErrInvalidConfig, OwnerField)
}

func TestRefusalsAndThrottling(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(e.first, "db", map[string]string{"password": "s3cr3t"}, nil)
	ops := e.ops(t)
	if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Throttle(1, 7)
	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "HTTP 429")
	// The token revoked: a refusal that names the Secret, never the token.
	e.fake.SetToken("another-token")
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "HTTP 401", `key "token" of Secret "team/op"`, "revoked")
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("a refused token is of the permission class: %v", err)
	}
	e.fake.SetToken(token)
	e.fake.Deny(e.first)
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "HTTP 403", "access to the vault")
	// A vault name the token cannot see (a fresh client resolves names).
	_, err = e.ops(t).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, `vault "first"`, "no vault of that name")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		host   string
		vaults map[string]int32
		want   string
	}{
		{"http://connect:8080/v1", map[string]int32{"a": 1}, "connectHost"},
		{"ftp://connect", map[string]int32{"a": 1}, "connectHost"},
		{"http://connect:8080", map[string]int32{}, "at least one vault"},
		{"http://connect:8080", map[string]int32{"a": 1, "b": 1}, `"a" and "b" the same priority 1`},
	} {
		err := Factory{}.Validate(store(tc.host, tc.vaults))
		mustClass(t, err, engine.ErrInvalidConfig, tc.want)
	}
	if err := (Factory{}).Validate(store("https://connect.example.com/", map[string]int32{"a": 1, "b": 2})); err != nil {
		t.Fatal(err)
	}
}
