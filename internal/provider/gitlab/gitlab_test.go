package gitlab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/fakedeps"
	"github.com/watchword-dev/watchword/test/gitlabfake"
)

// The tests run against test/gitlabfake (GitLab cannot run here), through
// GitLab's SDK over TLS with the fake's CA as the store's caBundle.

const (
	token     = "glpat-test-token-value-1"
	readToken = "glpat-read-only-token-2"
	project   = 42
	parent    = 7  // group "acme"
	child     = 70 // group "acme/platform", the project's group
	other     = 9  // group "shared"
	sentinel  = "s3cr3t-value-never-shown"
)

type env struct {
	fake *gitlabfake.Server
	deps *fakedeps.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := gitlabfake.Start()
	t.Cleanup(f.Close)
	f.AddGroup(parent, "acme")
	f.AddGroup(child, "acme/platform")
	f.AddGroup(other, "shared")
	f.AddProject(project, "acme/platform/api", child, parent)
	f.AddToken(token, gitlabfake.Token{Name: "watchword", Write: true})
	f.AddToken(readToken, gitlabfake.Token{Name: "reader"})
	d := &fakedeps.Deps{}
	d.SetSecret("gitlab", "token", []byte(token+"\n"))
	d.SetSecret("gitlab-read", "token", []byte(readToken))
	return &env{fake: f, deps: d}
}

func store(spec *v1alpha1.GitLabProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "gitlab",
		Spec: &v1alpha1.SecretStoreProvider{GitLab: spec}}
}

func (e *env) spec(change ...func(*v1alpha1.GitLabProvider)) *v1alpha1.GitLabProvider {
	s := &v1alpha1.GitLabProvider{URL: e.fake.URL(), ProjectID: fmt.Sprint(project), CABundle: e.fake.CAPEM(),
		Auth: v1alpha1.GitLabAuth{SecretRef: v1alpha1.GitLabSecretRef{AccessToken: v1alpha1.SecretKeySelector{Name: "gitlab", Key: "token"}}}}
	for _, c := range change {
		c(s)
	}
	return s
}

func (e *env) ops(t *testing.T, spec *v1alpha1.GitLabProvider) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(spec), e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "gitlab")
}

func TestCapabilitiesAreDocumented(t *testing.T) {
	e := newEnv(t)
	providertest.CapabilitiesAreDocumented(t, "gitlab", e.ops(t, e.spec()))
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "gitlab",
		Ops:  e.ops(t, e.spec()),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			if !keyShape.MatchString(key) {
				return fmt.Errorf("GitLab would refuse the variable key %q", key)
			}
			text, err := fieldsText(fields)
			if err != nil {
				return err
			}
			e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: key, Value: text})
			return nil
		},
		Unseed: func(_ context.Context, key string) error {
			e.fake.DeleteProjectVariable(project, key, "")
			return nil
		},
		Key: func(name string) string { return "conformance_" + strings.ReplaceAll(name, "-", "_") },
	})
}

// mustClass fails unless err wraps class and names each fragment, and
// checks that it holds no value and no token.
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
	for _, secret := range []string{token, readToken, sentinel, "glpat-"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret", err)
		}
	}
}

func read(t *testing.T, ops engine.Ops, key string) string {
	t.Helper()
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: key})
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return string(obj.Value)
}

