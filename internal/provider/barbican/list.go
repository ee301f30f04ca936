package barbican

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/watchword-dev/watchword/internal/engine"
)

const (
	// listFetch is the most secrets one request of a listing asks for:
	// Barbican's own largest page (max_limit_paging) by default.
	listFetch = 100
	// listFetches bounds the requests of one page of a listing, for a
	// name with more versions than they can hold.
	listFetches = 20
	// defaultListLimit is the names of a page that asks for none.
	defaultListLimit = 100
)

// List lists the names of the project's secrets that begin with the
// prefix, each once, with the version a read of it returns (its newest
// secret that holds a payload); a name none of whose secrets holds one is
// left out, and so are secrets without a name, which only their
// reference reads. Barbican keeps several secrets under one name (the
// versions of a key), so a listing reads secrets sorted by name, then
// newest first, and gives a name once all its secrets are read: the page
// token is the offset, in that order, of the first secret of the next
// name. The prefix is sent as Barbican's name filter (an SQL LIKE of the
// prefix and "%", whose wildcards can only widen it) and checked exactly
// here. A Barbican secret has no tags to list by.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the secrets under %q in Barbican", req.Prefix)
	if len(req.Tags) > 0 {
		return engine.ListPage{}, fmt.Errorf("%s: a Barbican secret has no tags to list by: %w", what, engine.ErrNotSupported)
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return engine.ListPage{}, fmt.Errorf("%s: page token %q is not one this provider gave: %w", what, req.PageToken, engine.ErrInvalidConfig)
		}
		offset = n
	}
	limit := req.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	opts := secrets.ListOpts{Sort: "name:asc,created:desc", Limit: listFetch}
	if req.Prefix != "" {
		opts.Name = nameFilter(req.Prefix + "%")
	}
	// Read until limit names are whole (another name follows the last of
	// them) or no secret is left.
	var rows []secrets.Secret
	end := false
	for fetches := 0; !end && names(rows) <= limit; fetches++ {
		if fetches == listFetches {
			if names(rows) > 1 {
				break
			}
			return engine.ListPage{}, fmt.Errorf("%s: name %q has more than %d secrets: %w", what, rows[0].Name, listFetch*listFetches, engine.ErrUnavailable)
		}
		opts.Offset = offset + len(rows)
		got, err := c.fetch(ctx, opts)
		if err != nil {
			return engine.ListPage{}, classify(what, err)
		}
		rows = append(rows, got...)
		end = len(got) < listFetch
	}
	var page engine.ListPage
	for i, emitted := 0, 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Name == rows[i].Name {
			j++
		}
		if emitted == limit || (j == len(rows) && !end) {
			page.NextPageToken = strconv.Itoa(offset + i)
			break
		}
		emitted++
		if name := rows[i].Name; name != "" && strings.HasPrefix(name, req.Prefix) {
			if s := current(rows[i:j]); s != nil {
				page.Items = append(page.Items, engine.ListItem{Key: name, Version: version(s)})
			}
		}
		i = j
	}
	return page, nil
}

// names counts the runs of one name in rows.
func names(rows []secrets.Secret) int {
	n := 0
	for i := range rows {
		if i == 0 || rows[i].Name != rows[i-1].Name {
			n++
		}
	}
	return n
}

// fetch reads one request's secrets, without following Barbican's next
// link.
func (c *Client) fetch(ctx context.Context, opts secrets.ListOpts) ([]secrets.Secret, error) {
	var out []secrets.Secret
	err := secrets.List(c.sc, opts).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		list, err := secrets.ExtractSecrets(page)
		if err != nil {
			return false, err
		}
		out = list
		return false, nil
	})
	return out, err
}
