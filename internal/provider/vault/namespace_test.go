package vault

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Vault namespaces exist only in Vault Enterprise, which cannot run here, so
// this test checks the wire protocol against a recording HTTP server: every
// request carries X-Vault-Namespace and the token.
func TestNamespaceHeaderOnEveryRequest(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+" ns="+r.Header.Get("X-Vault-Namespace")+" token="+r.Header.Get("X-Vault-Token"))
		switch r.URL.Path {
		case "/v1/sys/internal/ui/mounts/secret":
			_, _ = w.Write([]byte(`{"data":{"type":"kv","options":{"version":"2"}}}`))
		case "/v1/secret/data/app":
			_, _ = w.Write([]byte(`{"data":{"data":{"v":"1"},"metadata":{"version":4}}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	spec := &v1alpha1.VaultProvider{Server: srv.URL, Namespace: "team-a/payments",
		Auth: v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "t", Key: "t"}}}
	r, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v",
		Spec: &v1alpha1.SecretStoreProvider{Vault: spec}}, deps{secrets: map[string][]byte{"t/t": []byte("s.tok")}})
	must(t, err)
	obj, err := r.Reader.GetSecret(context.Background(), engine.Ref{Key: "app"})
	if err != nil || obj.Version != "4" {
		t.Fatalf("read: %v %v", obj, err)
	}
	want := []string{
		"/v1/sys/internal/ui/mounts/secret ns=team-a/payments token=s.tok",
		"/v1/secret/data/app ns=team-a/payments token=s.tok",
	}
	if len(seen) != len(want) {
		t.Fatalf("requests: %v", seen)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, seen[i], want[i])
		}
	}
}
