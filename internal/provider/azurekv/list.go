package azurekv

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// maxListItems bounds the secrets one listing call of Limit zero returns:
// Key Vault answers 25 a request.
const maxListItems = 5000

// List lists the vault's secrets with the SDK's secret listing (their
// names, and the tags of their current versions; never a value), keeping
// those whose names begin with the prefix and that carry the request's
// tags; Key Vault filters by neither. A disabled secret, which a read
// refuses, is left out. The listing carries no version of a secret.
//
// Key Vault pages by a next link that the SDK keeps to itself, so a page
// cannot be resumed where another call left it: a listing with Limit zero
// reads every page in one call (up to 5000 secrets; then the token says
// how many to skip), and a listing with a Limit skips, on each call, the
// secrets earlier pages gave. Use Limit zero: a limit costs a read of the
// pages before each page.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the secrets under %q of Key Vault %s", req.Prefix, c.vault)
	skip := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.PageToken, "skip-"))
		if err != nil || n < 0 || !strings.HasPrefix(req.PageToken, "skip-") {
			return engine.ListPage{}, fmt.Errorf("%s: page token %q is not one this provider gave: %w", what, req.PageToken, engine.ErrInvalidConfig)
		}
		skip = n
	}
	limit := req.Limit
	if limit <= 0 {
		limit = maxListItems
	}
	api := c.sdk()
	pager := api.NewListSecretPropertiesPager(nil)
	var page engine.ListPage
	seen := 0 // secrets of the listing passed, given or skipped
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			return engine.ListPage{}, c.fail(ctx, api, what, err)
		}
		for i, sp := range p.Value {
			if sp == nil || sp.ID == nil {
				continue
			}
			seen++
			if seen <= skip {
				continue
			}
			name := sp.ID.Name()
			tags := make(map[string]string, len(sp.Tags))
			for k, v := range sp.Tags {
				if v != nil {
					tags[k] = *v
				}
			}
			disabled := sp.Attributes != nil && sp.Attributes.Enabled != nil && !*sp.Attributes.Enabled
			if strings.HasPrefix(name, req.Prefix) && !disabled && engine.HasTags(tags, req.Tags) {
				page.Items = append(page.Items, engine.ListItem{Key: name, Tags: tags})
			}
			if seen-skip == limit {
				if pager.More() || i < len(p.Value)-1 {
					page.NextPageToken = "skip-" + strconv.Itoa(seen)
				}
				return page, nil
			}
		}
	}
	return page, nil
}
