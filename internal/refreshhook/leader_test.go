package refreshhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func podLabels(t *testing.T, c client.Client, name string) map[string]string {
	t.Helper()
	var p corev1.Pod
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "watchword", Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return p.Labels
}

func podLabel(t *testing.T, c client.Client, name string) (string, bool) {
	t.Helper()
	v, ok := podLabels(t, c, name)[LeaderLabel]
	return v, ok
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServerLabelsItsPodWhileItListens: the leader's endpoint labels its
// pod once it listens (trying again while the API server refuses), and
// takes the label off when it stops; the label is the only change made
// to the pod, and no other pod is touched.
func TestServerLabelsItsPodWhileItListens(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "watchword", Name: name,
			Labels: map[string]string{"app.kubernetes.io/name": "watchword"}}}
	}
	addr := freeAddr(t)
	var mu sync.Mutex
	var failures, patches int
	var listening []bool
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod("leader"), pod("standby")).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			mu.Lock()
			defer mu.Unlock()
			if obj.GetName() != "leader" {
				t.Errorf("pod %s patched", obj.GetName())
			}
			if failures < 2 {
				failures++
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("not yet"))
			}
			patches++
			conn, err := net.Dial("tcp", addr)
			if err == nil {
				_ = conn.Close()
			}
			listening = append(listening, err == nil)
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	leader := &LeaderPod{Client: c, Pod: types.NamespacedName{Namespace: "watchword", Name: "leader"},
		backoff: wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1 << 30}}
	srv := &Server{Addr: addr, Handler: http.NotFoundHandler(), Leader: leader}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, _ := podLabel(t, c, "leader"); v == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader's pod was not labelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := podLabel(t, c, "standby"); ok {
		t.Fatal("the standby's pod was labelled")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, ok := podLabel(t, c, "leader"); ok {
		t.Fatal("the label stayed on the pod after the endpoint stopped")
	}
	if l := podLabels(t, c, "leader"); l["app.kubernetes.io/name"] != "watchword" {
		t.Fatalf("the pod's other labels changed: %v", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if failures != 2 || patches != 2 || len(listening) != 2 || !listening[0] {
		t.Fatalf("%d refused patches, %d patches (listening at each: %v); want 2 refused, then the label while listening, then its removal",
			failures, patches, listening)
	}
}

// TestRemoveClearsAStaleLabel: a replica's process removes the label its
// pod kept from a process that ended without removing it; a pod that is
// gone is no error.
func TestRemoveClearsAStaleLabel(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "watchword", Name: "restarted",
		Labels: map[string]string{LeaderLabel: "true", "keep": "me"}}}).Build()
	(&LeaderPod{Client: c, Pod: types.NamespacedName{Namespace: "watchword", Name: "restarted"}}).Remove(context.Background())
	if _, ok := podLabel(t, c, "restarted"); ok {
		t.Fatal("the stale label stayed")
	}
	if l := podLabels(t, c, "restarted"); l["keep"] != "me" {
		t.Fatalf("another label was removed: %v", l)
	}
	(&LeaderPod{Client: c, Pod: types.NamespacedName{Namespace: "watchword", Name: "gone"}}).Remove(context.Background())
}
