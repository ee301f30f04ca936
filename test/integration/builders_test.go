package integration

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// wait bounds the suite's waits for the operator's work. It is an upper
// bound, not a measurement: the parallel tests share one operator on two
// cores, and a wait that ends early costs nothing.
const wait = 30 * time.Second

type fakeEntry struct{ key, version, value string }

func fakeStore(t *testing.T, ns, name string, entries ...fakeEntry) *v1alpha1.SecretStore {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	for _, e := range entries {
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: e.key, Version: e.version, Value: e.value})
	}
	must(t, k8s.Create(context.Background(), s))
	return s
}

// updateStore changes a SecretStore with retries on conflict.
func updateStore(t *testing.T, ns, name string, change func(*v1alpha1.SecretStore)) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		var s v1alpha1.SecretStore
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return false, err.Error()
		}
		change(&s)
		if err := k8s.Update(context.Background(), &s); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func updateES(t *testing.T, ns, name string, change func(*v1alpha1.ExternalSecret)) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, name)
		change(es)
		if err := k8s.Update(context.Background(), es); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

type esOpt func(*v1alpha1.ExternalSecret)

func withData(secretKey, key, property string) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: secretKey,
			RemoteRef: v1alpha1.RemoteReference{Key: key, Property: property}})
	}
}

func withDataFrom(key, property string) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.DataFrom = append(es.Spec.DataFrom, v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: key, Property: property}})
	}
}

func withTarget(name string, policy v1alpha1.CreationPolicy) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Name = name
		es.Spec.Target.CreationPolicy = policy
	}
}

func withRefresh(d time.Duration) esOpt {
	return func(es *v1alpha1.ExternalSecret) { es.Spec.RefreshInterval = &metav1.Duration{Duration: d} }
}

func withClusterStore(name string) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.SecretStoreRef = v1alpha1.StoreRef{Name: name, Kind: v1alpha1.ClusterSecretStoreKind}
	}
}

func withTemplate(tmpl *v1alpha1.ExternalSecretTemplate) esOpt {
	return func(es *v1alpha1.ExternalSecret) { es.Spec.Target.Template = tmpl }
}

func newES(t *testing.T, ns, name, store string, opts ...esOpt) *v1alpha1.ExternalSecret {
	t.Helper()
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store}}}
	for _, o := range opts {
		o(es)
	}
	must(t, k8s.Create(context.Background(), es))
	return es
}

func getES(t *testing.T, ns, name string) *v1alpha1.ExternalSecret {
	t.Helper()
	var es v1alpha1.ExternalSecret
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &es))
	return &es
}

func getSecret(ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s)
	return &s, err
}

func readyCond(es *v1alpha1.ExternalSecret) *v1alpha1.ExternalSecretCondition {
	for i := range es.Status.Conditions {
		if es.Status.Conditions[i].Type == v1alpha1.ConditionReady {
			return &es.Status.Conditions[i]
		}
	}
	return nil
}

func describeES(es *v1alpha1.ExternalSecret) string {
	c := readyCond(es)
	if c == nil {
		return fmt.Sprintf("phase %q, no Ready condition", es.Status.Phase)
	}
	return fmt.Sprintf("phase %q, Ready=%s %s: %s", es.Status.Phase, c.Status, c.Reason, c.Message)
}

// waitReady waits until the ExternalSecret is Ready for its current
// generation and returns it.
func waitReady(t *testing.T, ns, name string) *v1alpha1.ExternalSecret {
	t.Helper()
	var es *v1alpha1.ExternalSecret
	eventually(t, wait, func() (bool, string) {
		es = getES(t, ns, name)
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == es.Generation, describeES(es)
	})
	return es
}

// waitCondition waits until Ready is False with the given reason and a
// message containing every fragment.
func waitCondition(t *testing.T, ns, name, reason string, fragments ...string) *v1alpha1.ExternalSecret {
	t.Helper()
	var es *v1alpha1.ExternalSecret
	eventually(t, wait, func() (bool, string) {
		es = getES(t, ns, name)
		c := readyCond(es)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return false, describeES(es)
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return false, fmt.Sprintf("message %q lacks %q", c.Message, f)
			}
		}
		return true, ""
	})
	return es
}

// waitSecretData waits until the Secret holds exactly want.
func waitSecretData(t *testing.T, ns, name string, want map[string]string) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	eventually(t, wait, func() (bool, string) {
		var err error
		s, err = getSecret(ns, name)
		if err != nil {
			return false, err.Error()
		}
		if len(s.Data) != len(want) {
			return false, fmt.Sprintf("Secret has keys %v, want %d keys", keysOf(s.Data), len(want))
		}
		for k, v := range want {
			if string(s.Data[k]) != v {
				return false, fmt.Sprintf("key %s differs", k)
			}
		}
		return true, ""
	})
	return s
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), fmt.Sprintf("still there (%v)", err)
	})
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func createSecret(t *testing.T, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	must(t, k8s.Create(context.Background(), s))
	return s
}

func updateSecret(t *testing.T, ns, name string, change func(*corev1.Secret)) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, name)
		if err != nil {
			return false, err.Error()
		}
		change(s)
		if err := k8s.Update(context.Background(), s); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// goroutinesOf returns the stacks of the goroutines still running code
// of the operator, controller-runtime or client-go's informers, for a test
// whose operator did not stop in time: they say which part held the
// shutdown up.
func goroutinesOf() string {
	var buf strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	var kept []string
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, "watchword/internal") || strings.Contains(g, "controller-runtime/pkg/") ||
			strings.Contains(g, "client-go/tools/cache") {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n")
}

// stopGrace is how long a stopping operator may take: controller-runtime's
// graceful shutdown period (30 s, as long as a pod's default termination
// grace period, which the chart keeps), and a little more. Beyond it the
// manager itself gives up and Start returns an error.
const stopGrace = 35 * time.Second

// awaitStop waits, once what's context is cancelled, for done to close;
// it fails the test after stopGrace. A stop slower than the suite's usual
// wait logs what was still running then, so that a slow part can be found.
func awaitStop(t *testing.T, what string, done <-chan struct{}) bool {
	t.Helper()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		t.Logf("%s has not stopped within %s; what was still running:\n%s", what, wait, goroutinesOf())
	}
	select {
	case <-done:
		return true
	case <-time.After(stopGrace - wait):
		t.Errorf("%s did not stop within %s", what, stopGrace)
		return false
	}
}
