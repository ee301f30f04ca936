package awsps

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/watchword-dev/watchword/internal/engine"
)

// ListLimit is the most parameters one DescribeParameters call returns.
const ListLimit = 50

// List lists the parameters whose names begin with the prefix and that
// carry the request's tags, with DescribeParameters: metadata only, never
// a value (GetParametersByPath would decrypt every value of the page). One
// call a page; the prefix is a Name BeginsWith filter and each tag a
// tag:KEY Equals filter, so AWS does the filtering; each parameter comes
// with its version. DescribeParameters does not return tags, so the items
// carry none.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	in := &ssm.DescribeParametersInput{MaxResults: aws.Int32(ListLimit)}
	if req.Limit > 0 && req.Limit < ListLimit {
		in.MaxResults = aws.Int32(int32(req.Limit))
	}
	if req.PageToken != "" {
		in.NextToken = aws.String(req.PageToken)
	}
	if req.Prefix != "" {
		in.ParameterFilters = append(in.ParameterFilters, types.ParameterStringFilter{Key: aws.String("Name"), Option: aws.String("BeginsWith"), Values: []string{req.Prefix}})
	}
	keys := make([]string, 0, len(req.Tags))
	for k := range req.Tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		in.ParameterFilters = append(in.ParameterFilters, types.ParameterStringFilter{Key: aws.String("tag:" + k), Option: aws.String("Equals"), Values: []string{req.Tags[k]}})
	}
	out, err := c.api.DescribeParameters(ctx, in)
	if err != nil {
		return engine.ListPage{}, c.s.Classify(fmt.Sprintf("listing the parameters under %q in AWS Parameter Store", req.Prefix), err)
	}
	page := engine.ListPage{NextPageToken: aws.ToString(out.NextToken)}
	for _, md := range out.Parameters {
		name := aws.ToString(md.Name)
		// The filter did this; a page of another answer is not trusted.
		if !strings.HasPrefix(name, req.Prefix) {
			continue
		}
		page.Items = append(page.Items, engine.ListItem{Key: name, Version: strconv.FormatInt(md.Version, 10)})
	}
	return page, nil
}
