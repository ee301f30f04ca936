package conjur

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/conjurfake"
	"github.com/watchword-dev/watchword/test/fakedeps"
)

const (
	account = "myorg"
	login   = "host/apps/app"
	apiKey  = "api-key-s3cr3t-1"
	saJWT   = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTphcHAifQ.c2ln"
)

// deps adds a service account's token to the Secret keys of fakedeps.
type deps struct {
	fakedeps.Deps
	tokens   int
	audience []string
}

func (d *deps) ServiceAccountToken(_ context.Context, sel v1alpha1.ServiceAccountSelector) (string, int64, error) {
	if sel.Name != "app" {
		return "", 0, fmt.Errorf("no service account %q: %w", sel.Name, engine.ErrInvalidConfig)
	}
	d.tokens++
	d.audience = sel.Audiences
	return saJWT, 3600, nil
}

type env struct {
	fake *conjurfake.Server
	deps *deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := conjurfake.Start(account)
	t.Cleanup(f.Close)
	f.AddAPIKey(login, apiKey, "")
	d := &deps{}
	d.SetSecret("conjur", "login", []byte(login+"\n"))
	d.SetSecret("conjur", "apikey", []byte(apiKey))
	d.SetSecret("ca", "ca.crt", f.CA)
	return &env{fake: f, deps: d}
}

func (e *env) apiKeySpec() *v1alpha1.ConjurProvider {
	return &v1alpha1.ConjurProvider{URL: e.fake.URL, CABundle: e.fake.CA, Auth: v1alpha1.ConjurAuth{APIKey: &v1alpha1.ConjurAPIKeyAuth{
		Account: account, UserRef: v1alpha1.SecretKeySelector{Name: "conjur", Key: "login"}, APIKeyRef: v1alpha1.SecretKeySelector{Name: "conjur", Key: "apikey"}}}}
}

func store(spec *v1alpha1.ConjurProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "conjur", Spec: &v1alpha1.SecretStoreProvider{Conjur: spec}}
}

func (e *env) ops(t *testing.T, spec *v1alpha1.ConjurProvider) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(spec), e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

// mustClass fails unless err wraps class and names each fragment, and
// checks that it holds no secret value, credential or server text.
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
	for _, secret := range []string{apiKey, saJWT, "s3cr3t", "CONJ00076E", "Forbidden", "Rate limit"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret or the server's own text", err)
		}
	}
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "conjur")
}

func TestCapabilitiesAreDocumented(t *testing.T) {
	e := newEnv(t)
	providertest.CapabilitiesAreDocumented(t, "conjur", e.ops(t, e.apiKeySpec()))
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "conjur",
		Ops:  e.ops(t, e.apiKeySpec()),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			m := map[string]string{}
			for k, v := range fields {
				m[k] = string(v)
			}
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			e.fake.Set(key, b)
			return nil
		},
		Unseed: func(_ context.Context, key string) error {
			e.fake.Remove(key)
			return nil
		},
		Key:           func(name string) string { return "conformance/" + name },
		KeepsVersions: true,
	})
}

func TestVersionsAndEscapedIDs(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.apiKeySpec())
	ctx := context.Background()
	id := "prod/db/pass word+%41"
	e.fake.Set(id, []byte("first-s3cr3t"))
	e.fake.Set(id, []byte("second-s3cr3t"))
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: id})
	if err != nil || string(obj.Value) != "second-s3cr3t" || obj.Version != "2" {
		t.Fatalf("current: version %q, %v", obj.Version, err)
	}
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: id, Version: "1"})
	if err != nil || string(obj.Value) != "first-s3cr3t" || obj.Version != "1" {
		t.Fatalf("version 1: version %q, %v", obj.Version, err)
	}
	v, err := ops.Versions.CurrentVersion(ctx, id)
	if err != nil || v != "2" {
		t.Fatalf("current version %q, %v", v, err)
	}
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: id, Version: "latest"})
	mustClass(t, err, engine.ErrNotFound, `version "latest"`)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: id, Version: "9"})
	mustClass(t, err, engine.ErrNotFound, "HTTP 404", "version 9")
	// Declared by policy, no value yet.
	e.fake.Declare("declared", nil)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "declared"})
	mustClass(t, err, engine.ErrNotFound, "no value yet")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: ".."})
	mustClass(t, err, engine.ErrNotFound, "not a variable ID")
	// A JSON object also gives fields.
	e.fake.Set("json", []byte(`{"user":"app","password":"s3cr3t"}`))
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "json"})
	if err != nil || string(obj.Fields["user"]) != "app" {
		t.Fatalf("json fields: %v", err)
	}
}

