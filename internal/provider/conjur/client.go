package conjur

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cyberark/conjur-api-go/conjurapi"
	"github.com/cyberark/conjur-api-go/conjurapi/authn"
	"github.com/cyberark/conjur-api-go/conjurapi/response"

	"github.com/watchword-dev/watchword/internal/engine"
)

// listPage is how many resources a page of a listing asks Conjur for
// when the caller sets no limit.
const listPage = 100

// Client is a Conjur client of one store. It is safe for concurrent use.
type Client struct {
	api     *conjurapi.Client // builds requests; never sends one
	http    *http.Client
	url     string
	account string
	who     string // who authenticates, for messages: never a credential
	// authenticate builds the authentication request.
	authenticate func(api *conjurapi.Client) (*http.Request, error)

	// sem serializes authentication (one at a time, and a caller whose
	// context ends stops waiting); token and raw are read under it.
	sem   chan struct{}
	token *authn.AuthnToken
}

// accessToken returns a valid access token: the one held, unless the SDK
// says it is due for renewal (at 85% of its life, or 5 of its 8 minutes)
// or it is refused, which is authenticated again.
func (c *Client) accessToken(ctx context.Context, refused []byte) ([]byte, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, c.classify("authenticating to Conjur", ctx.Err())
	}
	defer func() { <-c.sem }()
	if c.token != nil && !c.token.ShouldRefresh() && (refused == nil || string(c.token.Raw()) != string(refused)) {
		return c.token.Raw(), nil
	}
	what := "authenticating to Conjur as " + c.who
	req, err := c.authenticate(c.api)
	if err != nil {
		return nil, fmt.Errorf("%s: the SDK could not build the request (the login or host ID cannot be a path segment): %w", what, engine.ErrInvalidConfig)
	}
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		return nil, c.classify(what, err)
	}
	after := retryAfter(resp)
	raw, err := response.DataResponse(resp)
	if err != nil {
		return nil, c.throttled(what, after, c.classifyAuth(what, err))
	}
	tok, err := authn.NewToken(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: Conjur's answer is not an access token: %w", what, engine.ErrUnavailable)
	}
	c.token = tok
	return tok.Raw(), nil
}

// do sends a request the SDK built, with an access token; a token Conjur
// refuses (expired early, or revoked) is replaced once.
func (c *Client) do(ctx context.Context, what string, build func() (*http.Request, error)) ([]byte, error) {
	var refused []byte
	for attempt := 0; ; attempt++ {
		tok, err := c.accessToken(ctx, refused)
		if err != nil {
			return nil, err
		}
		req, err := build()
		if err != nil {
			return nil, fmt.Errorf("%s: the SDK could not build the request: %w", what, engine.ErrInvalidConfig)
		}
		req = req.WithContext(ctx)
		// Conjur's header form of an access token; the SDK sets it only
		// in its own client's send, which is not safe for concurrent use.
		req.Header.Set("Authorization", `Token token="`+base64.StdEncoding.EncodeToString(tok)+`"`)
		req.Header.Set(conjurapi.ConjurSourceHeader, c.api.GetTelemetryHeader())
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, c.classify(what, err)
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			refused = tok
			continue
		}
		after := retryAfter(resp)
		data, err := response.DataResponse(resp)
		if err != nil {
			return nil, c.throttled(what, after, c.classify(what, err))
		}
		return data, nil
	}
}

// checkKey refuses an ID that cannot be one path segment.
func checkKey(what, key string) error {
	if key == "" || key == "." || key == ".." {
		return fmt.Errorf("%s: %q is not a variable ID: %w", what, key, engine.ErrNotFound)
	}
	return nil
}

func (c *Client) fullID(key string) string { return c.account + ":variable:" + key }

// GetSecret reads a variable's value: the version asked, or the current
// one, whose number it learns first from the variable's resource, so that
// the value and the version read belong together. A value that is a JSON
// object also gives its members as fields.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	what := fmt.Sprintf("reading variable %q of account %q", ref.Key, c.account)
	if err := checkKey(what, ref.Key); err != nil {
		return engine.Object{}, err
	}
	version := ref.Version
	if version == "" {
		v, err := c.currentVersion(ctx, what, ref.Key)
		if err != nil {
			return engine.Object{}, err
		}
		version = v
	}
	n, err := strconv.Atoi(version)
	if err != nil || n < 1 {
		return engine.Object{}, fmt.Errorf("%s: version %q is not a Conjur version (a number from 1): %w", what, version, engine.ErrNotFound)
	}
	what = fmt.Sprintf("%s at version %d", what, n)
	data, err := c.do(ctx, what, func() (*http.Request, error) {
		return c.api.RetrieveSecretWithVersionRequest(c.fullID(ref.Key), n)
	})
	if err != nil {
		return engine.Object{}, err
	}
	return engine.TextObject(version, data), nil
}

