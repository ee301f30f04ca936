package alibaba

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/alibabafake"
	"github.com/watchword-dev/watchword/test/azurefake"
)

const (
	keyID     = "LTAI5tWatchwordReader"
	keySecret = "s3cr3t-access-key-secret"
)

var allActions = []string{"kms:GetSecretValue", "kms:ListSecretVersionIds", "kms:ListSecrets", "kms:DescribeSecret", "kms:CreateSecret",
	"kms:PutSecretValue", "kms:TagResource", "kms:DeleteSecret"}

type env struct {
	fake *alibabafake.Server
	deps *azurefake.Deps
}

// newEnv is a fake KMS with a RAM user's AccessKey allowed every action
// the provider uses, its pair in the Secret ali/id and ali/secret. (test/azurefake's
// Deps stands in for the cluster's Secrets.)
func newEnv(t *testing.T) *env {
	t.Helper()
	f := alibabafake.New(t)
	f.AddKey(keyID, keySecret, allActions...)
	d := &azurefake.Deps{Namespace: "team"}
	d.SetSecret("ali", "id", []byte(keyID))
	d.SetSecret("ali", "secret", []byte(keySecret))
	return &env{fake: f, deps: d}
}

func (e *env) store() provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "ali", Spec: &v1alpha1.SecretStoreProvider{Alibaba: &v1alpha1.AlibabaProvider{
		RegionID: "cn-hangzhou", Endpoint: e.fake.Endpoint(),
		Auth: v1alpha1.AlibabaAuth{SecretRef: &v1alpha1.AlibabaAuthSecretRef{
			AccessKeyID:     v1alpha1.SecretKeySelector{Name: "ali", Key: "id"},
			AccessKeySecret: v1alpha1.SecretKeySelector{Name: "ali", Key: "secret"}}}}}}
}

func (e *env) ops(t *testing.T) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), e.store(), e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
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
	for _, secret := range []string{"s3cr3t", keySecret} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret", err)
		}
	}
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "alibaba")
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "alibaba",
		Ops:  e.ops(t),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			if !alibabafake.ValidSecretName(key) {
				return fmt.Errorf("KMS would refuse the secret name %q", key)
			}
			m := make(map[string]string, len(fields))
			for k, v := range fields {
				m[k] = string(v)
			}
			data, err := json.Marshal(m)
			if err != nil {
				return err
			}
			e.fake.PutValue(key, data)
			return nil
		},
		Key:           func(name string) string { return "conformance/" + name },
		KeepsVersions: true,
	})
}

func TestStagesVersionIDsAndProperties(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	v1 := e.fake.PutValue("db", []byte(`{"user":"a","port":5432}`))
	v2 := e.fake.PutValue("db", []byte(`plain-s3cr3t-value`))
	e.fake.SetStage("db", "stable", v1)
	ops := e.ops(t)

	obj, err := ops.Reader.GetSecret(c, engine.Ref{Key: "db"})
	if err != nil || obj.Version != v2 || string(obj.Value) != "plain-s3cr3t-value" || obj.Fields != nil {
		t.Fatalf("ACSCurrent: %q %v", obj.Version, err)
	}
	for _, version := range []string{"ACSPrevious", "stage:stable", v1} {
		obj, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db", Version: version})
		if err != nil || obj.Version != v1 || string(obj.Fields["user"]) != "a" || string(obj.Fields["port"]) != "5432" {
			t.Fatalf("version %q: %q %v", version, obj.Version, err)
		}
		if string(obj.Value) != `{"user":"a","port":5432}` {
			t.Fatalf("version %q: the JSON value's text has %d bytes", version, len(obj.Value))
		}
	}
	_, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db", Version: "stage:"})
	mustClass(t, err, engine.ErrInvalidConfig, "names no stage")
	_, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db", Version: "stage:gone"})
	mustClass(t, err, engine.ErrNotFound, "Forbidden.ResourceNotFound", `"db"`)
	_, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db?x"})
	// A name the store cannot hold is the caller's input, refused before
	// any call: never the store's configuration nor its outage.
	if c := failure.Classify(err); c.Reason != failure.RemoteNameInvalid || !c.Terminal || !strings.Contains(err.Error(), "secret name") {
		t.Fatalf("an invalid name: %v (%+v), want a terminal RemoteNameInvalid", err, c)
	}

	// The current version, from the version list: no value is read.
	before := e.fake.Calls("GetSecretValue")
	v, err := ops.Versions.CurrentVersion(c, "db")
	if err != nil || v != v2 {
		t.Fatalf("CurrentVersion %q, %v; want %q", v, err, v2)
	}
	if e.fake.Calls("GetSecretValue") != before || e.fake.Calls("ListSecretVersionIds") != 1 {
		t.Fatalf("CurrentVersion made %d value reads and %d list calls", e.fake.Calls("GetSecretValue")-before, e.fake.Calls("ListSecretVersionIds"))
	}
	v3 := e.fake.PutValue("db", []byte("next"))
	if v, err = ops.Versions.CurrentVersion(c, "db"); err != nil || v != v3 {
		t.Fatalf("after a new version: %q, %v", v, err)
	}
}

