package storeaccess

import (
	"context"
	"sync"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// credFactory is a provider whose store names one credential Secret; it
// counts the clients it builds.
type credFactory struct{ built *int }

func (credFactory) Validate(provider.Store) error { return nil }

func (credFactory) Refs(provider.Store) []provider.ObjectRef {
	return []provider.ObjectRef{{Kind: provider.KindSecret, Field: "fake.token", Name: "token"}}
}

func (f credFactory) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	*f.built++
	return engine.Ops{Reader: nopReader{}}, nil
}

type nopReader struct{}

func (nopReader) GetSecret(context.Context, engine.Ref) (engine.Object, error) {
	return engine.Object{}, nil
}

// versions is the watch by name of credential Secrets.
type versions struct {
	mu sync.Mutex
	rv map[provider.NamespacedName]string
}

func (v *versions) ResourceVersion(_ context.Context, ref provider.NamespacedName) (string, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.rv[ref]
	return rv, ok, nil
}

func (v *versions) set(ref provider.NamespacedName, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if rv == "" {
		delete(v.rv, ref)
		return
	}
	v.rv[ref] = rv
}

func TestClientCacheRebuildsOnlyWhenTheStoreOrACredentialChanges(t *testing.T) {
	built := 0
	token := provider.NamespacedName{Namespace: "app", Name: "token"}
	creds := &versions{rv: map[provider.NamespacedName]string{token: "1"}}
	c := NewClients(provider.Registry{"fake": credFactory{&built}}, creds, nil, nil, nil)
	store := &Resolved{UID: "uid", Generation: 1, Store: provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "app", Name: "s",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	ctx := context.Background()
	get := func() *engine.Client {
		t.Helper()
		cl, err := c.Get(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	first := get()
	if again := get(); again != first || built != 1 {
		t.Fatalf("an unchanged store got a new client (%d built)", built)
	}
	creds.set(token, "2")
	if rotated := get(); rotated == first || built != 2 {
		t.Fatalf("a changed credential Secret kept the old client (%d built)", built)
	}
	store.Generation = 2
	if get(); built != 3 {
		t.Fatalf("a new store generation kept the old client (%d built)", built)
	}
	creds.set(token, "")
	_, err := c.Get(ctx, store)
	if err == nil || built != 3 {
		t.Fatalf("a deleted credential Secret: err %v, %d built; want an error and no new client", err, built)
	}
}
