package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// sentinel is a secret value that must never appear outside Secrets. Tests
// that make a sync fail put it in the remote data; every test namespace is
// scanned for it when its test ends (newNamespace), and so are the
// operator's logs (at debug verbosity) and its metrics.
const sentinel = "S3NTINEL-value-that-must-not-leak"

// leakLog is the operator's log as the tests capture it: it keeps the
// lines that repeat the sentinel.
var leakLog = &leakWriter{}

type leakWriter struct {
	mu     sync.Mutex
	leaked []string
}

func (w *leakWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(sentinel)) {
		w.mu.Lock()
		// The line is kept without the value, to say which message leaked.
		w.leaked = append(w.leaked, strings.ReplaceAll(string(p), sentinel, "<sentinel>"))
		w.mu.Unlock()
	}
	return len(p), nil
}

func (w *leakWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.leaked...)
}

// assertNoLeak fails the test when the sentinel appears in an event, a
// condition or status of an ExternalSecret, PushSecret or store of the
// namespace, in the operator's log or in a metric label.
func assertNoLeak(t *testing.T, ns string) {
	t.Helper()
	assertNoLeakIn(t, k8s, ns)
}

// assertNoLeakIn is assertNoLeak for a namespace read through r (a
// control plane of a test's own).
func assertNoLeakIn(t *testing.T, r client.Reader, ns string) {
	t.Helper()
	ctx := context.Background()
	var evs corev1.EventList
	must(t, r.List(ctx, &evs, client.InNamespace(ns)))
	for _, e := range evs.Items {
		if strings.Contains(e.Message, sentinel) || strings.Contains(e.Reason, sentinel) {
			t.Errorf("event %s leaks a secret value", e.Reason)
		}
	}
	var list v1alpha1.ExternalSecretList
	must(t, r.List(ctx, &list, client.InNamespace(ns)))
	for _, es := range list.Items {
		for _, c := range es.Status.Conditions {
			if strings.Contains(c.Message, sentinel) || strings.Contains(c.Reason, sentinel) {
				t.Errorf("condition %s of %s leaks a secret value", c.Type, es.Name)
			}
		}
		for _, d := range es.Status.PublishedTo {
			if strings.Contains(d.Message, sentinel) || strings.Contains(d.DataHash, sentinel) {
				t.Errorf("the status of destination %q of ExternalSecret %s leaks a secret value", d.Name, es.Name)
			}
		}
	}
	var pushes v1alpha1.PushSecretList
	must(t, r.List(ctx, &pushes, client.InNamespace(ns)))
	for _, ps := range pushes.Items {
		for _, c := range ps.Status.Conditions {
			if strings.Contains(c.Message, sentinel) || strings.Contains(c.Reason, sentinel) {
				t.Errorf("condition %s of PushSecret %s leaks a secret value", c.Type, ps.Name)
			}
		}
		for _, d := range ps.Status.Destinations {
			if strings.Contains(d.Message, sentinel) || strings.Contains(d.DataHash, sentinel) {
				t.Errorf("the status of destination %q of PushSecret %s leaks a secret value", d.Name, ps.Name)
			}
		}
	}
	var stores v1alpha1.SecretStoreList
	must(t, r.List(ctx, &stores, client.InNamespace(ns)))
	for _, s := range stores.Items {
		for _, c := range s.Status.Conditions {
			if strings.Contains(c.Message, sentinel) {
				t.Errorf("condition %s of SecretStore %s leaks a secret value", c.Type, s.Name)
			}
		}
	}
	for _, line := range leakLog.lines() {
		t.Errorf("the operator's log repeats a secret value: %s", line)
	}
	families, err := crmetrics.Registry.Gather()
	must(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), sentinel) {
					t.Errorf("metric %s has a label %s that holds a secret value", f.GetName(), l.GetName())
				}
			}
		}
	}
}

// TestAPIServerErrorsAreRedacted: the real API server repeats an invalid
// label value in its error; the error model keeps the field path and the
// cause's type, and drops the value.
func TestAPIServerErrorsAreRedacted(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad",
		Labels: map[string]string{"team": sentinel + " with spaces"}}}
	err := k8s.Create(context.Background(), bad)
	if err == nil {
		t.Fatal("the API server accepted an invalid label value")
	}
	if !strings.Contains(err.Error(), sentinel) {
		t.Fatalf("this API server does not repeat the value (%v); the test proves nothing", err)
	}
	wrapped := failure.Rejected(fmt.Errorf("creating Secret %q: %w", "bad", err), failure.TargetRejected)
	class, msg := failure.Describe(wrapped)
	if strings.Contains(msg, sentinel) {
		t.Fatalf("the redacted message repeats the value: %s", strings.ReplaceAll(msg, sentinel, "<sentinel>"))
	}
	for _, want := range []string{`creating Secret "bad": the API server answered Invalid for Secret "bad"`, "metadata.labels"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if class.Reason != failure.TargetRejected || !class.Terminal {
		t.Errorf("class = %+v, want a terminal TargetRejected", class)
	}
	if red := failure.Redacted(wrapped); strings.Contains(red.Error(), sentinel) {
		t.Error("Redacted repeats the value")
	}
}
