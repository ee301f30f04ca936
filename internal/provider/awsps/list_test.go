package awsps_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// TestListFiltersByPrefixAndTagsWithoutValues: a listing asks
// DescribeParameters (metadata, never a value) with the prefix and the
// tags as filters, a call a page, and gives each parameter its version.
func TestListFiltersByPrefixAndTagsWithoutValues(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "lister")
	ops := newOps(t, store, deps)
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/ns/p"}
	for name, team := range map[string]string{"/app/db": "a", "/app/web": "b", "/app/cache": "a", "/other/db": "a"} {
		if _, err := ops.Writer.PutSecret(ctx, name, engine.Publication{Fields: map[string][]byte{"k": []byte("v-" + name)}, Tags: map[string]string{"team": team}}, owner); err != nil {
			t.Fatal(err)
		}
	}
	fake.PutParameter("/app/untagged", "x", "String")
	fake.ResetCalls()
	items, err := engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "/app/", Tags: map[string]string{"team": "a"}, Limit: 1}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key+"@"+it.Version)
	}
	if want := []string{"/app/cache@1", "/app/db@1"}; !slices.Equal(got, want) {
		t.Fatalf("listing /app/ with team=a = %v, want %v", got, want)
	}
	if n := fake.Calls("ssm:DescribeParameters"); n != 2 {
		t.Errorf("%d DescribeParameters calls, want 2 (one per page of the filtered parameters)", n)
	}
	for _, op := range []string{"ssm:GetParametersByPath", "ssm:GetParameter", "ssm:GetParameters"} {
		if n := fake.Calls(op); n != 0 {
			t.Errorf("a listing made %d %s calls, which read values; want none", n, op)
		}
	}
}

func TestListRefusedIsPermissionDenied(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "nolist")
	fake.Deny(awsfake.UserARN("nolist"), "ssm:DescribeParameters")
	_, err := newOps(t, store, deps).Lister.List(context.Background(), engine.ListRequest{Prefix: "/app/"})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "DescribeParameters") {
		t.Fatalf("a refused listing: %v, want ErrPermissionDenied naming DescribeParameters", err)
	}
}
