package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// maxListPages bounds the pages a list check follows: the checks seed a
// handful of keys, so a listing that takes more has tokens that never end.
const maxListPages = 50

// listPrefix is the key prefix of the keys a list check seeds under name
// (such as "list-agree-"), or "" with a skip when the harness's Key does
// not keep a name's prefix as a key prefix.
func (s *suite) listPrefix(name string) string {
	s.t.Helper()
	prefix := s.key(name)
	if probe := s.key(name + "x"); !strings.HasPrefix(probe, prefix) {
		s.t.Skipf("store %q: the harness's Key turns %q into %q and %q into %q, which does not start with it: the list checks need keys that keep a common prefix", s.h.Name, name, prefix, name+"x", probe)
	}
	return prefix
}

// listAll follows the pages of a listing, checking each page's size, and
// returns the items in order. It fails the check when the listing fails
// or its pages never end.
func (s *suite) listAll(req engine.ListRequest, what string) []engine.ListItem {
	s.t.Helper()
	var out []engine.ListItem
	for pages := 0; ; pages++ {
		if pages == maxListPages {
			s.t.Fatalf("store %q: %s: expected the listing to end within %d pages, the store still returns a next page token", s.h.Name, what, maxListPages)
		}
		ctx, cancel := s.ctx()
		page, err := s.h.Ops.Lister.List(ctx, req)
		cancel()
		if err != nil {
			s.t.Fatalf("store %q: %s (page %d): expected the listing to succeed, the store returned: %v", s.h.Name, what, pages+1, err)
		}
		if req.Limit > 0 && len(page.Items) > req.Limit {
			s.t.Errorf("store %q: %s (page %d): expected at most %d items (the limit), the store returned %d", s.h.Name, what, pages+1, req.Limit, len(page.Items))
		}
		out = append(out, page.Items...)
		if page.NextPageToken == "" {
			return out
		}
		if page.NextPageToken == req.PageToken {
			s.t.Fatalf("store %q: %s (page %d): the store returned the page token it was given; expected the next page's", s.h.Name, what, pages+1)
		}
		req.PageToken = page.NextPageToken
	}
}

// expectListed fails the check unless items name exactly the keys of want,
// each once.
func (s *suite) expectListed(items []engine.ListItem, want []string, what string) {
	s.t.Helper()
	seen := map[string]int{}
	var got []string
	for _, it := range items {
		seen[it.Key]++
		if seen[it.Key] == 2 {
			s.t.Errorf("store %q: %s: key %q was listed more than once", s.h.Name, what, it.Key)
		}
		if seen[it.Key] == 1 {
			got = append(got, it.Key)
		}
	}
	var missing, extra []string
	for _, k := range want {
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			extra = append(extra, k)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		s.t.Errorf("store %q: %s: expected keys %s, keys missing: %s, keys not expected: %s", s.h.Name, what, list(want), list(missing), list(extra))
	}
}

// listAgreesWithReads: the keys listed under a prefix are exactly those
// seeded there; each reads by its listed key, with the version the
// listing gave (where it gives one; the current one of a key seeded
// twice), and no listed tag holds a value.
func (s *suite) listAgreesWithReads() {
	prefix := s.listPrefix("list-agree-")
	var keys []string
	written := map[string]map[string][]byte{}
	for _, n := range []string{"a", "b", "c"} {
		key := s.key("list-agree-" + n)
		written[key] = fields("list-agree-" + n)
		s.seed(key, written[key])
		keys = append(keys, key)
	}
	// A key replaced after its first version is listed at its current
	// one.
	written[keys[0]] = fields("list-agree-replaced")
	s.seed(keys[0], written[keys[0]])
	items := s.listAll(engine.ListRequest{Prefix: prefix}, fmt.Sprintf("listing the keys under %q", prefix))
	s.expectListed(items, keys, fmt.Sprintf("listing the keys under %q after seeding three there", prefix))
	for _, it := range items {
		if _, ok := written[it.Key]; !ok {
			continue
		}
		obj, err := s.get(it.Key, "")
		if err != nil {
			s.t.Errorf("store %q: reading listed key %q: expected the read to succeed, the store returned: %v", s.h.Name, it.Key, err)
			continue
		}
		s.sameFields(it.Key, obj, written[it.Key], "read by its listed key")
		if it.Version != "" && it.Version != obj.Version {
			s.t.Errorf("store %q: key %q: expected the listed version %q to be the version a read returns, the read returned %q", s.h.Name, it.Key, it.Version, obj.Version)
		}
		for tag, v := range it.Tags {
			for _, f := range written[it.Key] {
				if strings.Contains(v, string(f)) || strings.Contains(tag, string(f)) {
					s.t.Errorf("store %q: key %q: listed tag %q holds a field's value: a listing never returns values", s.h.Name, it.Key, tag)
				}
			}
		}
	}
}

// listPages: a listing with a small limit returns pages of at most that
// many items, which together name every key once.
func (s *suite) listPages() {
	prefix := s.listPrefix("list-page-")
	var keys []string
	for i := range 5 {
		key := s.key(fmt.Sprintf("list-page-%d", i))
		s.seed(key, fields(fmt.Sprintf("list-page-%d", i)))
		keys = append(keys, key)
	}
	items := s.listAll(engine.ListRequest{Prefix: prefix, Limit: 2}, fmt.Sprintf("listing the keys under %q two at a time", prefix))
	s.expectListed(items, keys, fmt.Sprintf("listing the keys under %q two at a time, over every page", prefix))
}

// listOddNames: keys with characters other than letters, digits and '-'
// (dots, underscores, '@', '+', '=', spaces, '%', nested paths, upper
// case), as far as the store can hold them, are listed as they are and
// read by their listed key. A name the store refuses to seed is left out.
func (s *suite) listOddNames() {
	prefix := s.listPrefix("list-odd-")
	var keys, refused []string
	for _, n := range []string{"dots.in.name", "under_score", "at@sign", "plus+equals=", "space in name", "percent%41", "nested/deep/name", "Upper-Case", "colon:name", "tilde~name"} {
		key := s.key("list-odd-" + n)
		if err := s.seedErr(key, fields("odd")); err != nil {
			refused = append(refused, n)
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		s.t.Skipf("store %q: the harness could seed none of the odd names (%s)", s.h.Name, strings.Join(refused, ", "))
	}
	items := s.listAll(engine.ListRequest{Prefix: prefix}, fmt.Sprintf("listing keys with odd characters under %q", prefix))
	s.expectListed(items, keys, fmt.Sprintf("listing keys with odd characters under %q", prefix))
	for _, it := range items {
		if !slices.Contains(keys, it.Key) {
			continue
		}
		if _, err := s.get(it.Key, ""); err != nil {
			s.t.Errorf("store %q: reading listed key %q: expected the read to succeed, the store returned: %v", s.h.Name, it.Key, err)
		}
	}
}

// listEmptyPrefix: a prefix that no key has lists nothing, without an
// error.
func (s *suite) listEmptyPrefix() {
	prefix := s.listPrefix("list-nothing-here-")
	items := s.listAll(engine.ListRequest{Prefix: prefix}, fmt.Sprintf("listing the keys under %q, which holds none", prefix))
	s.expectListed(items, nil, fmt.Sprintf("listing the keys under %q, which holds none", prefix))
}
