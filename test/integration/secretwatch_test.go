package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/secretwatch"
)

func TestSecretWatchByName(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	ref := provider.NamespacedName{Namespace: ns, Name: "credential"}
	var mu sync.Mutex
	wanted := map[provider.NamespacedName]bool{ref: true}
	w := secretwatch.New(metadata.NewForConfigOrDie(restCfg), func(context.Context) (map[provider.NamespacedName]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		out := map[provider.NamespacedName]bool{}
		for k, v := range wanted {
			out[k] = v
		}
		return out, nil
	})
	changes := w.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()

	if _, found, err := w.ResourceVersion(ctx, ref); err != nil || found {
		t.Fatalf("before it exists: found=%v err=%v", found, err)
	}
	createSecret(t, ns, "other", map[string]string{"a": "b"}) // not watched: no event
	s := createSecret(t, ns, "credential", map[string]string{"token": "one"})
	select {
	case e := <-changes:
		if e.Object.GetName() != "credential" || e.Object.GetNamespace() != ns || e.Object.GetResourceVersion() != s.ResourceVersion {
			t.Fatalf("event for %s/%s at %q, want %s/credential at %q", e.Object.GetNamespace(), e.Object.GetName(), e.Object.GetResourceVersion(), ns, s.ResourceVersion)
		}
	case <-time.After(wait):
		t.Fatal("no event for the created Secret")
	}
	rv, found, err := w.ResourceVersion(ctx, ref)
	if err != nil || !found || rv != s.ResourceVersion {
		t.Fatalf("after create: rv=%q found=%v err=%v, want %q", rv, found, err, s.ResourceVersion)
	}
	updateSecret(t, ns, "credential", func(s *corev1.Secret) { s.Data["token"] = []byte("two") })
	select {
	case e := <-changes:
		if e.Object.GetResourceVersion() == s.ResourceVersion {
			t.Fatal("the update event carries the old resourceVersion")
		}
	case <-time.After(wait):
		t.Fatal("no event for the updated Secret")
	}

	// Once nothing names the Secret, its watch stops.
	mu.Lock()
	wanted = map[provider.NamespacedName]bool{}
	mu.Unlock()
	w.Sweep(ctx)
	if n := w.Watched(); n != 0 {
		t.Fatalf("%d watches still running after a sweep, though nothing names their Secrets", n)
	}
}

func TestSecretWatchWithoutPermissionFailsFastWithTheCause(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	cfg, err := cluster.UserConfig("no-secret-access")
	must(t, err)
	w := secretwatch.New(metadata.NewForConfigOrDie(cfg), func(context.Context) (map[provider.NamespacedName]bool, error) {
		return nil, nil
	})
	w.SyncTimeout = 2 * time.Second
	ref := provider.NamespacedName{Namespace: ns, Name: "credential"}
	_, _, err = w.ResourceVersion(context.Background(), ref)
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), ns+"/credential") {
		t.Fatalf("error = %v, want one that names the Secret and says the list is forbidden", err)
	}
	// Later callers do not wait again: the first wait's deadline holds for
	// them. Were a later caller to start a sync timeout of its own, this
	// one would wait an hour, and the call would end with its context's
	// deadline instead of the cause.
	w.SyncTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, _, err = w.ResourceVersion(ctx, ref)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the second call waited for the watch to sync again instead of failing with the cause")
	}
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("second call: error = %v, want the unavailable error that says the list is forbidden", err)
	}
}
