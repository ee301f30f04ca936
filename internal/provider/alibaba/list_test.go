package alibaba

import (
	"fmt"
	"slices"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestListFiltersByPrefixAndTagsAPageACall: a listing asks ListSecrets
// for the tags, keeps the secrets under the prefix with the tags asked,
// and follows its pages by number.
func TestListFiltersByPrefixAndTagsAPageACall(t *testing.T) {
	e := newEnv(t)
	c := ctx(t)
	ops := e.ops(t)
	owner := engine.Owner{ID: "PushSecret/ns/p"}
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("app/%d", i)
		team := map[bool]string{true: "a", false: "b"}[i%2 == 0]
		if _, err := ops.Writer.PutSecret(c, name, engine.Publication{Fields: map[string][]byte{"k": []byte("v")}, Tags: map[string]string{"team": team}}, owner); err != nil {
			t.Fatal(err)
		}
		if team == "a" {
			want = append(want, name)
		}
	}
	e.fake.PutValue("other/1", []byte("v"))
	before := e.fake.Calls("ListSecrets")
	items, err := engine.ListAll(c, ops.Lister, engine.ListRequest{Prefix: "app/", Tags: map[string]string{"team": "a"}, Limit: 3}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Tags["team"] != "a" {
			t.Errorf("secret %s listed with tags %v, want team=a", it.Key, it.Tags)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listing app/ with team=a = %v, want %v", got, want)
	}
	// 8 secrets, 3 a page.
	if n := e.fake.Calls("ListSecrets") - before; n != 3 {
		t.Errorf("%d ListSecrets calls, want 3", n)
	}
}

func TestListWithoutThePermissionIsPermissionDenied(t *testing.T) {
	e := newEnv(t)
	e.fake.AddKey("LTAI5tReader", "reader-secret", "kms:GetSecretValue")
	e.deps.SetSecret("ali", "id", []byte("LTAI5tReader"))
	e.deps.SetSecret("ali", "secret", []byte("reader-secret"))
	_, err := e.ops(t).Lister.List(ctx(t), engine.ListRequest{})
	mustClass(t, err, engine.ErrPermissionDenied, `"LTAI5tReader"`, "kms:ListSecrets")
}