// resource is what Conjur tells of a variable: its ID, annotations and
// the versions of the values it keeps.
type resource struct {
	ID          string       `json:"id"`
	Annotations []annotation `json:"annotations"`
	Secrets     []struct {
		Version int `json:"version"`
	} `json:"secrets"`
}

// annotation is one annotation of a resource.
type annotation struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// latest is the variable's current version; "" when it has no value.
func (r resource) latest() string {
	v := 0
	for _, s := range r.Secrets {
		v = max(v, s.Version)
	}
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

// CurrentVersion tells a variable's current version from its resource,
// without its value.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("reading the version of variable %q of account %q", key, c.account)
	if err := checkKey(what, key); err != nil {
		return "", err
	}
	return c.currentVersion(ctx, what, key)
}

func (c *Client) currentVersion(ctx context.Context, what, key string) (string, error) {
	data, err := c.do(ctx, what, func() (*http.Request, error) {
		req, err := c.api.ResourceRequest(c.fullID(key))
		if err != nil {
			return nil, err
		}
		// The SDK escapes the ID of a resource as a query value (a space
		// becomes '+', which Conjur reads as a plus): escape it as the
		// path segment it is.
		p := strings.TrimSuffix(req.URL.EscapedPath(), url.QueryEscape(key)) + url.PathEscape(key)
		if req.URL.Path, err = url.PathUnescape(p); err != nil {
			return nil, err
		}
		req.URL.RawPath = p
		return req, nil
	})
	if err != nil {
		return "", err
	}
	var r resource
	if err := json.Unmarshal(data, &r); err != nil {
		return "", fmt.Errorf("%s: Conjur's answer is not a resource: %w", what, engine.ErrUnavailable)
	}
	v := r.latest()
	if v == "" {
		return "", fmt.Errorf("%s: the variable is declared and has no value yet: add one: %w", what, engine.ErrNotFound)
	}
	return v, nil
}

// List lists the variables the role can see that have a value, by ID,
// with their current versions, from Conjur's resource listing (no value
// is read). Conjur's search parameter is a text search, not a prefix: the
// prefix is filtered here, and so are tags, which are the variables'
// annotations. The page token is the offset of the next page of
// resources; a page may hold fewer items than its limit, even none.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the variables under %q of account %q", req.Prefix, c.account)
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return engine.ListPage{}, fmt.Errorf("%s: page token %q is not one this store gave: %w", what, req.PageToken, engine.ErrInvalidConfig)
		}
		offset = n
	}
	limit := req.Limit
	if limit <= 0 {
		limit = listPage
	}
	data, err := c.do(ctx, what, func() (*http.Request, error) {
		return c.api.ResourcesRequest(&conjurapi.ResourceFilter{Kind: "variable", Limit: limit, Offset: offset})
	})
	if err != nil {
		return engine.ListPage{}, err
	}
	var rs []resource
	if err := json.Unmarshal(data, &rs); err != nil {
		return engine.ListPage{}, fmt.Errorf("%s: Conjur's answer is not a list of resources: %w", what, engine.ErrUnavailable)
	}
	prefix := c.account + ":variable:"
	var page engine.ListPage
	for _, r := range rs {
		key, ok := strings.CutPrefix(r.ID, prefix)
		v := r.latest()
		if !ok || v == "" || !strings.HasPrefix(key, req.Prefix) || !hasTags(r, req.Tags) {
			continue
		}
		page.Items = append(page.Items, engine.ListItem{Key: key, Version: v})
	}
	if len(rs) >= limit {
		page.NextPageToken = strconv.Itoa(offset + len(rs))
	}
	return page, nil
}

// hasTags tells whether a variable carries every tag as an annotation.
func hasTags(r resource, tags map[string]string) bool {
	for k, v := range tags {
		if !slices.Contains(r.Annotations, annotation{Name: k, Value: v}) {
			return false
		}
	}
	return true
}

// Check authenticates (or finds the access token still good).
func (c *Client) Check(ctx context.Context) error {
	_, err := c.accessToken(ctx, nil)
	return err
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}
