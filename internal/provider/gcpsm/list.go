package gcpsm

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/api/iterator"

	"github.com/watchword-dev/watchword/internal/engine"
)

// defaultListLimit is the page size of a listing that asks for none.
const defaultListLimit = 500

// Secret Manager's labels: lower-case letters (and other scripts' letters
// without case), digits, '_' and '-'; a key starts with a letter.
var (
	labelKey   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValue = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// List lists the secrets of the store's project (or location) with
// ListSecrets, a page a call: their IDs and labels (a listing's tags),
// never a payload. The tags go to Secret Manager as a filter
// (labels.KEY=VALUE AND …); the filter syntax has no prefix match of a
// name, so the prefix is applied to each page, which may then hold fewer
// secrets than asked. A secret's listing does not tell its latest
// version, so the items carry none.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the secrets under %q in Secret Manager", req.Prefix)
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(req.Tags)) {
		if !labelKey.MatchString(k) || !labelValue.MatchString(req.Tags[k]) {
			return engine.ListPage{}, fmt.Errorf("%s: tag %q is not a label of Secret Manager (lower-case letters, digits, '_' and '-', the key starting with a letter); change it: %w", what, k, engine.ErrInvalidConfig)
		}
		terms = append(terms, fmt.Sprintf("labels.%s=%s", k, req.Tags[k]))
	}
	limit := req.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	it := c.api.ListSecrets(ctx, &secretmanagerpb.ListSecretsRequest{Parent: c.parent, Filter: strings.Join(terms, " AND ")})
	var secrets []*secretmanagerpb.Secret
	next, err := iterator.NewPager(it, limit, req.PageToken).NextPage(&secrets)
	if err != nil {
		return engine.ListPage{}, c.classify(what, err)
	}
	page := engine.ListPage{NextPageToken: next}
	prefix := c.parent + "/secrets/"
	for _, s := range secrets {
		id, ok := strings.CutPrefix(s.GetName(), prefix)
		if !ok || !strings.HasPrefix(id, req.Prefix) {
			continue
		}
		page.Items = append(page.Items, engine.ListItem{Key: id, Tags: s.GetLabels()})
	}
	return page, nil
}
