package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// Lister lists the objects of a store (CanList): their keys, with their
// versions and tags where the store tells them in the same answer. It
// never returns a value.
//
// List returns one page. The caller passes NextPageToken back as
// PageToken until it is empty; a page may hold fewer items than Limit,
// even none, while NextPageToken is set (a store that filters after
// reading a page). The token is the store's own and opaque to the caller.
// Keys are those GetSecret reads: a listed key read at once finds its
// object (or ErrNotFound, if it went in between).
type Lister interface {
	List(ctx context.Context, req ListRequest) (ListPage, error)
}

// ListRequest selects the objects of one page of a listing.
type ListRequest struct {
	// Prefix keeps the keys that begin with it (a parent path of a path
	// store, such as "app/"); empty: every key. A store pushes it down
	// where its API can filter, and filters itself otherwise.
	Prefix string
	// Tags keeps the objects that carry every one of these tags with
	// these values (labels of a Kubernetes Secret, tags of an AWS
	// secret, custom metadata of a Vault KV v2 secret). A store without
	// tags refuses a request that sets them, with an error wrapping
	// ErrNotSupported.
	Tags map[string]string
	// PageToken is the NextPageToken of the previous page; empty for the
	// first page.
	PageToken string
	// Limit is the most items the page holds; zero is the store's own
	// page size. A store may return fewer.
	Limit int
}

// ListPage is one page of a listing.
type ListPage struct {
	// Items are the objects of the page, in the store's order.
	Items []ListItem
	// NextPageToken asks for the next page; empty on the last page.
	NextPageToken string
}

// ListItem is one listed object: never its value.
type ListItem struct {
	// Key is what GetSecret reads the object by.
	Key string
	// Version is the object's current version, where the listing tells
	// it (so that a caller reads only the objects whose version changed);
	// empty when it does not, or the store has no versions.
	Version string
	// Tags are the object's tags where the listing tells them; nil
	// otherwise.
	Tags map[string]string
}

// TooManyError is a listing that matched more keys than its caller can
// use. It wraps ErrInvalidConfig: what asked for the listing must ask for
// less.
type TooManyError struct {
	Prefix string
	Max    int
	// Pages: the listing took more than Max pages (MaxListPages), rather
	// than matching more than Max keys.
	Pages bool
}

func (e *TooManyError) Error() string {
	if e.Pages {
		return fmt.Sprintf("listing keys under %q took more than %d pages; narrow the path", e.Prefix, e.Max)
	}
	return fmt.Sprintf("listing keys under %q matched more than %d; narrow the path or the name", e.Prefix, e.Max)
}

// Unwrap is the error's class.
func (e *TooManyError) Unwrap() error { return ErrInvalidConfig }

// MaxListPages bounds the pages ListAll reads in one listing, so that a
// store whose tokens never end cannot hold a caller forever.
const MaxListPages = 1000

// ListAll reads every page of a listing and keeps the items whose key
// matches name (nil: every item), in the order the store gave them. It
// stops with an error after maxItems matching items (zero: no bound), or
// MaxListPages pages, so that a caller's budget is never spent on a
// listing larger than it can use. A key seen twice is kept once.
func ListAll(ctx context.Context, l Lister, req ListRequest, name *regexp.Regexp, maxItems int) ([]ListItem, error) {
	var out []ListItem
	seen := map[string]bool{}
	req.PageToken = ""
	for pages := 0; ; pages++ {
		if pages == MaxListPages {
			return nil, &TooManyError{Prefix: req.Prefix, Max: MaxListPages, Pages: true}
		}
		page, err := l.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if !strings.HasPrefix(it.Key, req.Prefix) {
				return nil, fmt.Errorf("listing keys under %q returned key %q, which is not under it: %w", req.Prefix, it.Key, ErrUnavailable)
			}
			if seen[it.Key] || (name != nil && !name.MatchString(it.Key)) {
				continue
			}
			seen[it.Key] = true
			out = append(out, it)
			if maxItems > 0 && len(out) > maxItems {
				return nil, &TooManyError{Prefix: req.Prefix, Max: maxItems}
			}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		if page.NextPageToken == req.PageToken {
			return nil, fmt.Errorf("listing keys under %q: the store returned the same page token twice: %w", req.Prefix, ErrUnavailable)
		}
		req.PageToken = page.NextPageToken
	}
}

// HasTags tells whether have carries every tag of want with its value.
func HasTags(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// PageAfter is a page of keys for a store that lists all its keys in one
// answer (a Vault folder, the fake's spec): sorted keys after the token
// (the last key of the previous page), at most limit of them (zero: all).
// The next token is the page's last key when keys remain after it.
func PageAfter(sorted []string, token string, limit int) (page []string, next string) {
	start := 0
	if token != "" {
		for start < len(sorted) && sorted[start] <= token {
			start++
		}
	}
	end := len(sorted)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	page = sorted[start:end]
	if end < len(sorted) && len(page) > 0 {
		next = page[len(page)-1]
	}
	return page, next
}

type timedLister struct{ inner Lister }

func (t timedLister) List(ctx context.Context, req ListRequest) (ListPage, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.List(ctx, req)
}

// prefixLister lists the keys under a scope's prefix, and hands them out
// without it: a scoped client sees the keys it reads by.
type prefixLister struct {
	inner  Lister
	prefix string
}

func (p prefixLister) List(ctx context.Context, req ListRequest) (ListPage, error) {
	req.Prefix = p.prefix + req.Prefix
	page, err := p.inner.List(ctx, req)
	if err != nil {
		return ListPage{}, err
	}
	items := make([]ListItem, 0, len(page.Items))
	for _, it := range page.Items {
		key, ok := strings.CutPrefix(it.Key, p.prefix)
		if !ok {
			continue
		}
		it.Key = key
		items = append(items, it)
	}
	page.Items = items
	return page, nil
}
