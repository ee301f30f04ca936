package infisical

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/fakedeps"
	"github.com/watchword-dev/watchword/test/infisicalfake"
)

// The tests run against test/infisicalfake (Infisical cannot run here),
// through Infisical's SDK over TLS with the fake's CA as the store's
// caBundle.

const (
	clientID     = "6f0c1a52-5b8e-4c0e-9d0a-2f1e3c4b5a69"
	clientSecret = "client-secret-value-never-shown"
	projectSlug  = "payments"
	sentinel     = "s3cr3t-value-never-shown"
)

type env struct {
	fake *infisicalfake.Server
	deps *fakedeps.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := infisicalfake.Start()
	t.Cleanup(f.Close)
	f.AddIdentity(clientID, clientSecret)
	f.AddProject(projectSlug, "dev", "prod")
	d := &fakedeps.Deps{}
	d.SetSecret("infisical", "clientId", []byte(clientID))
	d.SetSecret("infisical", "clientSecret", []byte(clientSecret+"\n"))
	return &env{fake: f, deps: d}
}

func store(spec *v1alpha1.InfisicalProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "infisical",
		Spec: &v1alpha1.SecretStoreProvider{Infisical: spec}}
}

func (e *env) spec(change ...func(*v1alpha1.InfisicalProvider)) *v1alpha1.InfisicalProvider {
	s := &v1alpha1.InfisicalProvider{HostAPI: e.fake.URL() + "/api", CABundle: e.fake.CAPEM(),
		Auth: v1alpha1.InfisicalAuth{UniversalAuthCredentials: &v1alpha1.InfisicalUniversalAuthCredentials{
			ClientID:     v1alpha1.SecretKeySelector{Name: "infisical", Key: "clientId"},
			ClientSecret: v1alpha1.SecretKeySelector{Name: "infisical", Key: "clientSecret"}}},
		SecretsScope: v1alpha1.InfisicalSecretsScope{ProjectSlug: projectSlug, EnvironmentSlug: "dev", SecretsPath: "/app"}}
	for _, c := range change {
		c(s)
	}
	return s
}

func (e *env) ops(t *testing.T, spec *v1alpha1.InfisicalProvider) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(spec), e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "infisical")
}

func TestCapabilitiesAreDocumented(t *testing.T) {
	e := newEnv(t)
	providertest.CapabilitiesAreDocumented(t, "infisical", e.ops(t, e.spec()))
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(projectSlug, "dev", "/app", "PLACEHOLDER", "x")
	ops := e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.Recursive = true }))
	c := ops.Reader.(*Client)
	conformance.Run(t, conformance.Harness{
		Name: "infisical",
		Ops:  ops,
		// A key is a secret's name or a path to it below the folder; the
		// SDK puts the name in a URL path unescaped, so the provider
		// reads only names of letters, digits, '_', '-' and '.'.
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			folder, name, err := c.locate(key)
			if err != nil {
				return err
			}
			m := map[string]string{}
			for k, v := range fields {
				m[k] = string(v)
			}
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			e.fake.Put(projectSlug, "dev", folder, name, string(b))
			return nil
		},
		Unseed: func(_ context.Context, key string) error {
			folder, name, err := c.locate(key)
			if err != nil {
				return err
			}
			e.fake.Remove(projectSlug, "dev", folder, name)
			return nil
		},
		KeepsVersions: true,
		Key:           func(name string) string { return "CONFORMANCE_" + strings.ReplaceAll(strings.ToUpper(name), "-", "_") },
	})
}

// mustClass fails unless err wraps class and names each fragment, and
// checks that it holds no value and no credential.
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
	for _, secret := range []string{clientSecret, clientID, sentinel, "st.", "with name", "with path", "with slug", "Invalid credentials", "not allowed"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret or the server's own text", err)
		}
	}
}

