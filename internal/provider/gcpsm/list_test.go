package gcpsm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestListByPrefixAndLabels: a listing sends the tags as a label filter,
// applies the prefix to each page, and gives each secret its labels.
func TestListByPrefixAndLabels(t *testing.T) {
	e := newEnv(t)
	ops := e.ops(t, store(keySpec()))
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/ns/p"}
	for id, team := range map[string]string{"app-db": "a", "app-web": "b", "app-cache": "a", "other-db": "a"} {
		if _, err := ops.Writer.PutSecret(ctx, id, engine.Publication{Fields: map[string][]byte{"k": []byte("v-" + id)}, Tags: map[string]string{"team": team}}, owner); err != nil {
			t.Fatal(err)
		}
	}
	items, err := engine.ListAll(ctx, ops.Lister, engine.ListRequest{Prefix: "app-", Tags: map[string]string{"team": "a"}, Limit: 1}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Tags["team"] != "a" {
			t.Errorf("secret %s listed with labels %v, want team=a", it.Key, it.Tags)
		}
	}
	if want := []string{"app-cache", "app-db"}; !slices.Equal(got, want) {
		t.Fatalf("listing app- with team=a = %v, want %v", got, want)
	}
	_, err = ops.Lister.List(ctx, engine.ListRequest{Tags: map[string]string{"Team": "a"}})
	if !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), `tag "Team"`) {
		t.Fatalf("a tag that is no label: %v, want ErrInvalidConfig naming it", err)
	}
}

func TestListWithoutThePermissionIsPermissionDenied(t *testing.T) {
	e := newEnv(t)
	email, key := e.fake.NewServiceAccount("nolist", "secretmanager.versions.access")
	e.deps.SetSecret("gcp", "key", key)
	_, err := e.ops(t, store(keySpec())).Lister.List(context.Background(), engine.ListRequest{})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), email) {
		t.Fatalf("a refused listing: %v, want ErrPermissionDenied naming %s", err, email)
	}
}
