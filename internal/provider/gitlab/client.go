package gitlab

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	glapi "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// Client reads the variables of one store. It is safe for concurrent use.
type Client struct {
	api      *glapi.Client
	hc       *http.Client
	instance string
	project  string
	// groups are the store's groupIDs in the order they are read: the
	// last given first.
	groups  []string
	inherit bool
	env     string
	// key keys the versions' digests: the access token, which reads the
	// values anyway.
	key []byte
	who string

	mu        sync.Mutex
	inherited []string // the project's groups, nearest first, once read
	haveInh   bool
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// source is a project or a group whose variables are read.
type source struct {
	group bool
	id    string
}

func (s source) String() string {
	if s.group {
		return fmt.Sprintf("group %q", s.id)
	}
	return fmt.Sprintf("project %q", s.id)
}

// sources are where a key is looked for, in order: the project, the
// groups of groupIDs (the last given first), and the project's own groups
// (nearest first) with inheritFromGroups.
func (c *Client) sources(ctx context.Context) ([]source, error) {
	var out []source
	if c.project != "" {
		out = append(out, source{id: c.project})
	}
	for _, g := range c.groups {
		out = append(out, source{group: true, id: g})
	}
	if c.inherit {
		groups, err := c.projectGroups(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			out = append(out, source{group: true, id: g})
		}
	}
	return out, nil
}

// projectGroups reads the groups of the project once: its group and that
// group's ancestors, which GitLab lists in no documented order; a group's
// full path begins with its parent's, so the longest path is the nearest.
func (c *Client) projectGroups(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	if c.haveInh {
		defer c.mu.Unlock()
		return c.inherited, nil
	}
	c.mu.Unlock()
	what := fmt.Sprintf("listing the groups of project %q (inheritFromGroups)", c.project)
	groups, resp, err := c.api.Projects.ListProjectsGroups(c.project, &glapi.ListProjectGroupOptions{ListOptions: glapi.ListOptions{PerPage: 100}}, glapi.WithContext(ctx))
	if err != nil {
		return nil, c.classify(what, resp, err)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].FullPath) > len(groups[j].FullPath) })
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, strconv.FormatInt(g.ID, 10))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inherited, c.haveInh = ids, true
	return ids, nil
}

var keyShape = regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`)

// checkKey refuses a key GitLab cannot hold, before any call.
func checkKey(what, key string) error {
	if !keyShape.MatchString(key) {
		return failure.Terminalf(failure.RemoteNameInvalid, "%s: a GitLab variable key has 1 to 255 letters, digits and '_'", what)
	}
	return nil
}

// variable is what the provider uses of a project or group variable.
type variable struct {
	Key, Value, Scope, Type, Description string
	Hidden                               bool
}

// get reads key of src in scope ("": any one scope). It returns nil and
// no error when there is no such variable.
func (c *Client) get(ctx context.Context, src source, key, scope, what string) (*variable, error) {
	var filter *glapi.VariableFilter
	if scope != "" {
		filter = &glapi.VariableFilter{EnvironmentScope: scope}
	}
	var (
		v    *variable
		resp *glapi.Response
		err  error
	)
	if src.group {
		var gv *glapi.GroupVariable
		gv, resp, err = c.api.GroupVariables.GetVariable(src.id, key, &glapi.GetGroupVariableOptions{Filter: filter}, glapi.WithContext(ctx))
		if gv != nil {
			v = &variable{Key: gv.Key, Value: gv.Value, Scope: gv.EnvironmentScope, Type: string(gv.VariableType), Description: gv.Description, Hidden: gv.Hidden}
		}
	} else {
		var pv *glapi.ProjectVariable
		pv, resp, err = c.api.ProjectVariables.GetVariable(src.id, key, &glapi.GetProjectVariableOptions{Filter: filter}, glapi.WithContext(ctx))
		if pv != nil {
			v = &variable{Key: pv.Key, Value: pv.Value, Scope: pv.EnvironmentScope, Type: string(pv.VariableType), Description: pv.Description, Hidden: pv.Hidden}
		}
	}
	switch {
	case err == nil:
		return v, nil
	case statusOf(resp, err) == http.StatusNotFound:
		return nil, nil
	case statusOf(resp, err) == http.StatusConflict:
		return nil, fmt.Errorf("%s: %s holds variable %q in several environment scopes (HTTP 409): set gitlab.environment to the scope to read: %w",
			what, src, key, engine.ErrInvalidConfig)
	}
	return nil, c.classify(what, resp, err)
}

// lookup reads key of src with the store's environment: the variable of
// that scope, else the one of scope "*"; without an environment, the
// variable of any one scope.
func (c *Client) lookup(ctx context.Context, src source, key, what string) (*variable, error) {
	if c.env == "" {
		return c.get(ctx, src, key, "", what)
	}
	v, err := c.get(ctx, src, key, c.env, what)
	if v != nil || err != nil || c.env == "*" {
		return v, err
	}
	return c.get(ctx, src, key, "*", what)
}

// version is the digest of what a read found: where, in which scope, of
// which type, and the value. It is an HMAC keyed with the access token.
func (c *Client) version(src source, v *variable) string {
	d := engine.NewKeyedDigest(c.key)
	d.Add("watchword-gitlab-variable-v1", src.String(), v.Key, v.Scope, v.Type, v.Value)
	sum := d.Sum()
	return hex.EncodeToString(sum[:12])
}

// GetSecret reads the variable of the key: from the project, else from
// the groups in order. A version, when asked for, must be the current
// one: GitLab keeps no other.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	what := fmt.Sprintf("reading GitLab variable %q", ref.Key)
	if err := checkKey(what, ref.Key); err != nil {
		return engine.Object{}, err
	}
	srcs, err := c.sources(ctx)
	if err != nil {
		return engine.Object{}, err
	}
	for _, src := range srcs {
		v, lerr := c.lookup(ctx, src, ref.Key, what+" of "+src.String())
		if lerr != nil {
			return engine.Object{}, lerr
		}
		if v == nil {
			continue
		}
		if v.Hidden {
			return engine.Object{}, fmt.Errorf("%s: the variable of %s (scope %q) is hidden, and GitLab never returns a hidden variable's value: make it visible, or read another: %w",
				what, src, v.Scope, engine.ErrPermissionDenied)
		}
		version := c.version(src, v)
		if ref.Version != "" && ref.Version != version {
			return engine.Object{}, fmt.Errorf("%s: version %q is not the current one, and GitLab keeps no older values of a variable: %w", what, ref.Version, engine.ErrNotFound)
		}
		return engine.TextObject(version, []byte(v.Value)), nil
	}
	return engine.Object{}, fmt.Errorf("%s: no variable of that key%s in %s (or the token cannot see them): %w", what, c.scopeText(), describe(srcs), engine.ErrNotFound)
}

func (c *Client) scopeText() string {
	if c.env == "" {
		return ""
	}
	return fmt.Sprintf(" in environment scope %q or \"*\"", c.env)
}

func describe(srcs []source) string {
	parts := make([]string, 0, len(srcs))
	for _, s := range srcs {
		parts = append(parts, s.String())
	}
	if len(parts) == 0 {
		return "no project or group"
	}
	return strings.Join(parts, ", ")
}

// statusOf is the HTTP status of a failed call, 0 when none came.
func statusOf(resp *glapi.Response, err error) int {
	if resp != nil && resp.Response != nil {
		return resp.StatusCode
	}
	var er *glapi.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode
	}
	return 0
}
