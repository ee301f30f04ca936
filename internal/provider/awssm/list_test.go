package awssm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// TestListFiltersByPrefixAndTagsAPageACall: a listing pushes the prefix
// and a tag key down to ListSecrets, keeps only the secrets with every
// tag, gives each its AWSCURRENT version, and makes one call a page.
func TestListFiltersByPrefixAndTagsAPageACall(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "lister")
	ops := newOps(t, store, deps)
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/ns/p"}
	versions := map[string]string{}
	for name, team := range map[string]string{"app/db": "a", "app/web": "b", "app/cache": "a", "other/db": "a"} {
		v, err := ops.Writer.PutSecret(ctx, name, engine.Publication{Fields: map[string][]byte{"k": []byte("v-" + name)}, Tags: map[string]string{"team": team}}, owner)
		if err != nil {
			t.Fatal(err)
		}
		versions[name] = v
	}
	versions["app/db"] = fake.PutSecretString("app/db", `{"k":"new"}`)
	fake.PutSecretString("app/untagged", `{"k":"x"}`)

	fake.ResetCalls()
	items, err := engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "app/", Tags: map[string]string{"team": "a"}, Limit: 1}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Version != versions[it.Key] {
			t.Errorf("secret %s listed at version %q, its AWSCURRENT is %q", it.Key, it.Version, versions[it.Key])
		}
		if it.Tags["team"] != "a" {
			t.Errorf("secret %s listed with tags %v, want team=a", it.Key, it.Tags)
		}
	}
	if want := []string{"app/cache", "app/db"}; !slices.Equal(got, want) {
		t.Fatalf("listing app/ with team=a = %v, want %v", got, want)
	}
	// The name and tag-key filters leave the 3 secrets under app/ with a
	// team tag: three pages of one.
	if n := fake.Calls("secretsmanager:ListSecrets"); n != 3 {
		t.Errorf("%d ListSecrets calls, want 3 (one per page of the filtered secrets)", n)
	}

	// A prefix that AWS cannot take as a filter value is filtered here.
	items, err = engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "app/c%"}, nil, 0)
	if err != nil || len(items) != 0 {
		t.Fatalf("listing a prefix with %%: %v %v, want nothing", items, err)
	}
}

func TestListRefusedIsPermissionDenied(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "nolist")
	fake.Deny(awsfake.UserARN("nolist"), "secretsmanager:ListSecrets")
	_, err := newOps(t, store, deps).Lister.List(context.Background(), engine.ListRequest{Prefix: "app/"})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "ListSecrets") {
		t.Fatalf("a refused listing: %v, want ErrPermissionDenied naming ListSecrets", err)
	}
}
