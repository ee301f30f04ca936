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

func TestMetadataIsReadWhereEntriesSetIt(t *testing.T) {
	spec := &v1alpha1.FakeProvider{Data: []v1alpha1.FakeProviderData{
		{Key: "a", Value: "1", Metadata: map[string]string{"team": "old"}},
		{Key: "a", Value: "2", Metadata: map[string]string{"team": "new", "tier": "gold"}},
		{Key: "b", Value: "3"},
	}}
	ops, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "f",
		Spec: &v1alpha1.SecretStoreProvider{Fake: spec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ops.Capabilities(); got != engine.CanRead|engine.CanList|engine.CanFetchMetadata {
		t.Fatalf("capabilities %s, want read,list,fetchMetadata", got)
	}
	for _, tc := range []struct {
		ref  engine.Ref
		want map[string]string
	}{
		{engine.Ref{Key: "a", Metadata: true}, map[string]string{"team": "new", "tier": "gold"}},
		{engine.Ref{Key: "a", Version: "1", Metadata: true}, map[string]string{"team": "old"}},
		{engine.Ref{Key: "b", Metadata: true}, map[string]string{}},
	} {
		obj, err := ops.Metadata.GetMetadata(context.Background(), tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(obj.Fields) != len(tc.want) || obj.Value != nil || obj.Version != "" {
			t.Errorf("%+v: %+v, want fields %v only", tc.ref, obj, tc.want)
		}
		for k, v := range tc.want {
			if string(obj.Fields[k]) != v {
				t.Errorf("%+v: field %s = %q, want %q", tc.ref, k, obj.Fields[k], v)
			}
		}
	}
	if _, err := ops.Metadata.GetMetadata(context.Background(), engine.Ref{Key: "nope", Metadata: true}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a missing key: %v, want ErrNotFound", err)
	}
}
