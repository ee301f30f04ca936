package barbican

import (
	"bytes"
	"context"
	b64 "encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/barbicanserver"
)

// deps hands out Secret keys from a map keyed "name/key".
type deps map[string]string

func (d deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	v, ok := d[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s: %w", sel.Name, sel.Key, engine.ErrNotFound)
	}
	return []byte(v), nil
}
func (d deps) ConfigMapValue(_ context.Context, _, name, key string) ([]byte, error) {
	v, ok := d["configmap:"+name+"/"+key]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s: %w", name, key, engine.ErrNotFound)
	}
	return []byte(v), nil
}
func (deps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return "", 0, errors.New("no service accounts")
}
func (deps) LocalConfig() *rest.Config { return nil }

func store(spec *v1alpha1.BarbicanProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "barbican",
		Spec: &v1alpha1.SecretStoreProvider{Barbican: spec}}
}

// noAuthSpec is a token-less store of the server's test project.
func noAuthSpec(s *barbicanserver.Server) *v1alpha1.BarbicanProvider {
	return &v1alpha1.BarbicanProvider{Endpoint: s.URL, Auth: v1alpha1.BarbicanAuth{NoAuth: &v1alpha1.BarbicanNoAuth{ProjectID: s.ProjectID}}}
}

func newOps(t *testing.T, spec *v1alpha1.BarbicanProvider, d deps) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(spec), d)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// shared is one token-less server for the tests of this package that do
// not stop it; each test uses names of its own.
var shared struct {
	once sync.Once
	s    *barbicanserver.Server
}

func sharedServer(t *testing.T) *barbicanserver.Server {
	t.Helper()
	root, skip, err := barbicanserver.Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	shared.once.Do(func() {
		shared.s, err = barbicanserver.Run(context.Background(), root, barbicanserver.Options{})
	})
	if shared.s == nil {
		t.Fatalf("starting Barbican: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Barbican log:\n%s", shared.s.Logs())
		}
	})
	return shared.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		shared.s.Close()
	}
	os.Exit(code)
}

// seedClient writes secrets out of band, as another user of the project.
func seedClient(s *barbicanserver.Server) *gophercloud.ServiceClient {
	return &gophercloud.ServiceClient{
		ProviderClient: &gophercloud.ProviderClient{}, Endpoint: s.URL + "/v1/", ResourceBase: s.URL + "/v1/",
		MoreHeaders: map[string]string{"X-Project-Id": s.ProjectID},
	}
}

func seed(ctx context.Context, c *gophercloud.ServiceClient, name, contentType string, payload []byte) (*secrets.Secret, error) {
	opts := secrets.CreateOpts{Name: name, SecretType: secrets.OpaqueSecret, Payload: string(payload), PayloadContentType: contentType}
	if contentType == "application/octet-stream" {
		opts.PayloadContentEncoding = "base64"
		opts.Payload = b64.StdEncoding.EncodeToString(payload)
	}
	s, err := secrets.Create(ctx, c, opts).Extract()
	if err != nil {
		return nil, err
	}
	return secrets.Get(ctx, c, idOf(s)).Extract()
}

func TestConformance(t *testing.T) {
	s := sharedServer(t)
	c := seedClient(s)
	conformance.Run(t, conformance.Harness{
		Name: "barbican",
		Ops:  newOps(t, noAuthSpec(s), nil),
		Seed: func(ctx context.Context, key string, fields map[string][]byte) error {
			payload, err := payloadOf(key, fields)
			if err != nil {
				return err
			}
			_, err = seed(ctx, c, key, "text/plain", payload)
			return err
		},
		Key: func(name string) string { return "conformance/" + name },
		// A new payload is a new secret; a seeded secret's older ones stay.
		KeepsVersions: true,
	})
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "barbican")
}

// TestReadsTheExactNameOnly: Barbican's name filter matches "db_a" to
// "dbxa" and "DB_A"; the provider reads only the secret named exactly,
// and the newest of several.
func TestReadsTheExactNameOnly(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	c := seedClient(s)
	ops := newOps(t, noAuthSpec(s), nil)
	for _, name := range []string{"exact/dbxa", "exact/DB_A"} {
		if _, err := seed(ctx, c, name, "text/plain", []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	// The premise: Barbican's own filter returns both for "exact/db_a".
	pages, err := secrets.List(c, secrets.ListOpts{Name: "exact/db_a"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := secrets.ExtractSecrets(pages); len(raw) != 2 {
		t.Fatalf("expected Barbican's name filter to match 2 other names, it matched %d", len(raw))
	}
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "exact/db_a"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("reading exact/db_a, which only LIKE-matches others: expected ErrNotFound, got %v", err)
	}
	if _, err = ops.Versions.CurrentVersion(ctx, "exact/db%"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the version of exact/db%%: expected ErrNotFound, got %v", err)
	}
	first, err := seed(ctx, c, "exact/db_a", "text/plain", []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := seed(ctx, c, "exact/db_a", "text/plain", []byte("second"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "exact/db_a"})
	if err != nil {
		t.Fatal(err)
	}
	if string(obj.Value) != "second" || obj.Version != version(second) {
		t.Errorf("expected the newest secret of the name (version %s), got version %s", version(second), obj.Version)
	}
	if !strings.HasPrefix(obj.Version, idOf(second)+"@") {
		t.Errorf("version %q is not <uuid>@<created>", obj.Version)
	}
	old, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "exact/db_a", Version: version(first)})
	if err != nil || string(old.Value) != "first" {
		t.Errorf("reading the pinned older version: %v", err)
	}
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "exact/dbxa", Version: version(first)}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("reading another name's version under exact/dbxa: expected ErrNotFound, got %v", err)
	}
}