func TestCurrentVersionPagesThroughManyVersions(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	var last string
	for range 150 {
		last = e.fake.PutValue("many", []byte("x"))
	}
	// Custom stages keep 149 versions listed; ACSCurrent is on the
	// second page.
	for i := 1; i < 150; i++ {
		e.fake.SetStage("many", "keep"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	v, err := e.ops(t).Versions.CurrentVersion(c, "many")
	if err != nil || v != last {
		t.Fatalf("CurrentVersion %q, %v; want %q", v, err, last)
	}
	if n := e.fake.Calls("ListSecretVersionIds"); n != 2 {
		t.Fatalf("%d list calls; want 2 pages", n)
	}
}

func TestBinarySecret(t *testing.T) {
	e := newEnv(t)
	e.fake.PutBinary("cert", []byte{0, 1, 2, 0xff})
	obj, err := e.ops(t).Reader.GetSecret(ctx(t), engine.Ref{Key: "cert"})
	if err != nil || string(obj.Value) != "\x00\x01\x02\xff" || obj.Fields != nil {
		t.Fatalf("binary: %v %v", obj.Value, err)
	}
}

func TestRefusals(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	e.fake.PutValue("db", []byte("s3cr3t-value"))

	// A key whose policy lacks GetSecretValue.
	e.fake.AddKey("LTAI5tLister", "lister-secret", "kms:ListSecretVersionIds")
	e.deps.SetSecret("ali", "id", []byte("LTAI5tLister"))
	e.deps.SetSecret("ali", "secret", []byte("lister-secret"))
	_, err := e.ops(t).Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "Forbidden.RAM", `"LTAI5tLister"`, "kms:GetSecretValue")

	// A wrong secret: the signature does not verify.
	e.deps.SetSecret("ali", "id", []byte(keyID))
	e.deps.SetSecret("ali", "secret", []byte("s3cr3t-but-wrong"))
	_, err = e.ops(t).Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "SignatureDoesNotMatch", `"`+keyID+`"`)

	// An unknown key, and a disabled one.
	e.deps.SetSecret("ali", "id", []byte("LTAI5tNobody"))
	_, err = e.ops(t).Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "InvalidAccessKeyId.NotFound")
	e.deps.SetSecret("ali", "id", []byte(keyID))
	e.deps.SetSecret("ali", "secret", []byte(keySecret))
	e.fake.DisableKey(keyID)
	_, err = e.ops(t).Versions.CurrentVersion(c, "db")
	mustClass(t, err, engine.ErrUnauthenticated, "InvalidAccessKeyId.Inactive")
	if n, r := e.fake.Calls("GetSecretValue"), e.fake.Calls("refused"); n != 0 || r != 4 {
		t.Fatalf("%d GetSecretValue calls served and %d refused; want 0 and 4", n, r)
	}
}

func TestClockSkewIsRefused(t *testing.T) {
	e := newEnv(t)
	e.fake.PutValue("db", []byte("v"))
	e.fake.Skew(20 * time.Minute)
	_, err := e.ops(t).Reader.GetSecret(ctx(t), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "InvalidTimeStamp.Expired")
}

