package gcpsm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/azurefake"
	"github.com/watchword-dev/watchword/test/gcpfake"
)

const (
	project = "watchword-test"
	pool    = "//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/k8s/providers/cluster"
)

var allPerms = []string{"secretmanager.versions.access", "secretmanager.versions.get", "secretmanager.secrets.get", "secretmanager.secrets.list",
	"secretmanager.secrets.create", "secretmanager.secrets.update", "secretmanager.versions.add", "secretmanager.secrets.delete"}

type env struct {
	fake  *gcpfake.Server
	deps  *azurefake.Deps
	email string
}

// newEnv is a fake Secret Manager with a service account that may do
// everything, its key in the Secret gcp/key, and a pool provider trusting
// the test issuer's tokens. The issuer and Deps of test/azurefake stand in
// for the cluster's service-account tokens.
func newEnv(t *testing.T) *env {
	t.Helper()
	f := gcpfake.New(t, project)
	email, key := f.NewServiceAccount("watchword", allPerms...)
	iss := azurefake.NewIssuer()
	f.VerifySubjectToken = iss.Verify
	f.AddPool(pool)
	d := &azurefake.Deps{Issuer: iss, Namespace: "team"}
	d.SetSecret("gcp", "key", key)
	return &env{fake: f, deps: d, email: email}
}

func keySpec() *v1alpha1.GCPSMProvider {
	return &v1alpha1.GCPSMProvider{ProjectID: project, Auth: v1alpha1.GCPSMAuth{SecretRef: &v1alpha1.GCPSMSecretRef{
		SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp", Key: "key"}}}}
}

func wifSpec(email string) *v1alpha1.GCPSMProvider {
	return &v1alpha1.GCPSMProvider{ProjectID: project, Auth: v1alpha1.GCPSMAuth{WorkloadIdentityFederation: &v1alpha1.GCPWorkloadIdentityFederation{
		Audience: pool, ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "reader"}, ServiceAccountEmail: email}}}
}

func store(spec *v1alpha1.GCPSMProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "gcp", Spec: &v1alpha1.SecretStoreProvider{GCPSM: spec}}
}

func (e *env) ops(t *testing.T, s provider.Store) engine.Ops {
	t.Helper()
	ops, err := Factory{GRPCOptions: e.fake.GRPCOptions(), HTTPClient: e.fake.HTTPClient()}.New(context.Background(), s, e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "gcpsm")
}

func TestConformance(t *testing.T) {
	for _, location := range []string{"", "europe-west1"} {
		t.Run("location="+location, func(t *testing.T) {
			e := newEnv(t)
			spec := keySpec()
			spec.Location = location
			parent := "projects/" + project
			if location != "" {
				parent += "/locations/" + location
			}
			conformance.Run(t, conformance.Harness{
				Name: "gcpsm",
				Ops:  e.ops(t, store(spec)),
				Seed: func(_ context.Context, key string, fields map[string][]byte) error {
					if !gcpfake.ValidSecretID(key) {
						return fmt.Errorf("Secret Manager would refuse the secret ID %q", key)
					}
					payload, err := fieldsPayload(fields)
					if err != nil {
						return err
					}
					e.fake.AddVersion(parent+"/secrets/"+key, payload)
					return nil
				},
				Key:           func(name string) string { return "conformance-" + name },
				KeepsVersions: true,
				// Artifact Registry tokens, as dataFrom registryToken asks
				// for them: live access tokens the fake issued.
				Lease: &engine.LeaseRequest{Registry: v1alpha1.RegistryGAR, RegistryHost: "europe-docker.pkg.dev"},
				LeaseWorks: func(_ context.Context, obj engine.Object) error {
					if _, ok := e.fake.TokenPrincipal(string(obj.Fields["password"])); !ok {
						return errors.New("the password is not a live access token")
					}
					return nil
				},
			})
			// Every call went to the endpoint of the secrets' location.
			want := "secretmanager.googleapis.com"
			if location != "" {
				want = "secretmanager." + location + ".rep.googleapis.com"
			}
			for _, a := range e.fake.Authorities() {
				if !strings.HasPrefix(a, want) {
					t.Fatalf("a call went to %q; want %q", a, want)
				}
			}
		})
	}
}

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
	for _, secret := range []string{"s3cr3t-value", "PRIVATE KEY", "ya29."} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret", err)
		}
	}
}

