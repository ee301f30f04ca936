package storeaccess

import (
	"context"
	"fmt"
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

// downChecker is a connChecker whose store cannot be reached.
type downChecker struct{ connChecker }

func (downChecker) Check(context.Context) error {
	return fmt.Errorf("the plugin cannot be reached: %w", engine.ErrUnavailable)
}

type downFactory struct{ c downChecker }

func (downFactory) Validate(provider.Store) error            { return nil }
func (downFactory) Refs(provider.Store) []provider.ObjectRef { return nil }
func (f downFactory) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	return engine.Ops{Reader: nopReader{}, Checker: f.c}, nil
}

// TestAConnectionChangeEndsAnUnreachableHold: a store whose connection was
// lost is held by its gate after its failed checks; when the connection
// changes (the plugin came back), the hold ends before the store is told,
// so that the check the change makes reaches the store at once rather
// than after the rest of the hold.
func TestAConnectionChangeEndsAnUnreachableHold(t *testing.T) {
	checker := downChecker{connChecker{changes: make(chan struct{}, 1)}}
	c := NewClients(provider.Registry{"fake": downFactory{checker}}, &versions{}, nil, nil, nil)
	changes := c.ConnectionChanges(v1alpha1.SecretStoreKind)
	store := &Resolved{UID: "uid", Generation: 1, Store: provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team", Name: "plugin",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	client, err := c.Get(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = client.Check(context.Background())
	}
	if _, kind := c.Gate(store).HeldUntil(); kind != engine.RefusedUnreachable {
		t.Fatalf("after three failed checks the gate's hold is %q, want %q", kind, engine.RefusedUnreachable)
	}
	checker.changes <- struct{}{}
	<-changes
	if until, kind := c.Gate(store).HeldUntil(); kind != "" {
		t.Fatalf("after a connection change the store is held (%s) until %s", kind, until)
	}
	close(checker.changes)
}
