package azurekv

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"github.com/watchword-dev/watchword/test/azurefake"
)

const (
	tenant     = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	vaultHost  = "watchword.vault.azure.net"
	appID      = "0b1f2c3d-0000-4000-8000-000000000001"
	appSecret  = "client-secret-value-1"
	readerSubj = "system:serviceaccount:team:reader"
)

// env is a fake Azure with one vault and one app that may do everything.
type env struct {
	fake *azurefake.Server
	deps *azurefake.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := azurefake.New(t)
	f.AddVault(vaultHost, tenant, azurefake.Public)
	f.AddApp(tenant, appID, appSecret, readerSubj, "get", "list", "set", "delete")
	iss := azurefake.NewIssuer()
	f.VerifyAssertion = iss.Verify
	d := &azurefake.Deps{Issuer: iss, Namespace: "team"}
	d.SetSecret("azure", "client-secret", []byte(appSecret))
	return &env{fake: f, deps: d}
}

func secretStore(spec *v1alpha1.AzureKVProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "azure",
		Spec: &v1alpha1.SecretStoreProvider{AzureKV: spec}}
}

func clientSecretSpec() *v1alpha1.AzureKVProvider {
	return &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, TenantID: tenant, Auth: v1alpha1.AzureKVAuth{
		ClientSecret: &v1alpha1.AzureClientSecretAuth{ClientID: appID,
			ClientSecretRef: v1alpha1.SecretKeySelector{Name: "azure", Key: "client-secret"}}}}
}

func workloadSpec() *v1alpha1.AzureKVProvider {
	return &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, TenantID: tenant, Auth: v1alpha1.AzureKVAuth{
		WorkloadIdentity: &v1alpha1.AzureWorkloadIdentityAuth{ClientID: appID,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "reader"}}}}
}

func (e *env) ops(t *testing.T, store provider.Store) engine.Ops {
	t.Helper()
	ops, err := Factory{Transport: e.fake.Client()}.New(context.Background(), store, e.deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "azurekv")
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	conformance.Run(t, conformance.Harness{
		Name: "azurekv",
		Ops:  e.ops(t, secretStore(clientSecretSpec())),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			if !azurefake.ValidSecretName(key) {
				return fmt.Errorf("Key Vault would refuse the secret name %q", key)
			}
			text, err := fieldsText(fields)
			if err != nil {
				return err
			}
			e.fake.SetSecret(vaultHost, key, text, nil)
			return nil
		},
		Key:           func(name string) string { return "conformance-" + name },
		KeepsVersions: true,
	})
}

// mustClass fails unless err wraps class, and checks that the message
// holds no secret value.
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
	for _, secret := range []string{appSecret, "s3cr3t-value", "fake-at-"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a secret", err)
		}
	}
}

func TestWorkloadIdentityPresentsARequestedServiceAccountToken(t *testing.T) {
	e := newEnv(t)
	e.fake.SetSecret(vaultHost, "db", `{"user":"app","password":"s3cr3t-value"}`, nil)
	ops := e.ops(t, secretStore(workloadSpec()))
	if e.deps.TokenRequests != 0 {
		t.Fatalf("New requested %d tokens; the first call should", e.deps.TokenRequests)
	}
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if string(obj.Fields["user"]) != "app" || string(obj.Fields["password"]) != "s3cr3t-value" {
		t.Fatalf("fields %v", keys(obj.Fields))
	}
	// Without a property, a JSON value is its text exactly as stored.
	if string(obj.Value) != `{"user":"app","password":"s3cr3t-value"}` {
		t.Fatalf("the JSON value's text has %d bytes", len(obj.Value))
	}
	// The first request met the challenge, the token endpoint took the
	// service account's token as a federated assertion.
	if e.fake.Calls("challenge") != 1 || e.fake.Calls("token") != 1 || e.deps.TokenRequests != 1 {
		t.Fatalf("challenges %d, token requests to Entra %d, TokenRequests %d; want 1 each",
			e.fake.Calls("challenge"), e.fake.Calls("token"), e.deps.TokenRequests)
	}
	// The access token is cached by the SDK: a second read signs in no more.
	if _, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatal(err)
	}
	if e.fake.Calls("token") != 1 {
		t.Fatalf("a second read signed in again (%d token requests)", e.fake.Calls("token"))
	}
	// A token the vault stops accepting before the SDK's clock says it
	// expires (revoked) is reported as a refusal naming who; the next
	// call signs in again (the SDK alone would keep presenting it).
	e.fake.ExpireTokens()
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "refused the token", `service account "team/reader"`, "HTTP 401")
	if _, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("the call after a revoked token: %v", err)
	}
	if e.fake.Calls("token") != 2 || e.deps.TokenRequests != 2 {
		t.Fatalf("token requests to Entra %d, TokenRequests %d; want 2 each", e.fake.Calls("token"), e.deps.TokenRequests)
	}
}

func TestWorkloadIdentityRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.AzureKVProvider)
		want   []string
	}{
		{"subject without a federated credential", func(s *v1alpha1.AzureKVProvider) { s.Auth.WorkloadIdentity.ServiceAccountRef.Name = "other" },
			[]string{`service account "team/other"`, "AADSTS700213", "federated credential"}},
		{"audience the credential does not accept", func(s *v1alpha1.AzureKVProvider) {
			s.Auth.WorkloadIdentity.ServiceAccountRef.Audiences = []string{"https://kubernetes.default.svc"}
		}, []string{"AADSTS700212"}},
		{"unknown application", func(s *v1alpha1.AzureKVProvider) { s.Auth.WorkloadIdentity.ClientID = "no-such-app" },
			[]string{`application "no-such-app"`, "AADSTS700016", "check clientID and tenantID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			spec := workloadSpec()
			tc.change(spec)
			_, err := e.ops(t, secretStore(spec)).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
			mustClass(t, err, engine.ErrPermissionDenied, tc.want...)
		})
	}
}

func TestClientSecretRefusedAndRotated(t *testing.T) {
	e := newEnv(t)
	e.fake.SetSecret(vaultHost, "db", "plain", nil)
	e.deps.SetSecret("azure", "client-secret", []byte("an-old-secret"))
	_, err := e.ops(t, secretStore(clientSecretSpec())).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "AADSTS7000215", "wrong or expired", appID)
	if strings.Contains(err.Error(), "an-old-secret") {
		t.Fatal("the error holds the client secret")
	}
	// The Secret is fixed: a new client (as a rotation builds) reads.
	e.deps.SetSecret("azure", "client-secret", []byte(appSecret+"\n"))
	obj, err := e.ops(t, secretStore(clientSecretSpec())).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "plain" || obj.Fields != nil {
		t.Fatalf("read %q, %v", obj.Value, err)
	}
}

func TestManagedIdentityOnlyOnAClusterSecretStore(t *testing.T) {
	e := newEnv(t)
	e.fake.SetSecret(vaultHost, "db", "plain", nil)
	e.fake.AddManagedIdentity("", tenant, appID)
	spec := &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, Auth: v1alpha1.AzureKVAuth{ManagedIdentity: &v1alpha1.AzureManagedIdentityAuth{}}}
	err := Factory{}.Validate(secretStore(spec))
	mustClass(t, err, engine.ErrInvalidConfig, "ClusterSecretStore")
	cluster := provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: "azure", Spec: &v1alpha1.SecretStoreProvider{AzureKV: spec}}
	obj, err := e.ops(t, cluster).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "plain" {
		t.Fatalf("read %q, %v", obj.Value, err)
	}
	if e.fake.Calls("imds") != 1 || e.fake.Calls("token") != 0 {
		t.Fatalf("instance metadata calls %d, Entra token calls %d; want 1 and 0", e.fake.Calls("imds"), e.fake.Calls("token"))
	}
	// A user-assigned identity that the machine does not have.
	spec.Auth.ManagedIdentity.ClientID = "not-assigned"
	_, err = e.ops(t, cluster).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, `user-assigned managed identity "not-assigned"`)
}

func TestSovereignCloud(t *testing.T) {
	e := newEnv(t)
	const gov = "watchword.vault.usgovcloudapi.net"
	e.fake.AddVault(gov, tenant, azurefake.Government)
	e.fake.SetSecret(gov, "db", "gov-value", nil)
	spec := clientSecretSpec()
	spec.VaultURL = "https://" + gov
	// Without the authority host, the public cloud's Entra ID is asked
	// for a token of the Government vault's resource, which it refuses.
	_, err := e.ops(t, secretStore(spec)).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err == nil {
		t.Fatal("the public authority served a Government vault")
	}
	spec.AuthorityHost = "https://login.microsoftonline.us/"
	obj, err := e.ops(t, secretStore(spec)).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if err != nil || string(obj.Value) != "gov-value" {
		t.Fatalf("read %q, %v", obj.Value, err)
	}
}

