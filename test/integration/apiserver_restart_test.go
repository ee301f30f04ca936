package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
)

// TestAPIServerRestartMidRun: on a control plane of its own, the
// kube-apiserver is stopped and started again (etcd keeps running) while
// an operator serves 50 ExternalSecrets. Outcome: the same operator
// process, never restarted, sees the store's change made after the
// restart and every target converges to it; no target lost its data over
// the restart. It prints how long the API server was away and how long
// the targets took to converge after it came back.
func TestAPIServerRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane of its own")
	}
	const n = 50
	ctx := context.Background()
	cp, err := localcluster.Start(localcluster.Options{NoControllerManager: true, Restartable: true})
	if err != nil {
		t.Fatalf("starting a control plane: %v", err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	c, err := client.New(cp.Config, client.Options{Scheme: operator.Scheme()})
	must(t, err)

	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.SkipNameValidation = true
	runCtx, cancel := context.WithCancel(ctx)
	op, err := operator.New(runCtx, cp.Config, opts)
	if err != nil {
		cancel()
		t.Fatalf("building the operator: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the operator ended with: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("the operator did not stop within %s", wait)
		}
	})

	ns := "restart"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "k", Value: "before"}}}}}}
	must(t, c.Create(ctx, store))
	for i := range n {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("es-%02d", i)},
			Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "store"},
				Data: []v1alpha1.ExternalSecretData{{SecretKey: "v", RemoteRef: v1alpha1.RemoteReference{Key: "k"}}}}}
		must(t, c.Create(ctx, es))
	}
	// converged tells whether every target holds want.
	converged := func(want string) (bool, string) {
		var list corev1.SecretList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		got := 0
		for _, s := range list.Items {
			if string(s.Data["v"]) == want {
				got++
			}
		}
		return got == n, fmt.Sprintf("%d of %d targets hold %q", got, n, want)
	}
	eventually(t, wait, func() (bool, string) { return converged("before") })

	var away time.Duration
	start := time.Now()
	must(t, cp.RestartAPIServer(func() {
		// The API server is down: let the operator's watches and
		// leader-less workers notice it for a few seconds.
		time.Sleep(5 * time.Second)
	}))
	away = time.Since(start)
	back := time.Now()
	// Nothing was lost over the restart.
	if ok, msg := converged("before"); !ok {
		t.Fatalf("after the restart: %s", msg)
	}
	select {
	case err := <-done:
		t.Fatalf("the operator stopped over the API server's restart: %v", err)
	default:
	}
	eventually(t, wait, func() (bool, string) {
		var s v1alpha1.SecretStore
		if err := c.Get(ctx, client.ObjectKeyFromObject(store), &s); err != nil {
			return false, err.Error()
		}
		s.Spec.Fake.Data[0].Value = "after"
		if err := c.Update(ctx, &s); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	eventually(t, 2*wait, func() (bool, string) { return converged("after") })
	t.Logf("kube-apiserver away (stop, 5 s down, start until ready) %.1fs; %d targets converged to the change made after it in %.1fs after it was back, with the same operator process",
		away.Seconds(), n, time.Since(back).Seconds())
}