func TestReadsByNameAndPathWithVersions(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(projectSlug, "dev", "/app", "DB_PASSWORD", "first")
	e.fake.Put(projectSlug, "dev", "/app", "DB_PASSWORD", sentinel)
	e.fake.Put(projectSlug, "dev", "/app/db", "USER", "app")
	e.fake.Put(projectSlug, "dev", "/shared", "TOKEN", "shared-token")
	e.fake.Put(projectSlug, "prod", "/app", "DB_PASSWORD", "prod-value")
	e.fake.Put(projectSlug, "dev", "/app", "URL", "postgres://app:${DB_PASSWORD}@db")
	ops := e.ops(t, e.spec())
	ctx := context.Background()
	for _, tc := range []struct{ key, version, value, gotVersion string }{
		{"DB_PASSWORD", "", sentinel, "2"},
		{"DB_PASSWORD", "1", "first", "1"},
		{"db/USER", "", "app", "1"},
		{"/shared/TOKEN", "", "shared-token", "1"},
		// References are expanded, as ESO's default is.
		{"URL", "", "postgres://app:" + sentinel + "@db", "1"},
	} {
		obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: tc.key, Version: tc.version})
		if err != nil {
			t.Fatalf("%s@%q: %v", tc.key, tc.version, err)
		}
		if string(obj.Value) != tc.value || obj.Version != tc.gotVersion {
			t.Errorf("%s@%q: version %q, want %q (value as seeded: %v)", tc.key, tc.version, obj.Version, tc.gotVersion, string(obj.Value) == tc.value)
		}
	}
	v, err := ops.Versions.CurrentVersion(ctx, "DB_PASSWORD")
	if err != nil || v != "2" {
		t.Fatalf("current version %q, %v; want 2", v, err)
	}
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "DB_PASSWORD", Version: "3"})
	mustClass(t, err, engine.ErrNotFound, `"DB_PASSWORD"`, `"/app"`, `"dev"`, "HTTP 404", "version 3")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "DB_PASSWORD", Version: "latest"})
	mustClass(t, err, engine.ErrNotFound, `version "latest"`)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "NOTHING"})
	mustClass(t, err, engine.ErrNotFound, `"NOTHING"`, "HTTP 404")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "nofolder/KEY"})
	mustClass(t, err, engine.ErrNotFound, `"/app/nofolder"`)
	for _, bad := range []string{"", "a b", "../KEY", "db/../KEY", "KEY?x=1", "db//KEY", "db/"} {
		_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: bad})
		if failure.Classify(err).Reason != failure.RemoteNameInvalid {
			t.Errorf("key %q: %v, want RemoteNameInvalid", bad, err)
		}
	}
}

func TestListsTheFolderAndBelowWithVersions(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(projectSlug, "dev", "/app", "A", "1")
	e.fake.Put(projectSlug, "dev", "/app", "A", "2")
	e.fake.Put(projectSlug, "dev", "/app", "B", "1")
	e.fake.Put(projectSlug, "dev", "/app/db", "A", "1")
	e.fake.Put(projectSlug, "dev", "/app/db/replica", "C", "1")
	e.fake.Put(projectSlug, "dev", "/other", "D", "1")
	ctx := context.Background()
	list := func(ops engine.Ops, req engine.ListRequest) string {
		t.Helper()
		page, err := ops.Lister.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%v %s", page.Items, page.NextPageToken)
	}
	flat := e.ops(t, e.spec())
	if got, want := list(flat, engine.ListRequest{}), "[{A 2 map[]} {B 1 map[]}] "; got != want {
		t.Errorf("the folder: %s, want %s", got, want)
	}
	deep := e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.Recursive = true }))
	if got, want := list(deep, engine.ListRequest{}), "[{A 2 map[]} {B 1 map[]} {db/A 1 map[]} {db/replica/C 1 map[]}] "; got != want {
		t.Errorf("recursive: %s, want %s", got, want)
	}
	if got, want := list(deep, engine.ListRequest{Prefix: "db/"}), "[{db/A 1 map[]} {db/replica/C 1 map[]}] "; got != want {
		t.Errorf("a prefix: %s, want %s", got, want)
	}
	// Pages of two, the last key as the token.
	if got, want := list(deep, engine.ListRequest{Limit: 2}), "[{A 2 map[]} {B 1 map[]}] B"; got != want {
		t.Errorf("page 1: %s, want %s", got, want)
	}
	if got, want := list(deep, engine.ListRequest{Limit: 2, PageToken: "B"}), "[{db/A 1 map[]} {db/replica/C 1 map[]}] "; got != want {
		t.Errorf("page 2: %s, want %s", got, want)
	}
	// Every listed key reads back.
	page, err := deep.Lister.List(ctx, engine.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		obj, rerr := deep.Reader.GetSecret(ctx, engine.Ref{Key: it.Key})
		if rerr != nil || obj.Version != it.Version {
			t.Errorf("%s: version %q, listed %q, %v", it.Key, obj.Version, it.Version, rerr)
		}
	}
	// From the root, recursively.
	root := e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) {
		s.SecretsScope.Recursive = true
		s.SecretsScope.SecretsPath = "/"
	}))
	if got, want := list(root, engine.ListRequest{Prefix: "other/"}), "[{other/D 1 map[]}] "; got != want {
		t.Errorf("from the root: %s, want %s", got, want)
	}
	_, err = flat.Lister.List(ctx, engine.ListRequest{Tags: map[string]string{"a": "b"}})
	mustClass(t, err, engine.ErrNotSupported, "tags")
}