func TestListByPrefixAndAnnotations(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.apiKeySpec())
	e.fake.Set("app/a", []byte("x"))
	e.fake.Set("app/b", []byte("x"))
	e.fake.Set("app/b", []byte("y"))
	e.fake.Set("other/c", []byte("x"))
	e.fake.Declare("app/empty", nil)
	e.fake.Set("app/hidden", []byte("x"))
	e.fake.Hide(login, "app/hidden")
	e.fake.Declare("app/a", map[string]string{"team": "blue"})
	all, err := engine.ListAll(context.Background(), ops.Lister, engine.ListRequest{Prefix: "app/", Limit: 2}, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(all), fmt.Sprint([]engine.ListItem{{Key: "app/a", Version: "1"}, {Key: "app/b", Version: "2"}}); got != want {
		t.Fatalf("listed %s, want %s", got, want)
	}
	page, err := ops.Lister.List(context.Background(), engine.ListRequest{Tags: map[string]string{"team": "blue"}})
	if err != nil || len(page.Items) != 1 || page.Items[0].Key != "app/a" {
		t.Fatalf("by annotation: %v, %v", page.Items, err)
	}
}

func TestTokenRenewal(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.apiKeySpec())
	ctx := context.Background()
	e.fake.Set("db", []byte("s3cr3t"))
	for range 3 {
		if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); err != nil {
			t.Fatal(err)
		}
	}
	if auths, unauthorized, _ := e.fake.Counts(); auths != 1 || unauthorized != 0 {
		t.Fatalf("three reads with one token: %d authentications, %d refusals", auths, unauthorized)
	}
	// Conjur refuses the token (expired on its clock): one more
	// authentication, and the read succeeds.
	e.fake.ExpireTokens()
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); err != nil {
		t.Fatal(err)
	}
	if auths, unauthorized, _ := e.fake.Counts(); auths != 2 || unauthorized != 1 {
		t.Fatalf("after a refused token: %d authentications, %d refusals; want 2 and 1", auths, unauthorized)
	}
	// Tokens already due for renewal when they come (issued 6 minutes
	// ago by Conjur's clock, which Conjur still accepts): each use
	// authenticates first, and nothing is refused.
	e.fake.IssueAged(6 * time.Minute)
	fresh := e.ops(t, e.apiKeySpec())
	before, refusedBefore, _ := e.fake.Counts()
	for range 2 {
		if _, err := fresh.Versions.CurrentVersion(ctx, "db"); err != nil {
			t.Fatal(err)
		}
	}
	if auths, unauthorized, _ := e.fake.Counts(); auths != before+2 || unauthorized != refusedBefore {
		t.Fatalf("tokens due for renewal: %d authentications (want %d), %d refusals (want %d)", auths, before+2, unauthorized, refusedBefore)
	}
}

func TestJWTAuthentication(t *testing.T) {
	e := newEnv(t)
	e.fake.AddJWT("k8s", saJWT, login)
	e.fake.AddJWT("k8s", "secret.jwt.token", "host/apps/other")
	e.fake.Set("db", []byte("s3cr3t"))
	e.deps.SetSecret("jwt", "token", []byte("secret.jwt.token"))
	sa := e.ops(t, &v1alpha1.ConjurProvider{URL: e.fake.URL, CABundle: e.fake.CA, Auth: v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{
		Account: account, ServiceID: "k8s", HostID: login, ServiceAccountRef: &v1alpha1.ServiceAccountSelector{Name: "app", Audiences: []string{"conjur"}}}}})
	obj, err := sa.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "s3cr3t" {
		t.Fatalf("read with the service account's token: %v", err)
	}
	if e.deps.tokens != 1 || fmt.Sprint(e.deps.audience) != "[conjur]" {
		t.Fatalf("service account tokens requested: %d, audiences %v", e.deps.tokens, e.deps.audience)
	}
	fromSecret := e.ops(t, &v1alpha1.ConjurProvider{URL: e.fake.URL, CABundle: e.fake.CA, Auth: v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{
		Account: account, ServiceID: "k8s", SecretRef: &v1alpha1.SecretKeySelector{Name: "jwt", Key: "token"}}}})
	if _, err = fromSecret.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("read with the token of a Secret: %v", err)
	}
	// A token the authenticator does not accept as this host.
	wrong := e.ops(t, &v1alpha1.ConjurProvider{URL: e.fake.URL, CABundle: e.fake.CA, Auth: v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{
		Account: account, ServiceID: "k8s", HostID: login, SecretRef: &v1alpha1.SecretKeySelector{Name: "jwt", Key: "token"}}}})
	_, err = wrong.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "HTTP 401", "authn-jwt/k8s", `as "host/apps/app"`, `key "token" of Secret "team/jwt"`)
}

