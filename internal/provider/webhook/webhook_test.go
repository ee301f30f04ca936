package webhook

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/webhookserver"
)

// token is the API's credential, which no error may hold.
const token = "tok-3c9f1e7a"

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

var creds = deps{"api/token": token}

func store(spec *v1alpha1.WebhookProvider) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "webhook",
		Spec: &v1alpha1.SecretStoreProvider{Webhook: spec}}
}

// apiSpec is a store of the test API, writable.
func apiSpec(url string) *v1alpha1.WebhookProvider {
	return &v1alpha1.WebhookProvider{
		URL:     url + "/v1/secrets/{{ .remoteRef.key }}",
		Headers: map[string]string{"Authorization": "Bearer {{ .api.token }}"},
		Secrets: []v1alpha1.WebhookSecret{{Name: "api", SecretRef: v1alpha1.SecretKeySelector{Name: "api", Key: "token"}}},
		Result:  &v1alpha1.WebhookResult{JSONPath: "$.data", VersionHeader: "ETag"},
		Push: &v1alpha1.WebhookPush{
			Put: v1alpha1.WebhookRequest{Method: "PUT", URL: url + "/v1/secrets/{{ .remoteRef.key }}",
				Headers: map[string]string{"Content-Type": "application/json"},
				Body:    `{"data": {{ .fields | toJson }}, "owner": {{ .owner | toJson }}}`},
			Delete:        &v1alpha1.WebhookRequest{Method: "DELETE", URL: url + "/v1/secrets/{{ .remoteRef.key }}"},
			OwnerJSONPath: "$.owner",
		},
	}
}

func newOps(t *testing.T, spec *v1alpha1.WebhookProvider) engine.Ops {
	t.Helper()
	ops, err := Factory{}.New(context.Background(), store(spec), creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	return ops
}

func TestConformance(t *testing.T) {
	api := webhookserver.Start(token)
	defer api.Close()
	conformance.Run(t, conformance.Harness{
		Name: "webhook",
		Ops:  newOps(t, apiSpec(api.URL)),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			data := map[string]string{}
			for k, v := range fields {
				data[k] = string(v)
			}
			api.Seed(key, data)
			return nil
		},
		Unseed: func(_ context.Context, key string) error { api.Remove(key); return nil },
	})
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "webhook")
}

func TestCapabilitiesAreDocumented(t *testing.T) {
	providertest.CapabilitiesAreDocumented(t, "webhook", newOps(t, apiSpec("http://127.0.0.1:1")))
	readOnly := apiSpec("http://127.0.0.1:1")
	readOnly.Push = nil
	if got := newOps(t, readOnly).Capabilities(); got != engine.CanRead {
		t.Errorf("a store without push has capabilities %s, want read", got)
	}
}

// fault serves every request with h, after checking the credential.
func fault(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func noLeak(t *testing.T, err error, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(err.Error(), v) {
			t.Errorf("the error holds a value: %v", err)
		}
	}
}

