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
)

// newNamespace creates a namespace for one test, removed at its end.
func newNamespace(t *testing.T, s *env, prefix string) string {
	t.Helper()
	ns, err := s.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// fakeStore creates a fake SecretStore holding key with value.
func fakeStore(t *testing.T, s *env, ns, name, key, value string) *v1alpha1.SecretStore {
	t.Helper()
	st := &v1alpha1.SecretStore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: key, Value: value}}},
		}},
	}
	if err := s.k8s.Create(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	return st
}

// externalSecret creates an ExternalSecret writing remote key into the
// target's secretKey.
func externalSecret(t *testing.T, s *env, ns, name, store, key, secretKey string) {
	t.Helper()
	es := &v1alpha1.ExternalSecret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ExternalSecretSpec{
			SecretStoreRef:  v1alpha1.StoreRef{Name: store},
			RefreshInterval: &metav1.Duration{Duration: time.Hour},
			Data:            []v1alpha1.ExternalSecretData{{SecretKey: secretKey, RemoteRef: v1alpha1.RemoteReference{Key: key}}},
		},
	}
	if err := s.k8s.Create(t.Context(), es); err != nil {
		t.Fatal(err)
	}
}

// waitTarget waits until the target Secret holds want under key.
func waitTarget(t *testing.T, s *env, ns, name, key, want string, timeout time.Duration) *corev1.Secret {
	t.Helper()
	var sec *corev1.Secret
	eventually(t, timeout, func() (bool, string) {
		var err error
		sec, err = s.kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if string(sec.Data[key]) != want {
			return false, fmt.Sprintf("Secret %s/%s has not the expected value under %q yet", ns, name, key)
		}
		return true, ""
	})
	return sec
}

// The operator's pods run from the image under the restricted Pod Security
// level with the chart's defaults (read-only root file system, non-root):
// both replicas are Ready through the chart's probes, the metrics are
// served through the chart's Service, and an ExternalSecret syncs.
func TestOperatorRunsFromTheImageAndSyncs(t *testing.T) {
	s := need(t)
	ctx := t.Context()
	pods, err := s.kube.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=watchword"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d operator pods, want 2:\n%s", len(pods.Items), s.describePods(ctx, releaseNS))
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("pod %s: container %s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
		if !ready {
			t.Errorf("pod %s is not Ready:\n%s", p.Name, s.describePods(ctx, releaseNS))
		}
	}

	ns := newNamespace(t, s, "sync")
	fakeStore(t, s, ns, "store", "db/password", "first")
	externalSecret(t, s, ns, "creds", "store", "db/password", "password")
	waitTarget(t, s, ns, "creds", "password", "first", time.Minute)

	// The metrics, through the chart's Service (which reaches either
	// replica): the leader's count the sync.
	svc, err := s.kube.CoreV1().Services(releaseNS).Get(ctx, release+"-metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	// The Service spreads new connections over both replicas: the
	// leader's scrape counts the sync.
	eventually(t, time.Minute, func() (bool, string) {
		body, err := get(ctx, url)
		if err != nil {
			return false, err.Error()
		}
		if !strings.Contains(body, "go_goroutines ") {
			return false, "the scrape is not Prometheus metrics of a Go process"
		}
		return strings.Contains(body, "watchword_sync_duration_seconds_count{"), "no scrape counted a sync: " + grepLines(body, "watchword_")
	})
}

// grepLines returns the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, sub) && !strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// get fetches url's body.
func get(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	// A new connection each time, so that a Service's requests spread
	// over its pods.
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}
