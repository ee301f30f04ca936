package storeaccess

import (
	"context"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
)

func TestDepsRefuseUndeclaredObjects(t *testing.T) {
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "app", Name: "s"}
	// Only the Secret app/declared was declared; nothing is read before
	// the check, so no client is needed.
	d := &deps{store: store, provider: "vault", refs: provider.Refs{Secrets: []provider.NamespacedName{{Namespace: "app", Name: "declared"}}}}
	ctx := context.Background()
	_, err := d.SecretValue(ctx, v1alpha1.SecretKeySelector{Name: "other", Key: "k"})
	if err == nil || !strings.Contains(err.Error(), `Secret "app/other"`) || !strings.Contains(err.Error(), `"vault" provider`) {
		t.Fatalf("an undeclared Secret: got %v", err)
	}
	if _, err := d.ConfigMapValue(ctx, "", "declared", "k"); err == nil {
		t.Fatal("a Secret's declaration let a ConfigMap of the same name through")
	}
	if _, _, err := d.ServiceAccountToken(ctx, v1alpha1.ServiceAccountSelector{Name: "declared"}); err == nil {
		t.Fatal("a Secret's declaration let a service account of the same name through")
	}
}
