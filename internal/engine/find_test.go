package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// listingStore is a store that reads and lists a map of values, with
// their tags, counting its calls.
type listingStore struct {
	values       map[string]string
	tags         map[string]map[string]string
	reads, lists int
}

func (s *listingStore) GetSecret(_ context.Context, ref Ref) (Object, error) {
	s.reads++
	v, ok := s.values[ref.Key]
	if !ok {
		return Object{}, ErrNotFound
	}
	return Object{Version: "1", Value: []byte(v)}, nil
}

func (s *listingStore) List(_ context.Context, req ListRequest) (ListPage, error) {
	s.lists++
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(s.values)) {
		if strings.HasPrefix(k, req.Prefix) && HasTags(s.tags[k], req.Tags) {
			keys = append(keys, k)
		}
	}
	page, next := PageAfter(keys, req.PageToken, req.Limit)
	out := ListPage{NextPageToken: next}
	for _, k := range page {
		out.Items = append(out.Items, ListItem{Key: k, Version: "1", Tags: s.tags[k]})
	}
	return out, nil
}

func findSpec(entries ...v1alpha1.ExternalSecretDataFrom) *v1alpha1.ExternalSecretSpec {
	return &v1alpha1.ExternalSecretSpec{DataFrom: entries}
}

func rewrite(source, target string) v1alpha1.ExternalSecretRewrite {
	return v1alpha1.ExternalSecretRewrite{RegExp: &v1alpha1.RewriteRegExp{Source: source, Target: target}}
}

func syncWith(t *testing.T, s *listingStore, spec *v1alpha1.ExternalSecretSpec) (*Result, error) {
	t.Helper()
	c, err := NewClient("test", Ops{Reader: s, Lister: s})
	if err != nil {
		t.Fatal(err)
	}
	return NewFetcher(nil, nil).Sync(context.Background(), Input{Spec: spec, Store: "s", Reader: c})
}

func TestFindByPathNameAndTagsThenRewrite(t *testing.T) {
	s := &listingStore{
		values: map[string]string{"app/db-password": "p1", "app/db-user": "u1", "app/web-token": "t1", "other/db-password": "x"},
		tags:   map[string]map[string]string{"app/db-password": {"team": "a"}, "app/db-user": {"team": "a"}, "app/web-token": {"team": "a"}},
	}
	spec := findSpec(
		v1alpha1.ExternalSecretDataFrom{
			Find:    &v1alpha1.ExternalSecretFind{Path: "app/", Name: &v1alpha1.FindName{RegExp: "db-"}, Tags: map[string]string{"team": "a"}},
			Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("^app/", ""), rewrite("-", "_")},
		},
		v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "nothing/"}},
	)
	res, err := syncWith(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"db_password": "p1", "db_user": "u1"}
	if len(res.Data) != len(want) {
		t.Fatalf("data keys %v, want %v", slices.Sorted(maps.Keys(res.Data)), slices.Sorted(maps.Keys(want)))
	}
	for k, v := range want {
		if string(res.Data[k]) != v {
			t.Errorf("key %s: got another value than the matched object's", k)
		}
	}
	wantFound := []v1alpha1.FoundCount{{DataFrom: 0, Matched: 2}, {DataFrom: 1, Matched: 0}}
	if !slices.Equal(res.Found, wantFound) {
		t.Errorf("found %v, want %v", res.Found, wantFound)
	}
	if len(res.Versions) != 2 {
		t.Errorf("versions %v, want the two objects read", res.Versions)
	}
	if s.reads != 2 {
		t.Errorf("%d reads, want 2 (only what the find matched)", s.reads)
	}
}

// TestFindRewritesTheStoresNames: rewrites see the remote keys as the
// store names them, '/' and all; what '/' is left becomes '_' after them,
// so a rewrite can tell apart names that '_' would make one.
func TestFindRewritesTheStoresNames(t *testing.T) {
	s := &listingStore{values: map[string]string{"path/to/a/b": "one", "path/to/a_b": "two"}}
	res, err := syncWith(t, s, findSpec(v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "path/to/"},
		Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("^path/to/(.*)$", "$1"), rewrite("/", "-")}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(res.Data)); !slices.Equal(got, []string{"a-b", "a_b"}) || string(res.Data["a-b"]) != "one" {
		t.Errorf("keys %v, want a-b (from path/to/a/b) and a_b", got)
	}
}