func TestVersionsAliasesAndLatest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	name := "projects/" + project + "/secrets/db"
	e.fake.AddVersion(name, []byte(`{"user":"a","port":5432}`))
	e.fake.AddVersion(name, []byte(`plain-s3cr3t-value`))
	e.fake.SetAlias(name, "stable", 1)
	ops := e.ops(t, store(keySpec()))
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	if err != nil || obj.Version != "2" || string(obj.Value) != "plain-s3cr3t-value" || obj.Fields != nil {
		t.Fatalf("latest: %q %v", obj.Version, err)
	}
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: "stable"})
	if err != nil || obj.Version != "1" || string(obj.Fields["user"]) != "a" || string(obj.Fields["port"]) != "5432" {
		t.Fatalf("alias: %q %v", obj.Version, err)
	}
	if string(obj.Value) != `{"user":"a","port":5432}` {
		t.Fatalf("the JSON payload's text has %d bytes", len(obj.Value))
	}
	before := e.fake.Calls("AccessSecretVersion")
	v, err := ops.Versions.CurrentVersion(ctx, "db")
	if err != nil || v != "2" {
		t.Fatalf("CurrentVersion %q, %v", v, err)
	}
	if e.fake.Calls("AccessSecretVersion") != before {
		t.Fatal("CurrentVersion read the payload")
	}
	e.fake.SetState(name, 1, secretmanagerpb.SecretVersion_DISABLED)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: "1"})
	mustClass(t, err, engine.ErrPermissionDenied, "disabled")
	e.fake.SetState(name, 1, secretmanagerpb.SecretVersion_DESTROYED)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: "1"})
	mustClass(t, err, engine.ErrNotFound, "destroyed")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db/x"})
	// A name the store cannot hold is the caller's input, refused before
	// any call: never the store's configuration nor its outage.
	if c := failure.Classify(err); c.Reason != failure.RemoteNameInvalid || !c.Terminal || !strings.Contains(err.Error(), "secret ID") {
		t.Fatalf("an invalid name: %v (%+v), want a terminal RemoteNameInvalid", err, c)
	}
}

func TestWorkloadIdentityFederationWithImpersonation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.fake.AddVersion("projects/"+project+"/secrets/db", []byte("v"))
	reader, _ := e.fake.NewServiceAccount("reader", "secretmanager.versions.access")
	subject := gcpfake.FederatedPrincipal(pool, "system:serviceaccount:team:reader")
	e.fake.AllowImpersonation(subject, reader)
	ops := e.ops(t, store(wifSpec(reader)))
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "v" {
		t.Fatalf("read %q, %v", obj.Value, err)
	}
	// One subject token, one exchange at STS, one impersonation; then the
	// token is cached.
	if _, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); err != nil {
		t.Fatal(err)
	}
	if e.deps.TokenRequests != 1 || e.fake.Calls("sts") != 1 || e.fake.Calls("generateAccessToken") != 1 {
		t.Fatalf("TokenRequests %d, exchanges %d, impersonations %d; want 1 each", e.deps.TokenRequests, e.fake.Calls("sts"), e.fake.Calls("generateAccessToken"))
	}
	// The impersonated account may read, not write.
	_, err = ops.Writer.PutSecret(ctx, "db", engine.Publication{Fields: map[string][]byte{"a": []byte("s3cr3t-value")}}, engine.Owner{ID: "PushSecret/team/p"})
	mustClass(t, err, engine.ErrPermissionDenied, "secretmanager.secrets.get", reader, `"team/reader"`)

	// Without impersonation, the federated principal is granted directly.
	e.fake.Grant(subject, "secretmanager.versions.access")
	obj, err = e.ops(t, store(wifSpec(""))).Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "v" {
		t.Fatalf("direct read %q, %v", obj.Value, err)
	}
}

func TestWorkloadIdentityFederationRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.GCPSMProvider)
		want   []string
	}{
		{"unknown pool provider", func(s *v1alpha1.GCPSMProvider) {
			s.Auth.WorkloadIdentityFederation.Audience = strings.Replace(pool, "cluster", "other", 1)
		}, []string{"invalid_target", "does not exist"}},
		{"token for another audience", func(s *v1alpha1.GCPSMProvider) {
			s.Auth.WorkloadIdentityFederation.ServiceAccountRef.Audiences = []string{"vault"}
		}, []string{"invalid_grant", "issuer or audience"}},
		{"impersonation not allowed", func(*v1alpha1.GCPSMProvider) {}, []string{"PERMISSION_DENIED", "Workload Identity User"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			spec := wifSpec(e.email)
			tc.change(spec)
			_, err := e.ops(t, store(spec)).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
			mustClass(t, err, engine.ErrPermissionDenied, append(tc.want, `"team/reader"`)...)
		})
	}
}

func TestBadKeyAndRefusalName(t *testing.T) {
	e := newEnv(t)
	e.deps.SetSecret("gcp", "key", []byte(`{"type":"authorized_user"}`))
	_, err := Factory{}.New(context.Background(), store(keySpec()), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "service-account JSON key")

	email, key := e.fake.NewServiceAccount("weak")
	e.deps.SetSecret("gcp", "key", key)
	_, err = e.ops(t, store(keySpec())).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, email, "secretmanager.versions.access", "Secret Accessor")
}