func TestThrottlingIsReported(t *testing.T) {
	e := newEnv(t)
	e.fake.PutValue("db", []byte("v"))
	ops := e.ops(t)
	e.fake.Throttle(1)
	_, err := ops.Reader.GetSecret(ctx(t), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "Throttling.User")
	if obj, err := ops.Reader.GetSecret(ctx(t), engine.Ref{Key: "db"}); err != nil || string(obj.Value) != "v" {
		t.Fatalf("after the throttled call: %v", err)
	}
}

func TestUnavailableEndpoint(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	s.Spec.Alibaba.Endpoint = "http://127.0.0.1:1"
	ops, err := Factory{}.New(context.Background(), s, e.deps)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Reader.GetSecret(ctx(t), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnavailable, "127.0.0.1:1")
	s.Spec.Alibaba.Endpoint = "https://kms.example.com/path"
	mustClass(t, Factory{}.Validate(s), engine.ErrInvalidConfig, "alibaba.endpoint")
}

const (
	roleARN     = "acs:ram::1234567890123456:role/watchword-reader"
	providerARN = "acs:ram::1234567890123456:oidc-provider/ack-rrsa-test"
)

func (e *env) rrsaStore(sa string) provider.Store {
	s := e.store()
	s.Spec.Alibaba.STSEndpoint = e.fake.Endpoint()
	s.Spec.Alibaba.Auth = v1alpha1.AlibabaAuth{RRSA: &v1alpha1.AlibabaRRSA{
		ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: sa}, RoleARN: roleARN, OIDCProviderARN: providerARN}}
	return s
}

func TestRRSAExchangesAServiceAccountToken(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	iss := azurefake.NewIssuer()
	e.deps.Issuer = iss
	e.fake.VerifyOIDCToken = iss.Verify
	e.fake.AddOIDCRole(roleARN, providerARN, "system:serviceaccount:team:reader", "kms:GetSecretValue", "kms:ListSecretVersionIds")
	v1 := e.fake.PutValue("db", []byte(`{"user":"a"}`))
	ops, err := Factory{}.New(c, e.rrsaStore("reader"), e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if e.fake.Calls("AssumeRoleWithOIDC") != 0 || e.deps.TokenRequests != 0 {
		t.Fatal("building the client exchanged a token")
	}
	obj, err := ops.Reader.GetSecret(c, engine.Ref{Key: "db"})
	if err != nil || string(obj.Fields["user"]) != "a" {
		t.Fatalf("read: %v", err)
	}
	if v, verr := ops.Versions.CurrentVersion(c, "db"); verr != nil || v != v1 {
		t.Fatalf("CurrentVersion %q, %v", v, verr)
	}
	// One token and one exchange; the role's credentials are then reused.
	if e.deps.TokenRequests != 1 || e.fake.Calls("AssumeRoleWithOIDC") != 1 {
		t.Fatalf("%d token requests, %d exchanges; want 1 each", e.deps.TokenRequests, e.fake.Calls("AssumeRoleWithOIDC"))
	}

	// Credentials within five minutes of expiry are renewed.
	e.fake.CredentialLifetime = 4 * time.Minute
	ops, err = Factory{}.New(c, e.rrsaStore("reader"), e.deps)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.fake.Calls("AssumeRoleWithOIDC"); n != 3 {
		t.Fatalf("%d exchanges; want 3 (short-lived credentials renewed)", n)
	}
}

func TestRRSARefusals(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	iss := azurefake.NewIssuer()
	e.deps.Issuer = iss
	e.fake.VerifyOIDCToken = iss.Verify
	e.fake.AddOIDCRole(roleARN, providerARN, "system:serviceaccount:team:reader", "kms:ListSecretVersionIds")
	e.fake.PutValue("db", []byte("s3cr3t-value"))

	// Another service account: the role's trust policy refuses it.
	ops, _ := Factory{}.New(c, e.rrsaStore("intruder"), e.deps)
	_, err := ops.Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "AuthenticationFail.NoPermission", roleARN, `"team/intruder"`, `"db"`)

	// A token for another audience.
	s := e.rrsaStore("reader")
	s.Spec.Alibaba.Auth.RRSA.ServiceAccountRef.Audiences = []string{"vault"}
	ops, _ = Factory{}.New(c, s, e.deps)
	_, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrUnauthenticated, "AuthenticationFail.OIDCToken.Invalid")

	// An unknown OIDC provider.
	s = e.rrsaStore("reader")
	s.Spec.Alibaba.Auth.RRSA.OIDCProviderARN = providerARN + "-other"
	ops, _ = Factory{}.New(c, s, e.deps)
	_, err = ops.Versions.CurrentVersion(c, "db")
	mustClass(t, err, engine.ErrUnauthenticated, "EntityNotExist.OIDCProvider")

	// The role may list, not read.
	ops, _ = Factory{}.New(c, e.rrsaStore("reader"), e.deps)
	if _, err = ops.Versions.CurrentVersion(c, "db"); err != nil {
		t.Fatal(err)
	}
	_, err = ops.Reader.GetSecret(c, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "Forbidden.RAM", roleARN)
}

