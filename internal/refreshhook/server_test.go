package refreshhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

type recordingNotifier struct{ calls [][]string }

func (n *recordingNotifier) Notify(_ context.Context, kind, ns, name string, keys []string) (int, error) {
	n.calls = append(n.calls, append([]string{kind, ns, name}, keys...))
	return 2, nil
}

// signedBy is the headers of body signed with secret at at.
func signedBy(body, secret string, at time.Time) map[string]string {
	ts, sig := Sign([]byte(body), []byte(secret), at)
	return map[string]string{TimestampHeader: ts, SignatureHeader: sig}
}

// send sends a request with body and headers to h.
func send(h http.Handler, method, body string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, Path, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerRefusesAndAccepts(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	hooked := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hooked"}}
	hooked.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "hook", Key: "secret"}}
	plain := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "plain"}}
	other := hooked.DeepCopy()
	other.Name, other.Spec.Controller = "other", "canary"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Data: map[string][]byte{"secret": []byte("shared")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(hooked, plain, other, sec).Build()
	notifier := &recordingNotifier{}
	h := &Handler{Stores: c, Secrets: c, Notifier: notifier}

	body := func(store string) string {
		return `{"store": {"kind": "SecretStore", "namespace": "team", "name": "` + store + `"}, "keys": ["db/creds"]}`
	}
	now := time.Now()
	signed := func(b string) map[string]string { return signedBy(b, "shared", now) }
	cases := []struct {
		name, method, body string
		headers            map[string]string
		want               int
	}{
		{"GET", http.MethodGet, "", nil, http.StatusMethodNotAllowed},
		{"too large", http.MethodPost, strings.Repeat(" ", MaxBody+1), signed(""), http.StatusRequestEntityTooLarge},
		{"unsigned", http.MethodPost, body("hooked"), nil, http.StatusUnauthorized},
		{"not a signature", http.MethodPost, body("hooked"), map[string]string{SignatureHeader: "sha256=xyz", TimestampHeader: signed("")[TimestampHeader]}, http.StatusUnauthorized},
		{"malformed", http.MethodPost, "secret-value", signed("secret-value"), http.StatusBadRequest},
		{"unknown store", http.MethodPost, body("missing"), signed(body("missing")), http.StatusForbidden},
		{"store without refreshHook", http.MethodPost, body("plain"), signed(body("plain")), http.StatusForbidden},
		{"store of another class", http.MethodPost, body("other"), signed(body("other")), http.StatusForbidden},
		{"wrong signature", http.MethodPost, body("hooked"), signedBy(body("hooked"), "guess", now), http.StatusForbidden},
		{"signature of another body", http.MethodPost, body("hooked"), signed(body("plain")), http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := send(h, tc.method, tc.body, tc.headers)
			if rec.Code != tc.want {
				t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body.String(), tc.want)
			}
			if strings.Contains(rec.Body.String(), "secret-value") || strings.Contains(rec.Body.String(), "db/creds") {
				t.Fatalf("the answer echoes the body: %s", rec.Body.String())
			}
		})
	}
	if len(notifier.calls) != 0 {
		t.Fatalf("refused notifications reached the controller: %v", notifier.calls)
	}
	rec := send(h, http.MethodPost, body("hooked"), signed(body("hooked")))
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"queued":2`) {
		t.Fatalf("a signed notification: %d %s, want 202 with the count queued", rec.Code, rec.Body.String())
	}
	if len(notifier.calls) != 1 || strings.Join(notifier.calls[0], ",") != "SecretStore,team,hooked,db/creds" {
		t.Fatalf("notifier calls %v, want one for the store's key", notifier.calls)
	}
}

// TestAFloodReadsTheSharedSecretOnce: wrongly signed requests, however
// many, cost one read of the shared secret per secretTTL, whether the
// Secret exists or not.
func TestAFloodReadsTheSharedSecretOnce(t *testing.T) {
	for _, exists := range []bool{true, false} {
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = v1alpha1.AddToScheme(scheme)
		hooked := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hooked"}}
		hooked.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "hook", Key: "secret"}}
		objs := []client.Object{hooked}
		if exists {
			objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Data: map[string][]byte{"secret": []byte("shared")}})
		}
		reads := 0
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					reads++
				}
				return cl.Get(ctx, key, obj, opts...)
			},
		}).Build()
		h := &Handler{Stores: c, Secrets: c, Notifier: &recordingNotifier{}}
		b := `{"store": {"kind": "SecretStore", "namespace": "team", "name": "hooked"}, "keys": ["k"]}`
		for range 20 {
			rec := send(h, http.MethodPost, b, signedBy(b, "guess", time.Now()))
			if rec.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403", rec.Code)
			}
		}
		if reads != 1 {
			t.Errorf("hook Secret exists=%v: read %d times for 20 requests, want once", exists, reads)
		}
	}
}

// TestRefusalsTellNothingOfTheCluster: whatever the cluster holds (no
// store, a store without refreshHook or of another class, a hook Secret
// that is missing, has no value at its key, or is in another namespace)
// a caller without the shared secret gets the answer of a wrong
// signature, status and body alike. Only the metric's reason differs.
func TestRefusalsTellNothingOfTheCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	store := func(name, secret, key, secretNS string) *v1alpha1.SecretStore {
		s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
		s.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: secret, Key: key, Namespace: secretNS}}
		return s
	}
	plain := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "plain"}}
	other := store("other", "hook", "secret", "")
	other.Spec.Controller = "canary"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Data: map[string][]byte{"secret": []byte("shared")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(plain, other, sec,
		store("hooked", "hook", "secret", ""), store("no-secret", "absent", "secret", ""),
		store("no-value", "hook", "absent", ""), store("elsewhere", "hook", "secret", "other-ns")).Build()
	h := &Handler{Stores: c, Secrets: c, Notifier: &recordingNotifier{}}
	answer := func(name, secret string) (int, string) {
		b := `{"store": {"kind": "SecretStore", "namespace": "team", "name": "` + name + `"}, "keys": ["k"]}`
		rec := send(h, http.MethodPost, b, signedBy(b, secret, time.Now()))
		return rec.Code, rec.Body.String()
	}
	wantCode, wantBody := answer("hooked", "a guess")
	if wantCode != http.StatusForbidden {
		t.Fatalf("wrong signature: %d, want 403", wantCode)
	}
	for _, name := range []string{"missing", "plain", "other", "no-secret", "no-value", "elsewhere"} {
		if code, body := answer(name, "shared"); code != wantCode || body != wantBody {
			t.Errorf("store %q: %d %q, want the answer of a wrong signature: %d %q", name, code, body, wantCode, wantBody)
		}
	}
	if code, _ := answer("hooked", "shared"); code != http.StatusAccepted {
		t.Fatalf("a rightly signed notification: %d, want 202", code)
	}
}

// TestNamespacedInstanceRefusesStoresItDoesNotServe: an instance that
// serves only some namespaces refuses a notification for a SecretStore
// elsewhere and for any ClusterSecretStore as it refuses an unknown store
// (403, nothing said of the cluster), without asking its cache, which
// cannot answer for them; its own namespace's store is served.
func TestNamespacedInstanceRefusesStoresItDoesNotServe(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	hooked := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hooked"}}
	hooked.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "hook", Key: "secret"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hook"}, Data: map[string][]byte{"secret": []byte("shared")}}
	elsewhere := hooked.DeepCopy()
	elsewhere.Namespace = "other"
	otherSec := sec.DeepCopy()
	otherSec.Namespace = "other"
	reads := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(hooked, sec, elsewhere, otherSec).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	notifier := &recordingNotifier{}
	h := &Handler{Stores: c, Secrets: c, Notifier: notifier, Namespaces: []string{"team"}}
	post := func(b string) *httptest.ResponseRecorder {
		return send(h, http.MethodPost, b, signedBy(b, "shared", time.Now()))
	}
	for _, b := range []string{
		`{"store": {"kind": "SecretStore", "namespace": "other", "name": "hooked"}, "keys": ["k"]}`,
		`{"store": {"kind": "ClusterSecretStore", "name": "hooked"}, "keys": ["k"]}`,
	} {
		if rec := post(b); rec.Code != http.StatusForbidden {
			t.Errorf("%s: status %d (%s), want 403", b, rec.Code, rec.Body.String())
		}
	}
	if reads != 0 || len(notifier.calls) != 0 {
		t.Fatalf("stores not served: %d reads, %d notifications; want none", reads, len(notifier.calls))
	}
	if rec := post(`{"store": {"kind": "SecretStore", "namespace": "team", "name": "hooked"}, "keys": ["k"]}`); rec.Code != http.StatusAccepted {
		t.Fatalf("the served namespace's store: status %d (%s), want 202", rec.Code, rec.Body.String())
	}
}
