package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
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
	parallel(t)
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

// TestRefreshHookServiceReachesTheLeader: two replicas of a class, each
// with the refresh endpoint and its pod named (as the chart does with the
// downward API). The leader's pod carries watchword.io/leader=true, which
// the chart's Service selects, and only the leader listens; a replica
// removes the label its pod kept from before (a crash) when it starts;
// when the leader stops, its pod loses the label and the successor's pod
// gets it, and its endpoint takes notifications.
func TestRefreshHookServiceReachesTheLeader(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	const class = "hook-leader"
	ctx := context.Background()
	selector := client.MatchingLabels{"app.kubernetes.io/name": "hook-leader", refreshhook.LeaderLabel: "true"}
	// The pods the replicas run in; no kubelet runs them.
	for _, name := range []string{"ww-0", "ww-1"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "hook-leader"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "watchword", Image: "watchword"}}}}
		if name == "ww-1" {
			p.Labels[refreshhook.LeaderLabel] = "true" // kept from a process that crashed
		}
		must(t, k8s.Create(ctx, p))
	}
	// selected is the pods the Service selects.
	selected := func() []string {
		var pods corev1.PodList
		must(t, k8s.List(ctx, &pods, client.InNamespace(ns), selector))
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names
	}
	const hookSecret = "hook-secret-of-the-leader-test"
	createSecret(t, ns, "refresh-hook", map[string]string{"secret": hookSecret})
	classStore(t, ns, "store", class, "value")
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
		s.Spec.RefreshHook = &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "refresh-hook", Key: "secret"}}
	})
	body := fmt.Sprintf(`{"store": {"kind": "SecretStore", "namespace": %q, "name": "store"}, "keys": ["k"]}`, ns)

	urls := make([]string, 2)
	start := func(n int) *replica {
		addr, err := freeLoopbackAddr()
		must(t, err)
		urls[n] = "http://" + addr + refreshhook.Path
		return startReplicaWith(t, ns, class, n, func(o *operator.Options) {
			o.RefreshHookAddr = addr
			o.RefreshHook.LeaderPod = types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("ww-%d", n)}
		})
	}
	// The first replica leads; the second starts once it does, and takes
	// the stale label off its own pod.
	first := start(0)
	oneLeader(t, ns, class, []*replica{first})
	second := start(1)
	eventually(t, wait, func() (bool, string) {
		got := selected()
		return slices.Equal(got, []string{"ww-0"}), fmt.Sprintf("the Service selects %v, want the leader's pod ww-0 alone", got)
	})
	eventually(t, wait, func() (bool, string) {
		code, answer := postHookTo(t, urls[0], body, signHook(body, hookSecret))
		return code == http.StatusAccepted, fmt.Sprintf("the leader's endpoint: %d %s", code, answer)
	})
	if code, answer := postHookTo(t, urls[1], body, signHook(body, hookSecret)); code != 0 {
		t.Fatalf("the standby's endpoint answered %d %s; it must not listen", code, answer)
	}

	first.stop()
	<-first.stopped
	if first.err != nil {
		t.Fatalf("the leader stopped with %v", first.err)
	}
	oneLeader(t, ns, class, []*replica{second})
	eventually(t, wait, func() (bool, string) {
		got := selected()
		return slices.Equal(got, []string{"ww-1"}), fmt.Sprintf("the Service selects %v, want the successor's pod ww-1 alone", got)
	})
	eventually(t, wait, func() (bool, string) {
		code, answer := postHookTo(t, urls[1], body, signHook(body, hookSecret))
		return code == http.StatusAccepted, fmt.Sprintf("the successor's endpoint: %d %s", code, answer)
	})
}