func TestLoginsRenewalAndRefusals(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(projectSlug, "dev", "/app", "KEY", sentinel)
	ctx := context.Background()
	ops := e.ops(t, e.spec())
	if e.fake.Calls("login") != 0 {
		t.Fatal("New logged in")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := e.fake.Calls("login"); n != 1 {
		t.Fatalf("%d logins for 8 reads, want 1", n)
	}
	// A revoked token: one new login, and the read goes on.
	e.fake.RevokeTokens()
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"}); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Calls("login"); n != 2 {
		t.Fatalf("%d logins after a revocation, want 2", n)
	}
	// Check logs in afresh.
	if err := ops.Checker.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// A token about to expire is replaced before a call.
	e.fake.SetTokenTTL(time.Second)
	if err := ops.Checker.Check(ctx); err != nil {
		t.Fatal(err)
	}
	c := ops.Reader.(*Client)
	c.now = func() time.Time { return time.Now().Add(950 * time.Millisecond) }
	logins, refused := e.fake.Calls("login"), e.fake.Calls("unauthorized")
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"}); err != nil {
		t.Fatal(err)
	}
	if e.fake.Calls("login") != logins+1 || e.fake.Calls("unauthorized") != refused {
		t.Fatalf("a token at nine tenths of its life: %d logins and %d refusals, want %d and %d",
			e.fake.Calls("login"), e.fake.Calls("unauthorized"), logins+1, refused)
	}
	// Wrong credentials: the refusal names the Secret, never a value.
	e.deps.SetSecret("infisical", "clientSecret", []byte("wrong-secret"))
	_, err := e.ops(t, e.spec()).Reader.GetSecret(ctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrUnauthenticated, "HTTP 401", `key "clientId" of Secret "team/infisical"`, "Universal Auth", "client ID or secret is wrong")
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("a refused login is of the permission class: %v", err)
	}
	// An unknown environment.
	e.deps.SetSecret("infisical", "clientSecret", []byte(clientSecret))
	_, err = e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.EnvironmentSlug = "staging" })).Reader.GetSecret(ctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrNotFound, `environment "staging"`, "HTTP 404")
	// A project the identity may not read.
	e.fake.Deny(clientID, projectSlug)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrPermissionDenied, "HTTP 403", `project "payments"`, `environment "dev"`)
}

func TestThrottlingAndUnreachable(t *testing.T) {
	e := newEnv(t)
	e.fake.Put(projectSlug, "dev", "/app", "KEY", sentinel)
	ctx := context.Background()
	ops := e.ops(t, e.spec())
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Throttle(1, 7)
	_, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrThrottled, "HTTP 429")
	if n := e.fake.Calls("throttled"); n != 1 {
		t.Fatalf("the SDK retried a 429: %d throttled answers", n)
	}
	e.fake.Put(projectSlug, "prod", "/", "KEY", "v")
	// A folder missing in the environment.
	_, err = e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.EnvironmentSlug = "prod" })).Lister.List(ctx, engine.ListRequest{})
	mustClass(t, err, engine.ErrNotFound, `folder "/app"`, "HTTP 404")
	// Without the CA: the fake's certificate is not trusted.
	_, err = e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.CABundle = nil })).Reader.GetSecret(ctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrUnavailable, "could not be reached")
	// A server gone: unavailable, and a call's deadline is kept.
	url := e.fake.URL()
	e.fake.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = e.ops(t, e.spec(func(s *v1alpha1.InfisicalProvider) { s.HostAPI = url + "/api" })).Reader.GetSecret(cctx, engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrUnavailable)
}

