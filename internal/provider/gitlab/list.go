package gitlab

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	glapi "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/watchword-dev/watchword/internal/engine"
)

// maxPerPage is the largest page GitLab's offset pagination gives.
const maxPerPage = 100

// List lists the keys of the variables of the project and the groups, in
// the order they are read, a page of GitLab's at a time (never a value,
// and no version: GitLab lists values, which the provider does not keep).
// With an environment, only the variables of that scope and of "*" are
// listed. A key held by the project and a group, or in two scopes, is
// listed once a page, and may be listed again on another page; a read of
// it returns the variable GetSecret picks. GitLab variables have no tags.
//
// The page token is the source's index and GitLab's next page number.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the GitLab variables under %q", req.Prefix)
	if len(req.Tags) > 0 {
		return engine.ListPage{}, fmt.Errorf("%s: GitLab variables have no tags: %w", what, engine.ErrNotSupported)
	}
	srcs, err := c.sources(ctx)
	if err != nil {
		return engine.ListPage{}, err
	}
	idx, page := 0, int64(1)
	if req.PageToken != "" {
		a, b, ok := strings.Cut(req.PageToken, ":")
		i, ierr := strconv.Atoi(a)
		p, perr := strconv.ParseInt(b, 10, 64)
		if !ok || ierr != nil || perr != nil || i < 0 || i >= len(srcs) || p < 1 {
			return engine.ListPage{}, fmt.Errorf("%s: page token %q is not one this provider gave: %w", what, req.PageToken, engine.ErrInvalidConfig)
		}
		idx, page = i, p
	}
	per := int64(maxPerPage)
	if req.Limit > 0 && req.Limit < maxPerPage {
		per = int64(req.Limit)
	}
	if len(srcs) == 0 {
		return engine.ListPage{}, nil
	}
	src := srcs[idx]
	opts := glapi.ListOptions{Page: page, PerPage: per}
	var (
		vars []variable
		resp *glapi.Response
	)
	if src.group {
		var gv []*glapi.GroupVariable
		gv, resp, err = c.api.GroupVariables.ListVariables(src.id, &glapi.ListGroupVariablesOptions{ListOptions: opts}, glapi.WithContext(ctx))
		for _, v := range gv {
			vars = append(vars, variable{Key: v.Key, Scope: v.EnvironmentScope})
		}
	} else {
		var pv []*glapi.ProjectVariable
		pv, resp, err = c.api.ProjectVariables.ListVariables(src.id, &glapi.ListProjectVariablesOptions{ListOptions: opts}, glapi.WithContext(ctx))
		for _, v := range pv {
			vars = append(vars, variable{Key: v.Key, Scope: v.EnvironmentScope})
		}
	}
	if err != nil {
		return engine.ListPage{}, c.classify(fmt.Sprintf("%s of %s", what, src), resp, err)
	}
	var out engine.ListPage
	seen := map[string]bool{}
	for _, v := range vars {
		if seen[v.Key] || !strings.HasPrefix(v.Key, req.Prefix) {
			continue
		}
		if c.env != "" && v.Scope != c.env && v.Scope != "*" {
			continue
		}
		seen[v.Key] = true
		out.Items = append(out.Items, engine.ListItem{Key: v.Key})
	}
	switch {
	case resp.NextPage > 0:
		out.NextPageToken = fmt.Sprintf("%d:%d", idx, resp.NextPage)
	case idx+1 < len(srcs):
		out.NextPageToken = fmt.Sprintf("%d:1", idx+1)
	}
	return out, nil
}