func TestFindRefusesCollisionsByName(t *testing.T) {
	s := &listingStore{values: map[string]string{"a/b": "secret-one", "a_b": "secret-two", "x-1": "secret-three", "x-2": "secret-four"}}
	for _, tc := range []struct {
		name  string
		entry v1alpha1.ExternalSecretDataFrom
		want  []string
	}{
		{"two names map to one key", v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "a"}},
			[]string{`remote key "a/b"`, `remote key "a_b"`, `Secret key "a_b"`}},
		{"a rewrite maps two keys to one", v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "x-"}, Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("[0-9]", "n")}},
			[]string{`remote key "x-1"`, `remote key "x-2"`, `Secret key "x-n"`}},
		{"a rewrite makes an invalid key", v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "x-1"}, Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("-", " ")}},
			[]string{`remote key "x-1"`, `Secret key "x 1"`, "not one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := syncWith(t, s, findSpec(tc.entry))
			var fe *FindError
			if !errors.As(err, &fe) || failure.Classify(err).Reason != failure.PropertyError {
				t.Fatalf("got %v, want a FindError classed PropertyError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
			for _, v := range s.values {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q holds a value", err)
				}
			}
		})
	}
}

func TestRewriteRenamesTheFieldsOfARemoteRef(t *testing.T) {
	objs := map[Ref]Object{{Key: "db"}: {Version: "1", Value: []byte(`{"user":"u","password":"p"}`)}}
	spec := findSpec(v1alpha1.ExternalSecretDataFrom{RemoteRef: &v1alpha1.RemoteReference{Key: "db"}, Rewrite: []v1alpha1.ExternalSecretRewrite{rewrite("^(.*)$", "DB_$1")}})
	res, err := Render(spec, objs, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data["DB_user"]) != "u" || string(res.Data["DB_password"]) != "p" || len(res.Data) != 2 {
		t.Fatalf("data keys %v, want DB_user and DB_password", slices.Sorted(maps.Keys(res.Data)))
	}
}

func TestFindNeedsAStoreThatLists(t *testing.T) {
	s := &listingStore{values: map[string]string{"a": "1"}}
	c, err := NewClient("readonly", Ops{Reader: s})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewFetcher(nil, nil).Sync(context.Background(), Input{Spec: findSpec(v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "a"}}), Store: "s", Reader: c})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "dataFrom[0].find") || !strings.Contains(err.Error(), "list") {
		t.Fatalf("a find on a store that cannot list: %v, want NotSupported naming the entry and the capability", err)
	}
}

func TestFindRefusesABadRegexpAsTerminal(t *testing.T) {
	s := &listingStore{values: map[string]string{"a": "1"}}
	_, err := syncWith(t, s, findSpec(v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Name: &v1alpha1.FindName{RegExp: "(unclosed"}}}))
	if class := failure.Classify(err); !class.Terminal || !strings.Contains(err.Error(), "find.name.regexp") {
		t.Fatalf("a bad regexp: %v (%+v), want a terminal error naming find.name.regexp", err, class)
	}
}

func TestFindBoundsTheObjectsItReads(t *testing.T) {
	s := &listingStore{values: map[string]string{}}
	for i := range MaxFound + 1 {
		s.values[strings.Repeat("k", 1)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = "v"
	}
	_, err := syncWith(t, s, findSpec(v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "k"}}))
	var fe *FindError
	if !errors.As(err, &fe) || failure.Classify(err).Reason != failure.PropertyError || !strings.Contains(err.Error(), "narrow") {
		t.Fatalf("a find over %d objects: %v, want a FindError asking to narrow it", MaxFound, err)
	}
	if s.reads != 0 {
		t.Errorf("%d reads after a find over its bound, want none", s.reads)
	}
}

// endless is a store whose listing never ends: each page, empty (as a
// store that filters on its side may give), names the next.
type endless struct{ listingStore }

func (e *endless) List(_ context.Context, req ListRequest) (ListPage, error) {
	return ListPage{NextPageToken: req.PageToken + "x"}, nil
}

// A find's own limits are the ExternalSecret's input errors
// (PropertyError, naming what to narrow), never the store's
// configuration: a listing of more than MaxListPages pages, and a matched
// key longer than status can record.
func TestFindLimitsAreTheFindsErrors(t *testing.T) {
	check := func(name string, ops Ops, want string) {
		t.Helper()
		c, err := NewClient("test", ops)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewFetcher(nil, nil).Sync(context.Background(), Input{Spec: findSpec(v1alpha1.ExternalSecretDataFrom{Find: &v1alpha1.ExternalSecretFind{Path: "k"}}), Store: "s", Reader: c})
		var fe *FindError
		if !errors.As(err, &fe) || failure.Classify(err).Reason != failure.PropertyError || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a PropertyError saying %q", name, err, want)
		}
	}
	e := &endless{}
	check("endless pages", Ops{Reader: e, Lister: e}, "pages")
	long := &listingStore{values: map[string]string{"k" + strings.Repeat("y", MaxFoundKeyLength): "v"}}
	check("a long key", Ops{Reader: long, Lister: long}, "characters")
}
