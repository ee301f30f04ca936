package storeaccess

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// connChecker is a Checker that keeps a connection, whose changes the
// test sends.
type connChecker struct{ changes chan struct{} }

func (connChecker) Check(context.Context) error          { return nil }
func (c connChecker) ConnectionChanges() <-chan struct{} { return c.changes }

// connFactory builds clients whose Checker is c.
type connFactory struct{ c connChecker }

func (connFactory) Validate(provider.Store) error            { return nil }
func (connFactory) Refs(provider.Store) []provider.ObjectRef { return nil }
func (f connFactory) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	return engine.Ops{Reader: nopReader{}, Checker: f.c}, nil
}

// TestConnectionChangesReachTheStoreOfTheirKind: a change of a client's
// connection is an event for its store, on the channel of the store's
// kind only.
func TestConnectionChangesReachTheStoreOfTheirKind(t *testing.T) {
	checker := connChecker{changes: make(chan struct{}, 1)}
	c := NewClients(provider.Registry{"fake": connFactory{checker}}, &versions{}, nil, nil, nil)
	namespaced, cluster := c.ConnectionChanges(v1alpha1.SecretStoreKind), c.ConnectionChanges(v1alpha1.ClusterSecretStoreKind)
	store := &Resolved{UID: "uid", Generation: 1, Store: provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: "shared",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	if _, err := c.Get(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	checker.changes <- struct{}{}
	ev := <-cluster
	if _, ok := ev.Object.(*v1alpha1.ClusterSecretStore); !ok || client.ObjectKeyFromObject(ev.Object) != (client.ObjectKey{Name: "shared"}) {
		t.Fatalf("event %T %v, want ClusterSecretStore shared", ev.Object, client.ObjectKeyFromObject(ev.Object))
	}
	select {
	case ev := <-namespaced:
		t.Fatalf("a ClusterSecretStore's change reached the SecretStores: %v", client.ObjectKeyFromObject(ev.Object))
	default:
	}
	close(checker.changes) // as Close does: the forwarding ends
}