func TestEnvironmentScopeAndGroupFallback(t *testing.T) {
	e := newEnv(t)
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "DB", Value: "project-any"})
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "DB", Value: "project-prod", EnvironmentScope: "production"})
	e.fake.SetGroupVariable(parent, gitlabfake.Variable{Key: "REGION", Value: "parent-region"})
	e.fake.SetGroupVariable(other, gitlabfake.Variable{Key: "REGION", Value: "other-region"})
	e.fake.SetGroupVariable(other, gitlabfake.Variable{Key: "ONLY_OTHER", Value: "x"})
	e.fake.SetGroupVariable(parent, gitlabfake.Variable{Key: "ONLY_PARENT", Value: "y"})

	prod := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) {
		s.Environment = "production"
		s.GroupIDs = []string{fmt.Sprint(parent), "shared"}
	}))
	if got := read(t, prod, "DB"); got != "project-prod" {
		t.Errorf("DB in production: %q", got)
	}
	// groupIDs as ESO reads them: the last given overrides the first.
	if got := read(t, prod, "REGION"); got != "other-region" {
		t.Errorf("REGION: %q; want the last group's", got)
	}
	if got := read(t, prod, "ONLY_PARENT"); got != "y" {
		t.Errorf("ONLY_PARENT: %q", got)
	}
	// No variable of the scope: the one of "*".
	staging := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.Environment = "staging" }))
	if got := read(t, staging, "DB"); got != "project-any" {
		t.Errorf("DB in staging: %q; want the variable of scope *", got)
	}
	// Without an environment, a key in two scopes is refused by GitLab
	// (409), and the error says what to set.
	_, err := e.ops(t, e.spec()).Reader.GetSecret(context.Background(), engine.Ref{Key: "DB"})
	mustClass(t, err, engine.ErrInvalidConfig, "HTTP 409", "gitlab.environment", `project "42"`)

	// A missing key names where it was looked for.
	_, err = prod.Reader.GetSecret(context.Background(), engine.Ref{Key: "NOPE"})
	mustClass(t, err, engine.ErrNotFound, `"NOPE"`, `"production"`, `project "42", group "shared", group "7"`)
	// A key GitLab cannot hold is refused before any call.
	before := e.fake.Calls("get")
	_, err = prod.Reader.GetSecret(context.Background(), engine.Ref{Key: "db-password"})
	if r := failure.Classify(err).Reason; r != failure.RemoteNameInvalid || e.fake.Calls("get") != before {
		t.Errorf("a key with '-': %v (reason %q, %d calls)", err, r, e.fake.Calls("get")-before)
	}
}

func TestInheritFromGroupsReadsTheNearestGroupFirst(t *testing.T) {
	e := newEnv(t)
	e.fake.SetGroupVariable(parent, gitlabfake.Variable{Key: "LEVEL", Value: "parent"})
	e.fake.SetGroupVariable(child, gitlabfake.Variable{Key: "LEVEL", Value: "child"})
	e.fake.SetGroupVariable(parent, gitlabfake.Variable{Key: "TOP", Value: "top"})
	ops := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.InheritFromGroups = true }))
	if got := read(t, ops, "LEVEL"); got != "child" {
		t.Errorf("LEVEL: %q; want the project's own group's", got)
	}
	if got := read(t, ops, "TOP"); got != "top" {
		t.Errorf("TOP: %q", got)
	}
	if n := e.fake.Calls("groups"); n != 1 {
		t.Errorf("the project's groups were listed %d times; want once per client", n)
	}
}

func TestVersionIsAKeyedDigestOfTheValue(t *testing.T) {
	e := newEnv(t)
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "API_KEY", Value: sentinel})
	ops := e.ops(t, e.spec())
	a, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	if a.Version == "" || a.Version != b.Version {
		t.Fatalf("versions %q and %q of an unchanged variable", a.Version, b.Version)
	}
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "API_KEY", Value: sentinel + "2"})
	c, _ := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	if c.Version == a.Version {
		t.Fatal("a changed value kept its version")
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY", Version: a.Version})
	mustClass(t, err, engine.ErrNotFound, "keeps no older values")
	// Another token (another store) digests with another key: the version
	// cannot be tested against guesses of the value without the token.
	e.deps.SetSecret("gitlab", "token", []byte(readToken))
	d, err := e.ops(t, e.spec()).Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	if err != nil || d.Version == c.Version {
		t.Fatalf("a read with another token: version %q (the first token's %q), %v", d.Version, c.Version, err)
	}
}

