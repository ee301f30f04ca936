package barbican

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestListGivesEachNameOnceAcrossFetches: a name with more secrets than
// one request returns (Barbican's page of 100) is listed once, with its
// newest secret's version, however the pages fall; a name whose secrets
// hold no payload is not listed; tags are refused.
func TestListGivesEachNameOnceAcrossFetches(t *testing.T) {
	s := sharedServer(t)
	ctx := context.Background()
	c := seedClient(s)
	ops := newOps(t, noAuthSpec(s), nil)
	newest := map[string]*secrets.Secret{}
	for i := range listFetch + 3 {
		sec, err := seed(ctx, c, "list/big", "text/plain", []byte(fmt.Sprintf("v%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		newest["list/big"] = sec
	}
	for _, name := range []string{"list/a", "list/a", "list/z"} {
		sec, err := seed(ctx, c, name, "text/plain", []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		newest[name] = sec
	}
	if _, err := secrets.Create(ctx, c, secrets.CreateOpts{Name: "list/empty", SecretType: secrets.OpaqueSecret}).Extract(); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, 1, 2} {
		items, err := engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "list/", Limit: limit}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Key)
			if it.Version != version(newest[it.Key]) {
				t.Errorf("limit %d: %s listed at version %s, its newest secret is %s", limit, it.Key, it.Version, version(newest[it.Key]))
			}
		}
		if want := []string{"list/a", "list/big", "list/z"}; !slices.Equal(got, want) {
			t.Fatalf("limit %d: listing list/ = %v, want %v", limit, got, want)
		}
	}
	if _, err := ops.Lister.List(ctx, engine.ListRequest{Tags: map[string]string{"team": "a"}}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("a listing by tags: %v, want ErrNotSupported", err)
	}
}
