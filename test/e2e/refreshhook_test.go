package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/refreshhook"
)

// The refresh endpoint, called through the chart's Service with two
// replicas, reaches the leader every time: the leader labels its own pod
// and the Service selects the label, so no request lands on a standby
// (which would refuse it). Each request is signed with a fresh timestamp
// and sent on a new connection.
func TestRefreshHookThroughItsServiceReachesTheLeader(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	waitOperatorReady(t, s, 2)
	const hookKey = "a-shared-key-for-the-refresh-hook"
	ns := newNamespace(t, s, "hook")
	_, err := s.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		StringData: map[string]string{"key": hookKey}}, metav1.CreateOptions{})
	must(t, err)
	must(t, s.k8s.Create(ctx, &v1alpha1.SecretStore{
		ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: ns},
		Spec: v1alpha1.SecretStoreSpec{
			RefreshHook: &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Name: "hook", Key: "key"}},
			SecretStoreProvider: v1alpha1.SecretStoreProvider{
				Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "v1"}}}},
		},
	}))
	externalSecret(t, s, ns, "creds", "store", "k", "key")
	waitTarget(t, s, ns, "creds", "key", "v1", time.Minute)

	// Exactly one pod carries the label: the lease holder's.
	holder := leader(t, s)
	eventually(t, time.Minute, func() (bool, string) {
		pods, listErr := s.kube.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "watchword.io/leader=true"})
		if listErr != nil {
			return false, listErr.Error()
		}
		return len(pods.Items) == 1 && pods.Items[0].Name == holder, fmt.Sprintf("%d pods labelled leader, the lease holder is %s", len(pods.Items), holder)
	})

	svc, err := s.kube.CoreV1().Services(releaseNS).Get(ctx, release+"-refresh-hook", metav1.GetOptions{})
	must(t, err)
	url := fmt.Sprintf("http://%s:%d%s", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port, refreshhook.Path)
	body := fmt.Sprintf(`{"store":{"kind":"SecretStore","namespace":%q,"name":"store"},"keys":["k"]}`, ns)
	for i := range 6 {
		// A second apart: the timestamp is in whole seconds, and the same
		// body signed in the same second is a replay.
		code, answer := postSigned(ctx, url, body, hookKey)
		if code != http.StatusAccepted {
			t.Fatalf("notification %d through the Service: %d %s", i+1, code, answer)
		}
		time.Sleep(1100 * time.Millisecond)
	}
}

// postSigned posts body to url, signed with key and a fresh timestamp, on
// a new connection.
func postSigned(ctx context.Context, url, body, key string) (int, string) {
	ts, sig := refreshhook.Sign([]byte(body), []byte(key), time.Now())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(refreshhook.TimestampHeader, ts)
	req.Header.Set(refreshhook.SignatureHeader, sig)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(answer)
}