func TestRefusalsAndThrottling(t *testing.T) {
	e := newEnv(t)
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "API_KEY", Value: sentinel})
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "HIDDEN", Value: sentinel, Masked: true, Hidden: true})
	ops := e.ops(t, e.spec())

	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "HIDDEN"})
	mustClass(t, err, engine.ErrPermissionDenied, "hidden")

	// A 429 is not retried inside the call: the store's gate waits
	// Retry-After out.
	e.fake.Throttle(1, 7)
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	mustClass(t, err, engine.ErrThrottled, "HTTP 429", "7s")
	if d, ok := failure.RetryAfter(err); !ok || d != 7*time.Second {
		t.Errorf("retry after %v, %v; want 7s", d, ok)
	}
	if e.fake.Calls("throttled") != 1 {
		t.Errorf("%d throttled answers; the SDK retried a 429", e.fake.Calls("throttled"))
	}
	if got := read(t, ops, "API_KEY"); got != sentinel {
		t.Error("the read after the wait")
	}

	// A read-only token may read, not write.
	ro := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.Auth.SecretRef.AccessToken.Name = "gitlab-read" }))
	_, err = ro.Writer.PutSecret(context.Background(), "PUBLISHED", engine.Publication{Fields: map[string][]byte{"v": []byte(sentinel)}}, engine.Owner{ID: "PushSecret/team/p"})
	mustClass(t, err, engine.ErrPermissionDenied, "HTTP 403", `key "token" of Secret "team/gitlab-read"`, "api to write")

	// A revoked token: the credentials themselves are refused.
	e.fake.Revoke(token)
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	mustClass(t, err, failure.ErrUnauthenticated, "HTTP 401", `Secret "team/gitlab"`)

	// A project the token cannot see is not found.
	nosee := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) {
		s.ProjectID = "acme/platform/other"
		s.Auth.SecretRef.AccessToken.Name = "gitlab-read"
	}))
	_, err = nosee.Reader.GetSecret(context.Background(), engine.Ref{Key: "API_KEY"})
	mustClass(t, err, engine.ErrNotFound, "token cannot see")
}

func TestWritesKeepMaskedAndRefuseOthers(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.Environment = "production" }))
	owner := engine.Owner{ID: "PushSecret/team/publish"}
	fields := map[string][]byte{"password": []byte(sentinel)}
	v, err := ops.Writer.PutSecret(context.Background(), "DB_PASSWORD", engine.Publication{Fields: fields}, owner)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := e.fake.ProjectVariable(project, "DB_PASSWORD", "production")
	if !ok || got.Description != OwnerPrefix+owner.ID || got.Masked || got.Protected || !got.Raw || got.VariableType != "env_var" {
		t.Fatalf("written variable %+v", got.Description)
	}
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "DB_PASSWORD"})
	if err != nil || obj.Version != v || string(obj.Fields["password"]) != sentinel {
		t.Fatalf("read back version %q (wrote %q), %v", obj.Version, v, err)
	}
	// A variable someone made masked keeps its setting; a JSON value
	// cannot be masked, and GitLab's refusal names the field only.
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "TOKEN", Value: "abcdefgh12345678", Masked: true, EnvironmentScope: "production",
		Description: OwnerPrefix + owner.ID})
	_, err = ops.Writer.PutSecret(context.Background(), "TOKEN", engine.Publication{Fields: fields}, owner)
	mustClass(t, err, engine.ErrInvalidConfig, `field "value"`, "HTTP 400", "masked")
	// An unmarked variable is neither written nor deleted.
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "MANUAL", Value: "by-hand", EnvironmentScope: "production", Description: "set by ops"})
	_, err = ops.Writer.PutSecret(context.Background(), "MANUAL", engine.Publication{Fields: fields}, owner)
	mustClass(t, err, engine.ErrNotOwned, "adopt")
	mustClass(t, ops.Writer.DeleteSecret(context.Background(), "MANUAL", owner), engine.ErrNotOwned)
	if got, _ := e.fake.ProjectVariable(project, "MANUAL", "production"); got.Value != "by-hand" {
		t.Fatal("the unmarked variable changed")
	}
	// Tags and metadata are refused: a variable keeps none.
	_, err = ops.Writer.PutSecret(context.Background(), "X", engine.Publication{Fields: fields, Tags: map[string]string{"a": "b"}}, owner)
	mustClass(t, err, engine.ErrNotSupported)
	// Delete removes the owned variable of the scope only.
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "DB_PASSWORD", Value: "other-scope", EnvironmentScope: "staging"})
	if err = ops.Writer.DeleteSecret(context.Background(), "DB_PASSWORD", owner); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.ProjectVariable(project, "DB_PASSWORD", "production"); ok {
		t.Error("the owned variable is still there")
	}
	if _, ok := e.fake.ProjectVariable(project, "DB_PASSWORD", "staging"); !ok {
		t.Error("the variable of another scope was deleted")
	}
}