func TestRefusalNamesCallerAndAction(t *testing.T) {
	e := newEnv(t)
	e.fake.AddApp(tenant, "reader-only", "ro-secret", "", "get")
	e.deps.SetSecret("ro", "s", []byte("ro-secret"))
	e.fake.SetSecret(vaultHost, "db", "v", nil)
	spec := clientSecretSpec()
	spec.Auth.ClientSecret = &v1alpha1.AzureClientSecretAuth{ClientID: "reader-only", ClientSecretRef: v1alpha1.SecretKeySelector{Name: "ro", Key: "s"}}
	ops := e.ops(t, secretStore(spec))
	_, err := ops.Writer.PutSecret(context.Background(), "new", engine.Publication{Fields: map[string][]byte{"a": []byte("s3cr3t-value")}}, engine.Owner{ID: "PushSecret/team/p"})
	// The read before the write is allowed; the write is refused.
	mustClass(t, err, engine.ErrPermissionDenied, `application "reader-only"`, "appid=reader-only", "Microsoft.KeyVault/vaults/secrets/setSecret/action", "Key Vault Secrets Officer")
	_, err = ops.Versions.CurrentVersion(context.Background(), "db")
	mustClass(t, err, engine.ErrPermissionDenied, "Microsoft.KeyVault/vaults/secrets/readMetadata/action", "appid=reader-only")
}

func TestVersionsAndProperties(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v1 := e.fake.SetSecret(vaultHost, "db", `{"user":"a","port":5432}`, nil)
	ops := e.ops(t, secretStore(clientSecretSpec()))
	cur, err := ops.Versions.CurrentVersion(ctx, "db")
	if err != nil || cur != v1 {
		t.Fatalf("CurrentVersion %q, %v; want %q", cur, err, v1)
	}
	if n := e.fake.Calls("getSecret"); n != 0 {
		t.Fatalf("CurrentVersion read the value (%d reads)", n)
	}
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: v1})
	if err != nil || obj.Version != v1 || string(obj.Fields["port"]) != "5432" || string(obj.Fields["user"]) != "a" {
		t.Fatalf("pinned read %v %v, %v", obj.Version, keys(obj.Fields), err)
	}
	// Two versions created in the same second: the listing cannot tell
	// which is current, so one read does.
	v2 := e.fake.SetSecret(vaultHost, "db", `{"user":"b"}`, nil)
	cur, err = ops.Versions.CurrentVersion(ctx, "db")
	if err != nil || cur != v2 {
		t.Fatalf("CurrentVersion %q, %v; want %q", cur, err, v2)
	}
	// A disabled version says so.
	e.fake.DisableVersion(vaultHost, "db", v1)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: v1})
	mustClass(t, err, engine.ErrPermissionDenied, "disabled", "SecretDisabled")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "db", Version: "0123456789abcdef0123456789abcdef"})
	mustClass(t, err, engine.ErrNotFound, "SecretNotFound")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "not/a/name"})
	// A name the store cannot hold is the caller's input, refused before
	// any call: never the store's configuration nor its outage.
	if c := failure.Classify(err); c.Reason != failure.RemoteNameInvalid || !c.Terminal || !strings.Contains(err.Error(), "127 letters") {
		t.Fatalf("an invalid name: %v (%+v), want a terminal RemoteNameInvalid", err, c)
	}
}

func TestThrottlingIsRetriedWithRetryAfterThenReported(t *testing.T) {
	e := newEnv(t)
	e.fake.SetSecret(vaultHost, "db", "v", nil)
	ops := e.ops(t, secretStore(clientSecretSpec()))
	e.fake.Throttle(2, 1)
	if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"}); err != nil {
		t.Fatalf("two throttled answers then success: %v", err)
	}
	e.fake.Throttle(100, 0)
	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "HTTP 429 Throttled")
	// One first try and three retries.
	if n := e.fake.Calls("throttled"); n != 2+4 {
		t.Fatalf("throttled answers %d; want 6", n)
	}
}

