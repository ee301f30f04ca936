package fake

import (
	"context"
	"errors"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
)

func TestRefsNameEveryCredentialField(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "fake")
}

func TestFakeStoreOnlyReadsAndLists(t *testing.T) {
	ops, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "f",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ops.Capabilities(); got != engine.CanRead|engine.CanList {
		t.Fatalf("capabilities %s, want read,list", got)
	}
	providertest.CapabilitiesAreDocumented(t, "fake", ops)
}

func TestListRefusesTagsAndFailsWithAnInjectedError(t *testing.T) {
	spec := &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}, {Key: "b", Version: "v7", Value: "3"}}}
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "f", Spec: &v1alpha1.SecretStoreProvider{Fake: spec}}
	ops, err := Factory{}.New(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := ops.Lister.List(context.Background(), engine.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.ListItem{{Key: "a", Version: "2"}, {Key: "b", Version: "v7"}}
	if len(page.Items) != 2 || page.Items[0].Key != want[0].Key || page.Items[0].Version != want[0].Version || page.Items[1].Key != want[1].Key || page.Items[1].Version != want[1].Version || page.NextPageToken != "" {
		t.Fatalf("listing = %+v, want %+v in one page", page, want)
	}
	if _, err = ops.Lister.List(context.Background(), engine.ListRequest{Tags: map[string]string{"team": "a"}}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("a listing by tags: got %v, want ErrNotSupported (a fake store has no tags)", err)
	}
	spec.Error = &v1alpha1.FakeProviderError{Reason: "Unavailable"}
	ops, err = Factory{}.New(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = ops.Lister.List(context.Background(), engine.ListRequest{}); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("a listing with an injected error: got %v, want ErrUnavailable", err)
	}
}