func TestFailingAnswers(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		spec    func(*v1alpha1.WebhookProvider)
		class   error
		after   time.Duration
	}{
		{name: "500", class: engine.ErrUnavailable, handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom "+token, http.StatusInternalServerError)
		}},
		{name: "429 with Retry-After", class: engine.ErrThrottled, after: 7 * time.Second, handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{name: "503 with Retry-After date", class: engine.ErrThrottled, handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{name: "401", class: engine.ErrUnauthenticated, handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}},
		{name: "403", class: engine.ErrPermissionDenied, handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusForbidden)
		}},
		{name: "404", class: engine.ErrNotFound, handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNotFound)
		}},
		{name: "400 echoing the request", class: engine.ErrInvalidConfig, handler: func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			http.Error(w, fmt.Sprintf("bad request %s %s %s", r.URL, r.Header.Get("Authorization"), b), http.StatusBadRequest)
		}, spec: func(s *v1alpha1.WebhookProvider) {
			s.Method, s.Body = "POST", `{"token": "{{ .api.token }}"}`
			s.URL += "?k={{ .api.token }}"
		}},
		{name: "oversized", class: engine.ErrInvalidConfig, handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"data": "`+strings.Repeat(token, 1<<16)+`"}`)
		}, spec: func(s *v1alpha1.WebhookProvider) { s.MaxResponseBytes = 4096 }},
		{name: "slow", class: engine.ErrUnavailable, handler: func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, spec: func(s *v1alpha1.WebhookProvider) { s.Timeout = &metav1.Duration{Duration: 200 * time.Millisecond} }},
		{name: "not JSON", class: engine.ErrInvalidConfig, handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "plain "+token)
		}},
		{name: "nothing at jsonPath", class: engine.ErrNotFound, handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"other": "`+token+`"}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fault(t, tc.handler)
			spec := apiSpec(s.URL)
			spec.Result = &v1alpha1.WebhookResult{JSONPath: "$.data"}
			spec.Push = nil
			if tc.spec != nil {
				tc.spec(spec)
			}
			ops := newOps(t, spec)
			_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
			if !errors.Is(err, tc.class) {
				t.Fatalf("got %v, want class %v", err, tc.class)
			}
			t.Logf("error: %v", err)
			noLeak(t, err, token)
			if after, ok := failure.RetryAfter(err); tc.after > 0 && (!ok || after != tc.after) {
				t.Errorf("RetryAfter = %s, %v; want %s", after, ok, tc.after)
			}
			if tc.name == "503 with Retry-After date" {
				if after, ok := failure.RetryAfter(err); !ok || after < 59*time.Minute {
					t.Errorf("RetryAfter = %s, %v; want about an hour", after, ok)
				}
			}
		})
	}
}

func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	var leaked atomic.Bool
	other := fault(t, func(_ http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Store(true)
		}
	})
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	s := fault(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/x", http.StatusFound)
	})
	_, err := newOps(t, apiSpec(s.URL)).Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	if leaked.Load() {
		t.Error("the credential header reached another host")
	}
}

func TestURLEscapesValues(t *testing.T) {
	var got atomic.Value
	s := fault(t, func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.EscapedPath() + "?" + r.URL.RawQuery)
		_, _ = io.WriteString(w, `{"data": "v"}`)
	})
	spec := apiSpec(s.URL)
	spec.Push = nil
	spec.Result = &v1alpha1.WebhookResult{JSONPath: "$.data"}
	spec.URL = s.URL + "/v1/secrets/{{ .remoteRef.key }}?token={{ .api.token | upper }}&v={{ .remoteRef.version }}"
	ops := newOps(t, spec)
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "team a/db&x=1?#", Version: "7"})
	if err != nil {
		t.Fatal(err)
	}
	want := "/v1/secrets/team%20a/db%26x%3D1%3F%23?token=" + strings.ToUpper(token) + "&v=7"
	if got.Load() != want {
		t.Errorf("request %q, want %q", got.Load(), want)
	}
	if string(obj.Value) != "v" || obj.Version != "7" {
		t.Errorf("object %q at %q, want v at the version asked (the url selects it)", obj.Value, obj.Version)
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "a/../admin"})
	if failure.Classify(err).Reason != failure.RemoteNameInvalid {
		t.Errorf("a key with a .. segment: got %v, want RemoteNameInvalid", err)
	}
}

func TestResults(t *testing.T) {
	cases := []struct {
		name, body, path, versionPath string
		value, version                string
		fields                        map[string]string
		class                         error
	}{
		{name: "string", body: `{"v": {"s": "abc"}, "rev": 3}`, path: "$.v.s", versionPath: "$.rev", value: "abc", version: "3"},
		{name: "object", body: `{"v": {"u": "x", "n": 5, "z": null}}`, path: "{.v}", value: `{"n":5,"u":"x","z":null}`,
			fields: map[string]string{"u": "x", "n": "5", "z": ""}},
		{name: "whole object", body: `{"u": "x"}`, value: `{"u": "x"}`, fields: map[string]string{"u": "x"}},
		{name: "whole text", body: `plain`, value: "plain"},
		{name: "array element", body: `{"items": [{"v": "a"}, {"v": "b"}]}`, path: "$.items[1].v", value: "b"},
		{name: "several", body: `{"items": [{"v": "a"}, {"v": "b"}]}`, path: "$.items[*].v", class: engine.ErrNotFound},
		{name: "no version", body: `{"v": "a"}`, path: "$.v", versionPath: "$.rev", class: engine.ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fault(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, tc.body) })
			spec := apiSpec(s.URL)
			spec.Push = nil
			spec.Result = &v1alpha1.WebhookResult{JSONPath: tc.path, VersionJSONPath: tc.versionPath}
			obj, err := newOps(t, spec).Reader.GetSecret(context.Background(), engine.Ref{Key: "k"})
			if tc.class != nil {
				if !errors.Is(err, tc.class) {
					t.Fatalf("got %v, want class %v", err, tc.class)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(obj.Value) != tc.value || obj.Version != tc.version {
				t.Errorf("got %q at %q, want %q at %q", obj.Value, obj.Version, tc.value, tc.version)
			}
			if len(obj.Fields) != len(tc.fields) {
				t.Errorf("got %d fields, want %d", len(obj.Fields), len(tc.fields))
			}
			for k, v := range tc.fields {
				if string(obj.Fields[k]) != v {
					t.Errorf("field %s = %q, want %q", k, obj.Fields[k], v)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]func(*v1alpha1.WebhookProvider){
		"reserved secret name": func(s *v1alpha1.WebhookProvider) { s.Secrets[0].Name = "remoteRef" },
		"bad secret name":      func(s *v1alpha1.WebhookProvider) { s.Secrets[0].Name = "a-b" },
		"body with GET":        func(s *v1alpha1.WebhookProvider) { s.Body = "x" },
		"bad template":         func(s *v1alpha1.WebhookProvider) { s.URL += "{{ .remoteRef.key" },
		"bad jsonPath":         func(s *v1alpha1.WebhookProvider) { s.Result.JSONPath = "$.[" },
		"both versions":        func(s *v1alpha1.WebhookProvider) { s.Result.VersionJSONPath = "$.v" },
		"bad header":           func(s *v1alpha1.WebhookProvider) { s.Headers["Bad Name"] = "x" },
		"bad put method":       func(s *v1alpha1.WebhookProvider) { s.Push.Put.Method = "GET" },
		"timeout too long":     func(s *v1alpha1.WebhookProvider) { s.Timeout = &metav1.Duration{Duration: time.Minute} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			spec := apiSpec("http://127.0.0.1:1")
			mutate(spec)
			if err := (Factory{}).Validate(store(spec)); !errors.Is(err, engine.ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
	if err := (Factory{}).Validate(store(apiSpec("http://127.0.0.1:1"))); err != nil {
		t.Errorf("the valid spec: %v", err)
	}
}

func TestTemplateFailures(t *testing.T) {
	s := fault(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"data": "v"}`) })
	spec := apiSpec(s.URL)
	spec.Push = nil
	spec.Headers["X-Other"] = "{{ .api.missing }}"
	_, err := newOps(t, spec).Reader.GetSecret(context.Background(), engine.Ref{Key: "k"})
	if !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a template naming a key the store does not read: got %v", err)
	}
	spec = apiSpec(s.URL)
	spec.Push = nil
	spec.Headers["X-Other"] = "{{ .api.token }}\nInjected: 1"
	_, err = newOps(t, spec).Reader.GetSecret(context.Background(), engine.Ref{Key: "k"})
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Errorf("a header with a line break: got %v", err)
	}
	noLeak(t, err, token)
}