func TestThrottlingIsRetriedThenReported(t *testing.T) {
	e := newEnv(t)
	e.fake.AddVersion("projects/"+project+"/secrets/db", []byte("v"))
	ops := e.ops(t, store(keySpec()))
	e.fake.Throttle(1)
	if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("one throttled answer then success: %v", err)
	}
	if e.fake.Calls("throttled") != 1 {
		t.Fatalf("throttled %d", e.fake.Calls("throttled"))
	}
}

// TestThrottlingHonoursRetryInfo: a RESOURCE_EXHAUSTED answer's RetryInfo
// delay is waited out by the client when short, and handed to the store's
// gate (an error that carries the delay) when long, without more calls.
func TestThrottlingHonoursRetryInfo(t *testing.T) {
	e := newEnv(t)
	e.fake.AddVersion("projects/"+project+"/secrets/db", []byte("v"))
	ops := e.ops(t, store(keySpec()))
	ctx := context.Background()

	e.fake.ThrottleFor(1, 30*time.Second)
	_, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "RESOURCE_EXHAUSTED", "asked to wait 30s")
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != 30*time.Second {
		t.Fatalf("error %v does not carry the 30s hint", err)
	}
	if n := e.fake.Calls("throttled"); n != 1 {
		t.Fatalf("throttled answers %d; want 1 (a long hint is not retried by the client)", n)
	}

	// Short hints are waited out, at most three times; a fourth throttled
	// answer is reported with its hint.
	e.fake.ThrottleFor(4, 100*time.Millisecond)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	if !errors.As(err, &ra) || ra.RetryAfter() != 100*time.Millisecond || !errors.Is(err, engine.ErrThrottled) {
		t.Fatalf("error %v: want ErrThrottled carrying the 100ms hint", err)
	}
	if n := e.fake.Calls("throttled"); n != 1+4 {
		t.Fatalf("throttled answers %d; want 5", n)
	}
	e.fake.ThrottleFor(3, 100*time.Millisecond)
	if _, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("three throttled answers then success: %v", err)
	}

	// Without RetryInfo, plain ErrThrottled after the client's retries.
	e.fake.ThrottleFor(4, 0)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "RESOURCE_EXHAUSTED")
	if errors.As(err, &ra) {
		t.Fatalf("error %v carries a hint the service did not send", err)
	}
}

func TestPublishLabelsAndAdoption(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ops := e.ops(t, store(keySpec()))
	owner := engine.Owner{ID: "PushSecret/team/p/0d8c"}
	pub := engine.Publication{Fields: map[string][]byte{"k": []byte("s3cr3t-value")}, Tags: map[string]string{"team": "a"}}
	v, err := ops.Writer.PutSecret(ctx, "pushed", pub, owner)
	if err != nil || v != "1" {
		t.Fatalf("put %q, %v", v, err)
	}
	data, labels, _ := e.fake.Secret("projects/" + project + "/secrets/pushed")
	if string(data) != `{"k":"s3cr3t-value"}` || labels[OwnerLabel] != OwnerLabelValue(owner.ID) || labels["team"] != "a" {
		t.Fatalf("labels %v", labels)
	}
	_, err = ops.Writer.PutSecret(ctx, "pushed", pub, engine.Owner{ID: "PushSecret/other/q/1"})
	mustClass(t, err, engine.ErrNotOwned, strconv.Quote(owner.ID))
	_, err = ops.Writer.PutSecret(ctx, "bad-labels", engine.Publication{Fields: pub.Fields, Tags: map[string]string{"Team": "A"}}, owner)
	mustClass(t, err, engine.ErrInvalidConfig, "labels")

	// An unlabelled secret is taken over only when adopting: it gains the
	// label, and keeps the labels it had.
	foreign := "projects/" + project + "/secrets/foreign"
	e.fake.AddVersion(foreign, []byte("theirs"))
	_, err = ops.Writer.PutSecret(ctx, "foreign", pub, owner)
	mustClass(t, err, engine.ErrNotOwned, "no "+OwnerLabel+" label", "adopt")
	v, err = ops.Writer.PutSecret(ctx, "foreign", pub, engine.Owner{ID: owner.ID, Adopt: true})
	if err != nil || v != "2" {
		t.Fatalf("adopting put %q, %v", v, err)
	}
	if _, labels, _ = e.fake.Secret(foreign); labels[OwnerLabel] != OwnerLabelValue(owner.ID) {
		t.Fatalf("the adopted secret's labels %v", labels)
	}
	// Unchanged: no new version.
	if v, err = ops.Writer.PutSecret(ctx, "foreign", pub, owner); err != nil || v != "2" {
		t.Fatalf("unchanged put %q, %v", v, err)
	}
}
