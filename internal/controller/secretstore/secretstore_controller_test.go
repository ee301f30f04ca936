package secretstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// checkedFactory builds clients whose credential check returns err.
type checkedFactory struct{ err error }

func (checkedFactory) Validate(provider.Store) error            { return nil }
func (checkedFactory) Refs(provider.Store) []provider.ObjectRef { return nil }
func (f checkedFactory) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	return engine.Ops{Reader: noReader{}, Checker: f}, nil
}
func (f checkedFactory) Check(context.Context) error { return f.err }

type noReader struct{}

func (noReader) GetSecret(context.Context, engine.Ref) (engine.Object, error) {
	return engine.Object{}, engine.ErrNotFound
}

// TestFailedCheckIsNotCalledValid: the Ready condition of a store whose
// check failed says what failed, and not that the configuration and
// credentials are valid; one whose check passed says they are.
func TestFailedCheckIsNotCalledValid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status metav1.ConditionStatus
		reason string
	}{
		{"unreachable", fmt.Errorf("checking the credentials at sts.example: could not be reached: %w", engine.ErrUnavailable), metav1.ConditionFalse, "StoreUnavailable"},
		{"valid", nil, metav1.ConditionTrue, "Valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", UID: types.UID("uid-" + tc.name), Generation: 1}}
			store.Spec.Fake = &v1alpha1.FakeProvider{}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(store).WithStatusSubresource(store).Build()
			r := &Reconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10),
				Clients: storeaccess.NewClients(provider.Registry{"fake": checkedFactory{err: tc.err}}, nil, c, nil, nil)}
			_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "s"}})
			var got v1alpha1.SecretStore
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "team", Name: "s"}, &got); err != nil {
				t.Fatal(err)
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			if ready == nil || ready.Status != tc.status || ready.Reason != tc.reason {
				t.Fatalf("Ready = %+v, want %s with reason %s", ready, tc.status, tc.reason)
			}
			if valid := strings.Contains(ready.Message, "are valid"); valid != (tc.err == nil) {
				t.Errorf("Ready message %q: says the store is valid %v, want %v", ready.Message, valid, tc.err == nil)
			}
		})
	}
}