// TestContentTypes: a binary payload comes back byte for byte, a text one
// as it is, a JSON object as fields that property and dataFrom select.
func TestContentTypes(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	c := seedClient(s)
	ops := newOps(t, noAuthSpec(s), nil)
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n', 'x'}
	if _, err := seed(ctx, c, "types/binary", "application/octet-stream", binary); err != nil {
		t.Fatal(err)
	}
	if _, err := seed(ctx, c, "types/text", "text/plain", []byte("plain text, not JSON")); err != nil {
		t.Fatal(err)
	}
	if _, err := seed(ctx, c, "types/json", "text/plain", []byte(`{"user":"app","port":5432,"nested":{"a":"b"}}`)); err != nil {
		t.Fatal(err)
	}
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "types/binary"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(obj.Value, binary) || obj.Fields != nil {
		t.Errorf("the binary payload did not come back byte for byte as a single value")
	}
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "types/text"})
	if err != nil {
		t.Fatal(err)
	}
	if string(obj.Value) != "plain text, not JSON" {
		t.Errorf("the text payload did not come back as it is")
	}
	obj, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "types/json"})
	if err != nil {
		t.Fatal(err)
	}
	for prop, want := range map[string]string{"user": "app", "port": "5432", "nested.a": "b"} {
		got, err := engine.Extract("types/json", obj, prop)
		if err != nil || string(got) != want {
			t.Errorf("property %s: got %q, %v", prop, got, err)
		}
	}
}

// TestReadsByReference: a key may be the secret's reference or UUID.
func TestReadsByReference(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	sec, err := seed(ctx, seedClient(s), "by-ref", "text/plain", []byte("by reference"))
	if err != nil {
		t.Fatal(err)
	}
	ops := newOps(t, noAuthSpec(s), nil)
	for _, key := range []string{sec.SecretRef, idOf(sec), strings.ToUpper(idOf(sec))} {
		obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: key})
		if err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
		if string(obj.Value) != "by reference" || obj.Version != version(sec) {
			t.Errorf("key %s: another secret or version (%s)", key, obj.Version)
		}
		v, err := ops.Versions.CurrentVersion(ctx, key)
		if err != nil || v != version(sec) {
			t.Errorf("key %s: version %q, %v", key, v, err)
		}
	}
	missing := "00000000-0000-4000-8000-000000000000"
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: missing}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a reference to no secret: expected ErrNotFound, got %v", err)
	}
	if _, err := ops.Writer.PutSecret(ctx, sec.SecretRef, engine.Publication{Fields: map[string][]byte{"a": []byte("b")}}, engine.Owner{ID: "PushSecret/ns/x"}); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Errorf("publishing to a reference: expected ErrInvalidConfig, got %v", err)
	}
}

// TestPublishing: the marker is in the secret's metadata, an unchanged
// payload creates nothing, a changed one replaces the owner's secret, and
// a binary field is refused with its name.
func TestPublishing(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	c := seedClient(s)
	ops := newOps(t, noAuthSpec(s), nil)
	owner := engine.Owner{ID: "PushSecret/team/db"}
	key := "publish/db"
	count := func() []secrets.Secret {
		t.Helper()
		cl := &Client{sc: c}
		list, err := cl.named(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	pub := engine.Publication{Fields: map[string][]byte{"user": []byte("app"), "password": []byte("one")}, Tags: map[string]string{"Team": "payments"}}
	v1, err := ops.Writer.PutSecret(ctx, key, pub, owner)
	if err != nil {
		t.Fatal(err)
	}
	list := count()
	if len(list) != 1 || version(&list[0]) != v1 {
		t.Fatalf("expected one secret at version %s, found %d", v1, len(list))
	}
	md, err := secrets.GetMetadata(ctx, c, idOf(&list[0])).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if md[markerOwner] != owner.ID || md[markerManagedBy] != managedByValue || md["team"] != "payments" {
		t.Errorf("metadata %v lacks the marker or the tag", md)
	}
	v2, err := ops.Writer.PutSecret(ctx, key, pub, owner)
	if err != nil {
		t.Fatal(err)
	}
	if v2 != v1 || len(count()) != 1 {
		t.Errorf("an unchanged payload made a new secret (%s after %s)", v2, v1)
	}
	pub.Fields["password"] = []byte("two")
	v3, err := ops.Writer.PutSecret(ctx, key, pub, owner)
	if err != nil {
		t.Fatal(err)
	}
	list = count()
	if v3 == v1 || len(list) != 1 || version(&list[0]) != v3 {
		t.Errorf("a changed payload: expected one secret at a new version %s, found %d", v3, len(list))
	}
	var payload map[string]string
	b, err := secrets.GetPayload(ctx, c, idOf(&list[0]), nil).Extract()
	if err != nil || json.Unmarshal(b, &payload) != nil || payload["password"] != "two" || list[0].ContentTypes["default"] != "text/plain" {
		t.Errorf("the published payload is not the JSON object of the fields in text/plain (%v)", err)
	}
	_, err = ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: map[string][]byte{"key.der": {0xff, 0x00}}}, owner)
	if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "key.der") {
		t.Errorf("a binary field: expected ErrNotSupported naming it, got %v", err)
	}
	if err := ops.Writer.DeleteSecret(ctx, key, owner); err != nil {
		t.Fatal(err)
	}
	if n := len(count()); n != 0 {
		t.Errorf("after the owner's delete, %d secrets are left", n)
	}
}

