package fake

import (
	"context"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
)

func TestRefsNameEveryCredentialField(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "fake")
}

func TestFakeStoreOnlyReads(t *testing.T) {
	ops, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "f",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ops.Capabilities(); got != engine.CanRead {
		t.Fatalf("capabilities %s, want read", got)
	}
}