func TestValidate(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		change func(*v1alpha1.InfisicalProvider)
		want   string
	}{
		{func(s *v1alpha1.InfisicalProvider) { s.HostAPI = "ftp://infisical" }, "hostAPI"},
		{func(s *v1alpha1.InfisicalProvider) { s.HostAPI = "https://infisical/api?x=1" }, "hostAPI"},
		{func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.ProjectSlug = "" }, "projectSlug"},
		{func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.SecretsPath = "app" }, "secretsPath"},
		{func(s *v1alpha1.InfisicalProvider) { s.SecretsScope.SecretsPath = "/app/../x" }, "secretsPath"},
		{func(s *v1alpha1.InfisicalProvider) {
			s.CAProvider = &v1alpha1.CAProvider{Type: "Secret", Name: "ca", Key: "ca.crt"}
		}, "caBundle or caProvider"},
	} {
		mustClass(t, Factory{}.Validate(store(e.spec(tc.change))), engine.ErrInvalidConfig, tc.want)
	}
	e.deps.SetSecret("infisical", "clientSecret", []byte(" \n"))
	_, err := Factory{}.New(context.Background(), store(e.spec()), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "clientSecret", `Secret "team/infisical"`, "empty")
	e.deps.SetSecret("infisical", "clientSecret", []byte(clientSecret))
	_, err = Factory{}.New(context.Background(), store(e.spec(func(s *v1alpha1.InfisicalProvider) { s.CABundle = []byte("not PEM") })), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "no PEM certificate")
	if err = (Factory{}).Validate(store(e.spec(func(s *v1alpha1.InfisicalProvider) { s.HostAPI = ""; s.SecretsScope.SecretsPath = "/a/b/" }))); err != nil {
		t.Fatal(err)
	}
}

// tokens is a provider.Deps that also issues service account tokens: an
// unsigned JWT whose subject is the service account (the fake reads only
// that claim).
type tokens struct {
	*fakedeps.Deps
	issued int
}

func (d *tokens) ServiceAccountToken(_ context.Context, sel v1alpha1.ServiceAccountSelector) (string, int64, error) {
	d.issued++
	claims, _ := json.Marshal(map[string]any{"sub": "system:serviceaccount:" + sel.Namespace + ":" + sel.Name, "n": d.issued})
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + ".sig", 600, nil
}

func TestKubernetesAuthLogsInWithAServiceAccountToken(t *testing.T) {
	e := newEnv(t)
	e.fake.AddKubernetesIdentity("identity-1", "team", "reader")
	e.fake.Put(projectSlug, "dev", "/app", "KEY", sentinel)
	d := &tokens{Deps: e.deps}
	spec := func(sa string) *v1alpha1.InfisicalProvider {
		return e.spec(func(s *v1alpha1.InfisicalProvider) {
			s.Auth = v1alpha1.InfisicalAuth{KubernetesAuth: &v1alpha1.InfisicalKubernetesAuth{IdentityID: "identity-1",
				ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: sa, Namespace: "team"}}}
		})
	}
	ops, err := Factory{}.New(context.Background(), store(spec("reader")), d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "KEY"}); err != nil {
		t.Fatal(err)
	}
	// A new login asks for a new token.
	e.fake.RevokeTokens()
	if _, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "KEY"}); err != nil || d.issued != 2 {
		t.Fatalf("after a revocation: %d tokens issued, %v", d.issued, err)
	}
	ops, err = Factory{}.New(context.Background(), store(spec("another")), d)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "KEY"})
	mustClass(t, err, engine.ErrUnauthenticated, "HTTP 401", `machine identity "identity-1" as service account "team/another"`, "Kubernetes Auth does not allow")
}