// TestUnreachable: a Barbican that does not answer is ErrUnavailable.
func TestUnreachable(t *testing.T) {
	s := barbicanserver.Start(t, barbicanserver.Options{})
	ctx := context.Background()
	ops := newOps(t, noAuthSpec(s), nil)
	if _, err := seed(ctx, seedClient(s), "down", "text/plain", []byte("x")); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	_, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "down"})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("reading from a stopped Barbican: expected ErrUnavailable, got %v", err)
	}
	if err := ops.Checker.Check(ctx); !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("checking a stopped Barbican: expected ErrUnavailable, got %v", err)
	}
}

func TestValidate(t *testing.T) {
	sel := v1alpha1.SecretKeySelector{Name: "s", Key: "k"}
	for name, spec := range map[string]*v1alpha1.BarbicanProvider{
		"no auth method":           {AuthURL: "http://k/v3"},
		"two auth methods":         {AuthURL: "http://k/v3", Auth: v1alpha1.BarbicanAuth{NoAuth: &v1alpha1.BarbicanNoAuth{ProjectID: "p"}, ApplicationCredential: &v1alpha1.BarbicanApplicationCredential{ID: "a", SecretRef: sel}}},
		"noAuth without endpoint":  {Auth: v1alpha1.BarbicanAuth{NoAuth: &v1alpha1.BarbicanNoAuth{ProjectID: "p"}}},
		"keystone without authURL": {Auth: v1alpha1.BarbicanAuth{ApplicationCredential: &v1alpha1.BarbicanApplicationCredential{ID: "a", SecretRef: sel}}},
		"password without project": {AuthURL: "http://k/v3", Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{Username: "u", PasswordSecretRef: sel}}},
		"password with user twice": {AuthURL: "http://k/v3", Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{Username: "u", UserID: "i", ProjectID: "p", PasswordSecretRef: sel}}},
	} {
		if err := (Factory{}).Validate(store(spec)); !errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("%s: expected ErrInvalidConfig, got %v", name, err)
		}
	}
}

// TestTLSWithACABundle reaches Barbican over TLS (a loopback proxy with a
// certificate of its own in front of the real server): with the proxy's
// CA from caBundle or from a ConfigMap through caProvider the secret is
// read; with the system's roots the certificate is refused.
func TestTLSWithACABundle(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	if _, err := seed(ctx, seedClient(s), "tls/db", "text/plain", []byte("over TLS")); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}))
	noAuth := v1alpha1.BarbicanAuth{NoAuth: &v1alpha1.BarbicanNoAuth{ProjectID: s.ProjectID}}
	for name, spec := range map[string]*v1alpha1.BarbicanProvider{
		"caBundle":   {Endpoint: proxy.URL, CABundle: []byte(ca), Auth: noAuth},
		"caProvider": {Endpoint: proxy.URL, CAProvider: &v1alpha1.CAProvider{Type: "ConfigMap", Name: "ca", Key: "ca.crt"}, Auth: noAuth},
	} {
		ops := newOps(t, spec, deps{"configmap:ca/ca.crt": ca})
		obj, rerr := ops.Reader.GetSecret(ctx, engine.Ref{Key: "tls/db"})
		if rerr != nil || string(obj.Value) != "over TLS" {
			t.Errorf("%s: reading over TLS: %v", name, rerr)
		}
	}
	ops := newOps(t, &v1alpha1.BarbicanProvider{Endpoint: proxy.URL, Auth: noAuth}, nil)
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "tls/db"})
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: expected ErrUnavailable naming the certificate, got %v", err)
	}
	_, err = Factory{}.New(ctx, store(&v1alpha1.BarbicanProvider{Endpoint: proxy.URL, CABundle: []byte("not PEM"), Auth: noAuth}), nil)
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Errorf("a CA bundle without a certificate: expected ErrInvalidConfig, got %v", err)
	}
}
