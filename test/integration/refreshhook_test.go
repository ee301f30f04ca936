package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/refreshhook"
)

// signHook is the headers of body signed with secret now.
func signHook(body, secret string) map[string]string {
	ts, sig := refreshhook.Sign([]byte(body), []byte(secret), time.Now())
	return map[string]string{refreshhook.TimestampHeader: ts, refreshhook.SignatureHeader: sig}
}

// postHook sends body to the suite operator's refresh endpoint with the
// headers given, and returns the status.
func postHook(t *testing.T, body string, headers map[string]string) (int, string) {
	t.Helper()
	return postHookTo(t, refreshHookURL, body, headers)
}

// postHookTo is postHook to the endpoint at url.
func postHookTo(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

func TestRefreshHookMakesTargetFollowAtOnce(t *testing.T) {
	// As in TestRefreshIntervalFollowsRemoteChanges, nothing the operator
	// watches changes with the upstream Secret; with an hourly refresh,
	// only the notification can bring the new value.
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	const hookSecret = "hook-shared-secret-for-the-test"
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, ns, "refresh-hook", map[string]string{"secret": hookSecret})
	createSecret(t, src, "upstream", map[string]string{"password": "one"})
	kubeStore(t, ns, "remote", src, "reader-token")
	updateStore(t, ns, "remote", func(s *v1alpha1.SecretStore) {
		s.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "refresh-hook", Key: "secret"}}
	})
	body := fmt.Sprintf(`{"store": {"kind": "SecretStore", "namespace": %q, "name": "remote"}, "keys": ["upstream"]}`, ns)
	// The endpoint is up and the operator's cache shows the refreshHook
	// once a wrongly signed notification is refused for its signature.
	eventually(t, wait, func() (bool, string) {
		code, answer := postHook(t, body, signHook(body, "a guess"))
		return code == http.StatusForbidden, fmt.Sprintf("wrongly signed notification: %d %s", code, answer)
	})

	newES(t, ns, "follow", "remote", withRefresh(time.Hour), withData("password", "upstream", "password"))
	waitSecretData(t, ns, "follow", map[string]string{"password": "one"})
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["password"] = []byte("two") })

	if code, answer := postHook(t, body, nil); code != http.StatusUnauthorized {
		t.Fatalf("unsigned notification: %d %s, want 401", code, answer)
	}
	if code, answer := postHook(t, body, signHook(body, "a guess")); code != http.StatusForbidden {
		t.Fatalf("wrongly signed notification: %d %s, want 403", code, answer)
	}
	if code, answer := postHook(t, body, signHook(body+" ", hookSecret)); code != http.StatusForbidden {
		t.Fatalf("notification signed for another body: %d %s, want 403", code, answer)
	}
	legacy := map[string]string{refreshhook.SignatureHeader: refreshhook.SignLegacy([]byte(body), []byte(hookSecret))}
	if code, answer := postHook(t, body, legacy); code != http.StatusUnauthorized {
		t.Fatalf("notification signed without a timestamp: %d %s, want 401", code, answer)
	}
	stale := map[string]string{}
	stale[refreshhook.TimestampHeader], stale[refreshhook.SignatureHeader] = refreshhook.Sign([]byte(body), []byte(hookSecret), time.Now().Add(-time.Hour))
	if code, answer := postHook(t, body, stale); code != http.StatusUnauthorized {
		t.Fatalf("notification signed an hour ago: %d %s, want 401", code, answer)
	}
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(ns, "follow")
		if err != nil {
			return false, err.Error()
		}
		return string(s.Data["password"]) == "one", "a refused notification refreshed the target"
	})

	signed := signHook(body, hookSecret)
	code, answer := postHook(t, body, signed)
	if code != http.StatusAccepted || !strings.Contains(answer, `"queued":1`) {
		t.Fatalf("signed notification: %d %s, want 202 with one ExternalSecret queued", code, answer)
	}
	if code, answer := postHook(t, body, signed); code != http.StatusConflict {
		t.Fatalf("the signed notification sent again: %d %s, want 409", code, answer)
	}
	waitSecretData(t, ns, "follow", map[string]string{"password": "two"})
	// The target is written before the status that records the rotation.
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "follow")
		return es.Status.LastRotationTime != nil, "the refresh is not recorded as a rotation: " + describeES(es)
	})
}
