package engine

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// sliceLister lists sorted keys a page at a time, with PageAfter, and
// counts its calls.
type sliceLister struct {
	keys  []string
	calls int
}

func (s *sliceLister) List(_ context.Context, req ListRequest) (ListPage, error) {
	s.calls++
	var under []string
	for _, k := range s.keys {
		if len(k) >= len(req.Prefix) && k[:len(req.Prefix)] == req.Prefix {
			under = append(under, k)
		}
	}
	keys, next := PageAfter(under, req.PageToken, req.Limit)
	page := ListPage{NextPageToken: next}
	for _, k := range keys {
		page.Items = append(page.Items, ListItem{Key: k, Version: "v-" + k})
	}
	return page, nil
}

func TestPageAfter(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		name      string
		token     string
		limit     int
		want      []string
		wantToken string
	}{
		{"first page", "", 2, []string{"a", "b"}, "b"},
		{"middle page", "b", 2, []string{"c", "d"}, "d"},
		{"last page, exactly full", "c", 2, []string{"d", "e"}, ""},
		{"last page, short", "d", 2, []string{"e"}, ""},
		{"no limit", "", 0, keys, ""},
		{"token between keys", "bb", 2, []string{"c", "d"}, "d"},
		{"token after every key", "z", 2, []string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next := PageAfter(keys, tc.token, tc.limit)
			if !slices.Equal(got, tc.want) || next != tc.wantToken {
				t.Fatalf("PageAfter(%q, %d) = %v, %q; want %v, %q", tc.token, tc.limit, got, next, tc.want, tc.wantToken)
			}
		})
	}
}

func TestListAllFollowsPagesAndFiltersByName(t *testing.T) {
	var keys []string
	for i := range 25 {
		keys = append(keys, "app/"+strconv.Itoa(100+i))
	}
	keys = append(keys, "other/1")
	l := &sliceLister{keys: keys}
	items, err := ListAll(context.Background(), l, ListRequest{Prefix: "app/", Limit: 4}, regexp.MustCompile(`1[01][05]$`), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
		if it.Version != "v-"+it.Key {
			t.Errorf("key %q lost its version: %q", it.Key, it.Version)
		}
	}
	if want := []string{"app/100", "app/105", "app/110", "app/115"}; !slices.Equal(got, want) {
		t.Fatalf("ListAll = %v, want %v", got, want)
	}
	// 25 keys, 4 a page: 7 pages.
	if l.calls != 7 {
		t.Errorf("ListAll made %d calls, want 7 (one per page)", l.calls)
	}
}

func TestListAllRefusesMoreThanItsBound(t *testing.T) {
	l := &sliceLister{keys: []string{"a", "b", "c"}}
	_, err := ListAll(context.Background(), l, ListRequest{}, nil, 2)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig for a listing over its bound", err)
	}
}

// loopLister returns the same token again: a broken store.
type loopLister struct{}

func (loopLister) List(context.Context, ListRequest) (ListPage, error) {
	return ListPage{Items: []ListItem{{Key: "a"}}, NextPageToken: "again"}, nil
}

func TestListAllStopsAtARepeatedToken(t *testing.T) {
	_, err := ListAll(context.Background(), loopLister{}, ListRequest{}, nil, 0)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable for a token that repeats", err)
	}
}

func TestListAllRefusesAKeyOutsideThePrefix(t *testing.T) {
	_, err := ListAll(context.Background(), loopLister{}, ListRequest{Prefix: "b"}, nil, 0)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable for a key outside the prefix", err)
	}
}

func TestScopedListerSeesOnlyItsScopeWithoutThePrefix(t *testing.T) {
	l := &sliceLister{keys: []string{"team-a.db", "team-a.web", "team-b.db"}}
	c, err := NewClient("p", Ops{Reader: stubOps{}, Lister: l})
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := c.InScope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := scoped.AsLister()
	if err != nil {
		t.Fatal(err)
	}
	items, err := ListAll(context.Background(), sl, ListRequest{}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key)
	}
	if want := []string{"db", "web"}; !slices.Equal(got, want) {
		t.Fatalf("the scoped listing is %v, want %v", got, want)
	}
}

func TestHasTags(t *testing.T) {
	have := map[string]string{"team": "a", "env": "prod"}
	for _, tc := range []struct {
		want map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"team": "a"}, true},
		{map[string]string{"team": "a", "env": "prod"}, true},
		{map[string]string{"team": "b"}, false},
		{map[string]string{"owner": ""}, false},
	} {
		if got := HasTags(have, tc.want); got != tc.ok {
			t.Errorf("HasTags(%v) = %v, want %v", tc.want, got, tc.ok)
		}
	}
}
