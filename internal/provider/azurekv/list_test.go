package azurekv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestListFiltersAndPages: a listing keeps the secrets under the prefix
// with the tags asked, leaves out a disabled secret, gives each its tags,
// and reads every page of the vault (25 a request) in one call with
// Limit zero, or a page of Limit secrets a call.
func TestListFiltersAndPages(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, secretStore(clientSecretSpec()))
	ctx := context.Background()
	var all []string
	for i := range 30 {
		name := fmt.Sprintf("app-%02d", i)
		team := map[bool]string{true: "a", false: "b"}[i%3 == 0]
		e.fake.SetSecret(vaultHost, name, "v", map[string]string{"team": team})
		all = append(all, name)
	}
	off := e.fake.SetSecret(vaultHost, "app-off", "v", map[string]string{"team": "a"})
	e.fake.DisableVersion(vaultHost, "app-off", off)
	e.fake.SetSecret(vaultHost, "other", "v", map[string]string{"team": "a"})

	before := e.fake.Calls("listSecrets")
	page, err := ops.Lister.List(ctx, engine.ListRequest{Prefix: "app-", Tags: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range page.Items {
		got = append(got, it.Key)
		if it.Tags["team"] != "a" {
			t.Errorf("secret %s listed with tags %v, want team=a", it.Key, it.Tags)
		}
	}
	var want []string
	for i, n := range all {
		if i%3 == 0 {
			want = append(want, n)
		}
	}
	if !slices.Equal(got, want) || page.NextPageToken != "" {
		t.Fatalf("listing app- with team=a = %v (token %q), want %v in one page", got, page.NextPageToken, want)
	}
	if n := e.fake.Calls("listSecrets") - before; n != 2 {
		t.Errorf("a listing of 32 secrets made %d requests, want 2 (25 a page)", n)
	}

	items, err := engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "app-", Limit: 10}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, it := range items {
		got = append(got, it.Key)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("listing app- ten at a time = %v, want %v (without the disabled one)", got, all)
	}
	if _, err = ops.Lister.List(ctx, engine.ListRequest{PageToken: "bogus"}); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("a token the provider did not give: %v, want ErrInvalidConfig", err)
	}
}

func TestListWithoutListIsPermissionDenied(t *testing.T) {
	e := newEnv(t)
	e.fake.AddApp(tenant, "0b1f2c3d-0000-4000-8000-000000000002", "other-secret", readerSubj, "get")
	e.deps.SetSecret("azure", "client-secret", []byte("other-secret"))
	spec := clientSecretSpec()
	spec.Auth.ClientSecret.ClientID = "0b1f2c3d-0000-4000-8000-000000000002"
	_, err := e.ops(t, secretStore(spec)).Lister.List(context.Background(), engine.ListRequest{})
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("a listing by an app that may only get: %v, want ErrPermissionDenied", err)
	}
}