// TestThrottlingHandsRetryAfterToTheGate: a Retry-After longer than the
// SDK's MaxRetryDelay ends its retries at once, and the error carries the
// wait so that the store's gate holds the store that long.
func TestThrottlingHandsRetryAfterToTheGate(t *testing.T) {
	e := newEnv(t)
	e.fake.SetSecret(vaultHost, "db", "v", nil)
	ops := e.ops(t, secretStore(clientSecretSpec()))
	e.fake.Throttle(100, 30)
	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrThrottled, "HTTP 429 Throttled", "asked to wait 30s")
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != 30*time.Second {
		t.Fatalf("error %v does not carry the 30s Retry-After", err)
	}
	if n := e.fake.Calls("throttled"); n != 1 {
		t.Fatalf("throttled answers %d; want 1 (no retry within the SDK)", n)
	}
}

func TestWriteOverADeletedSecretSaysWhatToDo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ops := e.ops(t, secretStore(clientSecretSpec()))
	owner := engine.Owner{ID: "PushSecret/team/p"}
	pub := engine.Publication{Fields: map[string][]byte{"k": []byte("s3cr3t-value")}, Tags: map[string]string{"team": "a"}}
	if _, err := ops.Writer.PutSecret(ctx, "pushed", pub, owner); err != nil {
		t.Fatal(err)
	}
	value, tags, _ := e.fake.Secret(vaultHost, "pushed")
	if value != `{"k":"s3cr3t-value"}` || tags[OwnerTag] != owner.ID || tags["team"] != "a" {
		t.Fatalf("the fake holds tags %v", tags)
	}
	if err := ops.Writer.DeleteSecret(ctx, "pushed", owner); err != nil {
		t.Fatal(err)
	}
	_, err := ops.Writer.PutSecret(ctx, "pushed", pub, owner)
	// An answer about this one name, retried: never an outage of the
	// store, which would hold every other caller of it.
	if c := failure.Classify(err); c.Reason != failure.ProviderError || c.Terminal || errors.Is(err, engine.ErrUnavailable) ||
		!strings.Contains(err.Error(), "ObjectIsDeletedButRecoverable") || !strings.Contains(err.Error(), "recover or purge") {
		t.Fatalf("a name kept by a deleted secret: %v (%+v)", err, c)
	}
	_, err = ops.Writer.PutSecret(ctx, "pushed2", engine.Publication{Fields: pub.Fields, Tags: map[string]string{OwnerTag: "x"}}, owner)
	mustClass(t, err, engine.ErrInvalidConfig, "ownership marker")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.AzureKVProvider)
		want   string
	}{
		{"no tenant", func(s *v1alpha1.AzureKVProvider) { s.TenantID = "" }, "tenantID is required"},
		{"no tenant for a client certificate", func(s *v1alpha1.AzureKVProvider) { *s = *certificateSpec(false); s.TenantID = "" }, "tenantID is required"},
		{"vault URL with a path", func(s *v1alpha1.AzureKVProvider) { s.VaultURL = "https://v.vault.azure.net/secrets/x" }, "vault's address alone"},
		{"authority host over http", func(s *v1alpha1.AzureKVProvider) { s.AuthorityHost = "http://login.example" }, "authorityHost must be an https address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := clientSecretSpec()
			tc.change(spec)
			mustClass(t, Factory{}.Validate(secretStore(spec)), engine.ErrInvalidConfig, tc.want)
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCertificatesAreReadAsPFXOrPEM(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pfx := []byte{0x30, 0x82, 0x01, 0x00, 0xff, 0x00, 0x7b}
	e.fake.SetCertificateSecret(vaultHost, "tls-pfx", base64.StdEncoding.EncodeToString(pfx), "application/x-pkcs12")
	pem := "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
	e.fake.SetCertificateSecret(vaultHost, "tls-pem", pem, "application/x-pem-file")
	ops := e.ops(t, secretStore(clientSecretSpec()))
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "tls-pfx"})
	if err != nil || !bytes.Equal(obj.Value, pfx) || obj.Fields != nil {
		t.Fatalf("PFX read as %d bytes, %v", len(obj.Value), err)
	}
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "tls-pem"})
	if err != nil || string(obj.Value) != pem {
		t.Fatalf("PEM read as %d bytes, %v", len(obj.Value), err)
	}
	// A secret that a certificate manages is never written, even when
	// adopting.
	sets := e.fake.Calls("setSecret")
	_, err = ops.Writer.PutSecret(ctx, "tls-pem", engine.Publication{Fields: map[string][]byte{"k": []byte("v")}}, engine.Owner{ID: "o", Adopt: true})
	mustClass(t, err, engine.ErrNotOwned, "certificate", "another name")
	if e.fake.Calls("setSecret") != sets {
		t.Fatal("the provider tried to set a certificate's secret")
	}
}
