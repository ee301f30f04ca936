package awssm

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/watchword-dev/watchword/internal/engine"
)

// ListLimit is the most secrets one ListSecrets call returns.
const ListLimit = 100

// filterValue is what AWS accepts as a ListSecrets filter value, without
// the leading '!' that would negate it: a prefix or tag key with other
// characters is filtered here instead.
var filterValue = regexp.MustCompile(`^[a-zA-Z0-9 :_@/+=.-]{1,512}$`)

// List lists the secrets whose names begin with the prefix and that carry
// the request's tags, with ListSecrets: one call a page, with each
// secret's AWSCURRENT version and tags, never a value. The prefix, and the
// first tag's key, are pushed down as the name and tag-key filters (both
// case-sensitive prefix matches) where AWS accepts them as filter values;
// the exact prefix and every tag are checked here, so a page may hold
// fewer secrets than asked. Secrets scheduled for deletion are not
// listed.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	in := &secretsmanager.ListSecretsInput{MaxResults: aws.Int32(ListLimit), SortOrder: types.SortOrderTypeAsc}
	if req.Limit > 0 && req.Limit < ListLimit {
		in.MaxResults = aws.Int32(int32(req.Limit))
	}
	if req.PageToken != "" {
		in.NextToken = aws.String(req.PageToken)
	}
	if filterValue.MatchString(req.Prefix) {
		in.Filters = append(in.Filters, types.Filter{Key: types.FilterNameStringTypeName, Values: []string{req.Prefix}})
	}
	if keys := sortedKeys(req.Tags); len(keys) > 0 && filterValue.MatchString(keys[0]) {
		in.Filters = append(in.Filters, types.Filter{Key: types.FilterNameStringTypeTagKey, Values: []string{keys[0]}})
	}
	out, err := c.api.ListSecrets(ctx, in)
	if err != nil {
		return engine.ListPage{}, c.s.Classify(fmt.Sprintf("listing the secrets under %q in AWS Secrets Manager", req.Prefix), err)
	}
	page := engine.ListPage{NextPageToken: aws.ToString(out.NextToken)}
	for _, e := range out.SecretList {
		name := aws.ToString(e.Name)
		if e.DeletedDate != nil || !strings.HasPrefix(name, req.Prefix) {
			continue
		}
		tags := make(map[string]string, len(e.Tags))
		for _, t := range e.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if !engine.HasTags(tags, req.Tags) {
			continue
		}
		page.Items = append(page.Items, engine.ListItem{Key: name, Version: current(e.SecretVersionsToStages), Tags: tags})
	}
	return page, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