func TestRefusalsAndThrottling(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.apiKeySpec())
	ctx := context.Background()
	e.fake.Set("db", []byte("s3cr3t"))
	e.fake.Deny(login, "db")
	_, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "HTTP 403", `login "host/apps/app"`, "execute")
	e.fake.Set("hidden", []byte("s3cr3t"))
	e.fake.Hide(login, "hidden")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "hidden"})
	mustClass(t, err, engine.ErrNotFound, "HTTP 404", "may not see it")
	e.fake.Throttle(1)
	_, err = ops.Versions.CurrentVersion(ctx, "db")
	mustClass(t, err, engine.ErrThrottled, "HTTP 429")
	if d, ok := failure.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("the wait of Conjur's Retry-After: %v, %v; want 3s", d, ok)
	}
	e.fake.Fail(1)
	_, err = ops.Versions.CurrentVersion(ctx, "db")
	mustClass(t, err, engine.ErrUnavailable, "HTTP 503")
	// The API key rotated in Conjur: the next authentication is refused,
	// naming the Secret and never the key.
	e.fake.RotateAPIKey(login, "rotated-key")
	e.fake.ExpireTokens()
	_, err = ops.Versions.CurrentVersion(ctx, "db")
	mustClass(t, err, engine.ErrUnauthenticated, "HTTP 401", `key "apikey" of Secret "team/conjur"`)
	// A server whose certificate the bundle does not trust.
	spec := e.apiKeySpec()
	spec.CABundle = otherCA(t)
	_, err = e.ops(t, spec).Versions.CurrentVersion(ctx, "db")
	mustClass(t, err, engine.ErrUnavailable, "certificate")
}

func TestCAProviderAndEmptyCredentials(t *testing.T) {
	e := newEnv(t)
	e.fake.Set("db", []byte("s3cr3t"))
	spec := e.apiKeySpec()
	spec.CABundle = nil
	spec.CAProvider = &v1alpha1.CAProvider{Type: "Secret", Name: "ca", Key: "ca.crt"}
	if _, err := e.ops(t, spec).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("read with the CA of a Secret: %v", err)
	}
	e.deps.SetSecret("conjur", "apikey", []byte(" \n"))
	_, err := Factory{}.New(context.Background(), store(e.apiKeySpec()), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "conjur.auth.apikey.apiKeyRef", `key "apikey" of Secret "team/conjur" is empty`)
}

func TestValidate(t *testing.T) {
	sel := v1alpha1.SecretKeySelector{Name: "s", Key: "k"}
	for _, tc := range []struct {
		spec *v1alpha1.ConjurProvider
		want string
	}{
		{&v1alpha1.ConjurProvider{URL: "ftp://conjur", Auth: v1alpha1.ConjurAuth{APIKey: &v1alpha1.ConjurAPIKeyAuth{Account: "a", UserRef: sel, APIKeyRef: sel}}}, "conjur.url"},
		{&v1alpha1.ConjurProvider{URL: "https://conjur"}, "exactly one of apikey and jwt"},
		{&v1alpha1.ConjurProvider{URL: "https://conjur", Auth: v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{Account: "a", ServiceID: "k8s"}}}, "exactly one of serviceAccountRef and secretRef"},
		{&v1alpha1.ConjurProvider{URL: "https://conjur", Auth: v1alpha1.ConjurAuth{JWT: &v1alpha1.ConjurJWTAuth{Account: "a", SecretRef: &sel}}}, "serviceID"},
	} {
		mustClass(t, Factory{}.Validate(store(tc.spec)), engine.ErrInvalidConfig, tc.want)
	}
}

// otherCA is the PEM of a self-signed certificate that signed nothing.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestConcurrentReadsShareOneToken reads from many goroutines at once
// while Conjur refuses the token in the middle (run with -race): every
// read succeeds, and authentications stay few.
func TestConcurrentReadsShareOneToken(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.apiKeySpec())
	e.fake.Set("db", []byte("s3cr3t"))
	errs := make(chan error, 40)
	for i := range 40 {
		if i == 20 {
			e.fake.ExpireTokens()
		}
		go func() {
			obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
			if err == nil && string(obj.Value) != "s3cr3t" {
				err = errors.New("a read returned another value")
			}
			errs <- err
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if auths, _, _ := e.fake.Counts(); auths > 3 {
		t.Errorf("%d authentications for 40 reads and one refused token; want at most 3", auths)
	}
}
