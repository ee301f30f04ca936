package alibaba

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	kms "github.com/alibabacloud-go/kms-20160120/v3/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/watchword-dev/watchword/internal/engine"
)

// List lists the store's secrets with ListSecrets, a page a call (up to
// 100; the token is the next page's number), with their tags, never a
// value. KMS's filters match whole names and whole tags, and cap what
// they can find, so the prefix and the tags are applied to each page
// here: a page may hold fewer secrets than asked. Secrets scheduled for
// deletion, which a read refuses, are left out. The listing carries no
// version of a secret.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the secrets under %q in KMS", req.Prefix)
	number := 1
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 1 {
			return engine.ListPage{}, fmt.Errorf("%s: page token %q is not one this provider gave: %w", what, req.PageToken, engine.ErrInvalidConfig)
		}
		number = n
	}
	size := pageSize
	if req.Limit > 0 && req.Limit < pageSize {
		size = req.Limit
	}
	in := &kms.ListSecretsRequest{FetchTags: tea.String("true"), PageNumber: tea.Int32(int32(number)), PageSize: tea.Int32(int32(size))}
	resp, err := kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.ListSecretsResponse, error) {
		return c.api.ListSecretsWithOptions(in, rt)
	})
	if err != nil {
		return engine.ListPage{}, c.classify(what, err)
	}
	var page engine.ListPage
	if resp.Body == nil {
		return page, nil
	}
	var list []*kms.ListSecretsResponseBodySecretListSecret
	if resp.Body.SecretList != nil {
		list = resp.Body.SecretList.Secret
	}
	for _, s := range list {
		if s == nil || tea.StringValue(s.PlannedDeleteTime) != "" {
			continue
		}
		name := tea.StringValue(s.SecretName)
		tags := map[string]string{}
		if s.Tags != nil {
			for _, t := range s.Tags.Tag {
				if t != nil {
					tags[tea.StringValue(t.TagKey)] = tea.StringValue(t.TagValue)
				}
			}
		}
		if strings.HasPrefix(name, req.Prefix) && engine.HasTags(tags, req.Tags) {
			page.Items = append(page.Items, engine.ListItem{Key: name, Tags: tags})
		}
	}
	if total := resp.Body.TotalCount; total != nil && len(list) > 0 && number*size < int(*total) {
		page.NextPageToken = strconv.Itoa(number + 1)
	}
	return page, nil
}