func TestPublishTagsOwnershipAndAdoption(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	ops := e.ops(t)
	owner := engine.Owner{ID: "PushSecret/team/p/0d8c"}
	pub := engine.Publication{Fields: map[string][]byte{"k": []byte("s3cr3t-value")}, Tags: map[string]string{"team": "a"}}
	v, err := ops.Writer.PutSecret(c, "pushed", pub, owner)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := e.fake.Value("pushed")
	tags, _ := e.fake.Tags("pushed")
	if string(data) != `{"k":"s3cr3t-value"}` || tags[OwnerTag] != owner.ID || tags["team"] != "a" {
		t.Fatalf("tags %v", tags)
	}
	// Unchanged: no new version.
	if again, perr := ops.Writer.PutSecret(c, "pushed", pub, owner); perr != nil || again != v || e.fake.Calls("PutSecretValue") != 0 {
		t.Fatalf("unchanged put %q (first %q), %v, %d PutSecretValue", again, v, perr, e.fake.Calls("PutSecretValue"))
	}
	_, err = ops.Writer.PutSecret(c, "pushed", pub, engine.Owner{ID: "PushSecret/other/q/1"})
	mustClass(t, err, engine.ErrNotOwned, `"`+owner.ID+`"`, OwnerTag)
	err = ops.Writer.DeleteSecret(c, "pushed", engine.Owner{ID: "PushSecret/other/q/1"})
	mustClass(t, err, engine.ErrNotOwned, `"`+owner.ID+`"`)
	_, err = ops.Writer.PutSecret(c, "bad", engine.Publication{Fields: pub.Fields, Tags: map[string]string{OwnerTag: "me"}}, owner)
	mustClass(t, err, engine.ErrInvalidConfig, "ownership marker")

	// An untagged secret is taken over only when adopting: it gains the
	// tag and a new version, and keeps its tags.
	e.fake.PutValue("foreign", []byte("theirs"))
	_, err = ops.Writer.PutSecret(c, "foreign", pub, owner)
	mustClass(t, err, engine.ErrNotOwned, "no "+OwnerTag+" tag", "adopt")
	if data, _ = e.fake.Value("foreign"); string(data) != "theirs" {
		t.Fatal("an untagged secret was written over")
	}
	if _, err = ops.Writer.PutSecret(c, "foreign", pub, engine.Owner{ID: owner.ID, Adopt: true}); err != nil {
		t.Fatal(err)
	}
	if tags, _ = e.fake.Tags("foreign"); tags[OwnerTag] != owner.ID {
		t.Fatalf("the adopted secret's tags %v", tags)
	}
	prev, err := ops.Reader.GetSecret(c, engine.Ref{Key: "foreign", Version: "ACSPrevious"})
	if err != nil || string(prev.Value) != "theirs" {
		t.Fatalf("ACSPrevious after adoption: %v", err)
	}
	if err = ops.Writer.DeleteSecret(c, "foreign", owner); err != nil {
		t.Fatal(err)
	}
	if _, found := e.fake.Tags("foreign"); found {
		t.Fatal("the owned secret is still there")
	}
}
