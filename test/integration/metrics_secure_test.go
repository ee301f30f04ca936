package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/internal/operator"
)

// TestSecureMetricsAskTheAPIServer: with --metrics-secure the metrics
// endpoint speaks HTTPS and lets in only what the real API server
// authenticates and authorizes: no token is 401, a token the API server
// rejects is 500 (controller-runtime's answer to a failed review), the token of a service
// account without `get` on the non-resource URL /metrics is 403, and one
// with it gets 200 and the metrics text. The operator runs as a service
// account with the shipped ClusterRole, so that role's TokenReview and
// SubjectAccessReview rules are what make this work.
func TestSecureMetricsAskTheAPIServer(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	for _, sa := range []string{"watchword", "nobody", "scraper"} {
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	must(t, k8s.Create(ctx, role))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}}}
	must(t, k8s.Create(ctx, binding))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), role) })

	addr := freeAddr(t)
	startOperatorAsWith(t, ns, "watchword", "metrics-"+ns, func(o *operator.Options) {
		o.MetricsAddr = addr
		o.MetricsSecure = true
	})
	// The certificate is self-signed: the check here is of who may read,
	// not of the server's name.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// Plain HTTP is not served.
	eventually(t, wait, func() (bool, string) {
		_, _, err := get("")
		return err == nil, fmt.Sprintf("the metrics endpoint does not answer over HTTPS: %v", err)
	})
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the secure metrics endpoint answered 200 over plain HTTP")
		}
	}

	for _, tc := range []struct {
		who   string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		// The API server's TokenReview rejects it with an error, which
		// controller-runtime's filter answers with 500 "Authentication
		// failed" rather than 401: refused all the same, nothing served.
		{"a token the API server does not know", "not-a-token", http.StatusInternalServerError},
		{"a service account without get on /metrics", accountToken(t, ns, "nobody"), http.StatusForbidden},
		{"a service account with get on /metrics", accountToken(t, ns, "scraper"), http.StatusOK},
	} {
		code, body, err := get(tc.token)
		must(t, err)
		t.Logf("%s: HTTP %d", tc.who, code)
		if code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.who, code, tc.want)
		}
		if code == http.StatusOK && !(strings.Contains(body, "# TYPE ") && strings.Contains(body, "controller_runtime_")) {
			t.Errorf("%s: the body is not the metrics text: %.200q", tc.who, body)
		}
		if code != http.StatusOK && strings.Contains(body, "# TYPE ") {
			t.Errorf("%s: metrics were served with HTTP %d", tc.who, code)
		}
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}