func TestListFollowsPagesAcrossProjectAndGroups(t *testing.T) {
	e := newEnv(t)
	for i := range 7 {
		e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: fmt.Sprintf("APP_%d", i), Value: "v"})
	}
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "APP_STAGING", Value: "v", EnvironmentScope: "staging"})
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "OTHER", Value: "v"})
	e.fake.SetGroupVariable(other, gitlabfake.Variable{Key: "APP_GROUP", Value: "v"})
	ops := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) {
		s.Environment = "production"
		s.GroupIDs = []string{fmt.Sprint(other)}
	}))
	var keys []string
	token, pages := "", 0
	for {
		page, err := ops.Lister.List(context.Background(), engine.ListRequest{Prefix: "APP_", Limit: 3, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Items) > 3 {
			t.Fatalf("a page of %d items over a limit of 3", len(page.Items))
		}
		for _, it := range page.Items {
			keys = append(keys, it.Key)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	want := "APP_0 APP_1 APP_2 APP_3 APP_4 APP_5 APP_6 APP_GROUP"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("listed %q; want %q", got, want)
	}
	// 9 project variables in pages of 3, and the group's one page.
	if pages != 4 || e.fake.Calls("list") != 4 {
		t.Errorf("%d pages, %d list calls; want 4 each", pages, e.fake.Calls("list"))
	}
	_, err := ops.Lister.List(context.Background(), engine.ListRequest{Tags: map[string]string{"a": "b"}})
	mustClass(t, err, engine.ErrNotSupported)
}

func TestCABundleFromAConfigMapAndAnUntrustedServer(t *testing.T) {
	e := newEnv(t)
	e.fake.SetProjectVariable(project, gitlabfake.Variable{Key: "K", Value: "v"})
	e.deps.SetConfigMap("gitlab-ca", "ca.crt", e.fake.CAPEM())
	ops := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) {
		s.CABundle = nil
		s.CAProvider = &v1alpha1.CAProvider{Type: "ConfigMap", Name: "gitlab-ca", Key: "ca.crt"}
	}))
	if got := read(t, ops, "K"); got != "v" {
		t.Errorf("read %q", got)
	}
	untrusted := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.CABundle = nil }))
	_, err := untrusted.Reader.GetSecret(context.Background(), engine.Ref{Key: "K"})
	mustClass(t, err, engine.ErrUnavailable, e.fake.URL())
	if n := e.fake.Calls("get"); n != 1 {
		t.Errorf("%d reads reached the fake; the untrusted one must not", n)
	}
}

func TestValidate(t *testing.T) {
	for name, spec := range map[string]*v1alpha1.GitLabProvider{
		"no project or group":  {},
		"inherit without one":  {GroupIDs: []string{"1"}, InheritFromGroups: true},
		"url with a query":     {ProjectID: "1", URL: "https://gitlab.example.com/?x=1"},
		"url of another shape": {ProjectID: "1", URL: "gitlab.example.com"},
		"both CA sources":      {ProjectID: "1", CABundle: []byte("x"), CAProvider: &v1alpha1.CAProvider{Type: "Secret", Name: "a", Key: "b"}},
	} {
		if err := (Factory{}).Validate(store(spec)); !errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := (Factory{}).Validate(store(&v1alpha1.GitLabProvider{GroupIDs: []string{"1"}})); err != nil {
		t.Errorf("groups alone: %v", err)
	}
	// A store of groups only has no writer: publishing needs a project.
	e := newEnv(t)
	if ops := e.ops(t, e.spec(func(s *v1alpha1.GitLabProvider) { s.ProjectID, s.GroupIDs = "", []string{"7"} })); ops.Writer != nil {
		t.Error("a store without projectID can write")
	}
}

func TestScopesOfASharedStoreNeverShareAVariable(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, e.spec())
	owner := engine.Owner{ID: "PushSecret/team-a/p"}
	fields := map[string][]byte{"v": []byte("a")}
	a, err := ops.Scope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err = a.Writer.PutSecret(context.Background(), "b_x", engine.Publication{Fields: fields}, owner); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.ProjectVariable(project, "NS6_team_a_b_x", "*"); !ok {
		t.Fatal("the scoped write is not at NS6_team_a_b_x")
	}
	// "team" with key "a_b_x" would be team_a_b_x without the length.
	b, _ := ops.Scope("team")
	_, err = b.Reader.GetSecret(context.Background(), engine.Ref{Key: "a_b_x"})
	mustClass(t, err, engine.ErrNotFound)
	page, err := a.Lister.List(context.Background(), engine.ListRequest{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Key != "b_x" {
		t.Fatalf("the scope lists %+v, %v", page.Items, err)
	}
}