// Without ownerJSONPath every remote secret is unmarked: a write over one
// needs adopt, and a delete is refused.
func TestNoMarker(t *testing.T) {
	api := webhookserver.Start(token)
	defer api.Close()
	spec := apiSpec(api.URL)
	spec.Push.OwnerJSONPath = ""
	w := newOps(t, spec).Writer
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/ns/p"}
	if _, err := w.PutSecret(ctx, "new", engine.Publication{Fields: map[string][]byte{"a": []byte("1")}}, owner); err != nil {
		t.Fatalf("creating: %v", err)
	}
	_, err := w.PutSecret(ctx, "new", engine.Publication{Fields: map[string][]byte{"a": []byte("2")}}, owner)
	if !errors.Is(err, engine.ErrNotOwned) {
		t.Errorf("writing over it without adopt: got %v, want ErrNotOwned", err)
	}
	owner.Adopt = true
	if _, err = w.PutSecret(ctx, "new", engine.Publication{Fields: map[string][]byte{"a": []byte("2")}}, owner); err != nil {
		t.Errorf("writing over it with adopt: %v", err)
	}
	if err = w.DeleteSecret(ctx, "new", owner); !errors.Is(err, engine.ErrNotOwned) {
		t.Errorf("deleting: got %v, want ErrNotOwned", err)
	}
}

// A server that echoes the request in a 400 leaks nothing through a
// write's error.
func TestWriteErrorsHoldNoValue(t *testing.T) {
	api := webhookserver.Start(token)
	defer api.Close()
	spec := apiSpec(api.URL)
	spec.Push.Put.Body = `{"broken": {{ .fields | toJson }}}` // no "data": the API answers 400 and echoes it
	_, err := newOps(t, spec).Writer.PutSecret(context.Background(), "k",
		engine.Publication{Fields: map[string][]byte{"password": []byte("hunter2-value")}}, engine.Owner{ID: "o"})
	if !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	noLeak(t, err, "hunter2-value", token)
}

// A server whose certificate chains to the store's CA bundle (given
// inline, or from a ConfigMap) is reached; without the bundle it is not.
// The read is a POST whose body is a template.
func TestTLSWithCABundleAndPOST(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(b) != `{"name":"app/db"}` {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, `{"value": "from-tls"}`)
	}))
	defer s.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	spec := func() *v1alpha1.WebhookProvider {
		sp := apiSpec(s.URL)
		sp.Push = nil
		sp.Method, sp.Body = "POST", `{"name":{{ .remoteRef.key | toJson }}}`
		sp.URL = s.URL + "/lookup"
		sp.Result = &v1alpha1.WebhookResult{JSONPath: "$.value"}
		return sp
	}
	inline := spec()
	inline.CABundle = ca
	fromConfigMap := spec()
	fromConfigMap.CAProvider = &v1alpha1.CAProvider{Type: "ConfigMap", Name: "ca", Key: "ca.crt"}
	d := deps{"api/token": token, "configmap:ca/ca.crt": string(ca)}
	for name, sp := range map[string]*v1alpha1.WebhookProvider{"caBundle": inline, "caProvider": fromConfigMap} {
		ops, err := Factory{}.New(context.Background(), store(sp), d)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "app/db"})
		if err != nil || string(obj.Value) != "from-tls" {
			t.Errorf("%s: got %q, %v", name, obj.Value, err)
		}
	}
	_, err := newOps(t, spec()).Reader.GetSecret(context.Background(), engine.Ref{Key: "app/db"})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("without the CA bundle: got %v, want ErrUnavailable", err)
	}
}

// FuzzEscapeURL: whatever a value holds, what escapeURL makes of it
// inserted into a URL stays one path (no query, fragment or user info),
// keeps its '/' segments, decodes back to the value, and never has a '.'
// or '..' segment.
func FuzzEscapeURL(f *testing.F) {
	for _, s := range []string{"a/b", "team a/db&x=1?#", "..", "a/./b", "%2e%2e", "ü/€", "", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		out, err := escapeURL(v)
		if err != nil {
			for _, seg := range strings.Split(v, "/") {
				if seg == "." || seg == ".." {
					return
				}
			}
			t.Fatalf("refused %q: %v", v, err)
		}
		u, err := url.Parse("https://h.example/p/" + out)
		if err != nil {
			t.Fatalf("%q escapes to %q, which does not parse: %v", v, out, err)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Host != "h.example" {
			t.Fatalf("%q escapes to %q, which leaves the path", v, out)
		}
		if u.Path != "/p/"+v {
			t.Fatalf("%q escapes to %q, which decodes to %q", v, out, u.Path)
		}
		for _, seg := range strings.Split(out, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q escapes to %q, with a dot segment", v, out)
			}
		}
	})
}

// A 429's Retry-After holds the store at its call gate, the door every
// call of the operator passes: the calls after it, of any key, wait
// without reaching the server, and tell how long is left.
func TestRetryAfterHoldsTheStore(t *testing.T) {
	var calls atomic.Int32
	s := fault(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	spec := apiSpec(s.URL)
	spec.Push = nil
	c, err := engine.NewClient("webhook", newOps(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	gated := c.Wrap(engine.NewGate(engine.GateLimits{}, nil, nil).Wrap)
	for i, key := range []string{"a", "b", "c"} {
		_, err = gated.GetSecret(context.Background(), engine.Ref{Key: key})
		after, ok := failure.RetryAfter(err)
		if !errors.Is(err, engine.ErrThrottled) || !ok || after <= 100*time.Second || after > 120*time.Second {
			t.Errorf("read %d: got %v (retry after %s, %v), want throttled for up to 120s", i, err, after, ok)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls reached the server, want 1: the others wait for its Retry-After", n)
	}
}

// The Basic authentication of docs/providers.md: two entries of one name,
// each a key of the same Secret, and the key in a query parameter.
func TestBasicAuthAsDocumented(t *testing.T) {
	s := fault(t, func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		if !ok || user != "reader" || pw != "p@ss:word" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "value of "+r.URL.Query().Get("name"))
	})
	spec := &v1alpha1.WebhookProvider{
		URL:     s.URL + "/secrets?name={{ .remoteRef.key }}",
		Headers: map[string]string{"Authorization": `Basic {{ print .auth.username ":" .auth.password | b64enc }}`},
		Secrets: []v1alpha1.WebhookSecret{
			{Name: "auth", SecretRef: v1alpha1.SecretKeySelector{Name: "api-login", Key: "username"}},
			{Name: "auth", SecretRef: v1alpha1.SecretKeySelector{Name: "api-login", Key: "password"}},
		},
	}
	ops, err := Factory{}.New(context.Background(), store(spec), deps{"api-login/username": "reader", "api-login/password": "p@ss:word"})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "team/db&x"})
	if err != nil || string(obj.Value) != "value of team/db&x" {
		t.Errorf("got %q, %v", obj.Value, err)
	}
}
