package infisical

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/infisical/go-sdk"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Client reads the secrets of one store. It is safe for concurrent use.
type Client struct {
	newAPI    func() sdk.InfisicalClientInterface
	login     loginFunc
	host      string
	project   string
	env       string
	folder    string // absolute, without a trailing "/" unless it is "/"
	recursive bool
	who       string
	loginHint string
	now       func() time.Time

	mu   sync.Mutex
	sess *session
	gen  int
}

// session is an SDK client logged in once. It is never changed after
// its login (the SDK sets its token on its shared HTTP client, which
// requests in flight read): a new login makes a new session, and the
// calls in flight finish on the old one.
type session struct {
	api sdk.InfisicalClientInterface
	due time.Time // when to log in again, before the token expires
	gen int
}

// session returns a logged-in session: the current one unless it is
// due, stale (a call on it got 401) is its generation, or force is set.
func (c *Client) session(ctx context.Context, stale int, force bool) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sess; s != nil && !force && s.gen != stale && c.now().Before(s.due) {
		return s, nil
	}
	api := c.newAPI()
	cred, err := c.login(ctx, api)
	if err != nil {
		if code := status(err); code == http.StatusUnauthorized || code == http.StatusBadRequest || code == http.StatusNotFound {
			return nil, fmt.Errorf("logging in to Infisical at %s: Infisical refused the login of %s (HTTP %d): %s: %w",
				c.host, c.who, code, c.loginHint, engine.ErrUnauthenticated)
		}
		if status(err) == 0 && !isSDKError(err) && ctx.Err() == nil {
			// The service account's token could not be had: its error
			// says why, in Watchword's classes.
			return nil, err
		}
		return nil, c.classify("logging in to Infisical", err)
	}
	// Log in again when nine tenths of the token's life have gone.
	life := time.Duration(cred.ExpiresIn) * time.Second
	c.gen++
	c.sess = &session{api: api, due: c.now().Add(life - life/10), gen: c.gen}
	return c.sess, nil
}

// do runs f on a logged-in session; when Infisical answers 401 (a token
// revoked or expired early), it logs in again and runs f once more.
func do[T any](ctx context.Context, c *Client, what string, f func(api sdk.InfisicalClientInterface) (T, error)) (T, error) {
	var zero T
	s, err := c.session(ctx, 0, false)
	if err != nil {
		return zero, err
	}
	v, err := provider.CallWithoutContext(ctx, func() (T, error) { return f(s.api) })
	if status(err) == http.StatusUnauthorized {
		if s, err = c.session(ctx, s.gen, false); err != nil {
			return zero, err
		}
		v, err = provider.CallWithoutContext(ctx, func() (T, error) { return f(s.api) })
	}
	if err != nil {
		return zero, c.classify(what, err)
	}
	return v, nil
}

// Check logs in: it verifies the credentials without reading a secret.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.session(ctx, 0, true)
	return err
}

// nameShape is a folder's or a secret's name as the provider reads it:
// the SDK puts a secret's name in the request's path unescaped.
var nameShape = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// locate splits a remote key into its folder and secret name: "KEY" is in
// the store's folder, "a/b/KEY" in the folder a/b below it, "/a/KEY" in
// /a from the environment's root.
func (c *Client) locate(key string) (folder, name string, err error) {
	rel, name := "", key
	if i := strings.LastIndex(key, "/"); i >= 0 {
		rel, name = key[:i+1], key[i+1:]
	}
	bad := !nameShape.MatchString(name) || name == "." || name == ".."
	for _, seg := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(rel, "/"), "/"), "/") {
		if rel != "" && rel != "/" && (!nameShape.MatchString(seg) || seg == "." || seg == "..") {
			bad = true
		}
	}
	if bad {
		return "", "", failure.Terminalf(failure.RemoteNameInvalid,
			"remote key %q is not an Infisical secret: give a secret's name, or a path to it below the store's folder (path/to/NAME, or /path/to/NAME from the environment's root); names and folders hold letters, digits, '_', '-' and '.'", key)
	}
	return join(c.folder, rel), name, nil
}

// where says where a secret is, for messages.
func (c *Client) where(folder, name string) string {
	return fmt.Sprintf("secret %q in folder %q of environment %q of project %q", name, folder, c.env, c.project)
}

func (c *Client) retrieve(ctx context.Context, key, version string) (sdk.Secret, error) {
	folder, name, err := c.locate(key)
	if err != nil {
		return sdk.Secret{}, err
	}
	what := "reading " + c.where(folder, name)
	opts := sdk.RetrieveSecretOptions{
		SecretKey: name, ProjectSlug: c.project, Environment: c.env, SecretPath: folder, Type: "shared",
		// As External Secrets Operator does by default: ${...} in a
		// value is replaced by what it refers to.
		ExpandSecretReferences: true,
	}
	if version != "" {
		n, perr := strconv.Atoi(version)
		if perr != nil || n < 1 {
			return sdk.Secret{}, fmt.Errorf("%s: version %q is not one of Infisical's (a number from 1): %w", what, version, engine.ErrNotFound)
		}
		opts.Version = n
		what += fmt.Sprintf(" at version %d", n)
	}
	return do(ctx, c, what, func(api sdk.InfisicalClientInterface) (sdk.Secret, error) {
		return api.Secrets().Retrieve(opts)
	})
}

// GetSecret reads a secret's value, at its current version or the one
// ref pins.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	s, err := c.retrieve(ctx, ref.Key, ref.Version)
	if err != nil {
		return engine.Object{}, err
	}
	return engine.TextObject(strconv.Itoa(s.Version), []byte(s.SecretValue)), nil
}

// CurrentVersion reads a secret's current version. Infisical has no read
// of a version alone: the answer carries the value too, which is dropped.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	s, err := c.retrieve(ctx, key, "")
	if err != nil {
		return "", err
	}
	return strconv.Itoa(s.Version), nil
}

// List lists the keys of the secrets of the store's folder (and of the
// folders below it with recursive, as path/below/NAME), with their
// versions. Infisical answers a folder's secrets with their values in one
// call: the provider keeps the names and versions, and pages through them
// itself (the page token is the last key of the previous page). It does
// not filter by Infisical's tags, which have no values.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the secrets under %q in folder %q of environment %q of project %q", req.Prefix, c.folder, c.env, c.project)
	if len(req.Tags) > 0 {
		return engine.ListPage{}, fmt.Errorf("%s: the infisical provider does not select secrets by tags: %w", what, engine.ErrNotSupported)
	}
	res, err := do(ctx, c, what, func(api sdk.InfisicalClientInterface) (sdk.ListSecretsResult, error) {
		return api.Secrets().ListSecrets(sdk.ListSecretsOptions{
			ProjectSlug: c.project, Environment: c.env, SecretPath: c.folder,
			Recursive: c.recursive, ExpandSecretReferences: true,
			// Secrets of the same name in two folders are both kept.
			SkipUniqueValidation: true,
		})
	})
	if err != nil {
		return engine.ListPage{}, err
	}
	var items []engine.ListItem
	for _, s := range res.Secrets {
		key, ok := c.relKey(s)
		if !ok || !strings.HasPrefix(key, req.Prefix) || key <= req.PageToken {
			continue
		}
		items = append(items, engine.ListItem{Key: key, Version: strconv.Itoa(s.Version)})
	}
	slices.SortFunc(items, func(a, b engine.ListItem) int { return strings.Compare(a.Key, b.Key) })
	items = slices.CompactFunc(items, func(a, b engine.ListItem) bool { return a.Key == b.Key })
	var out engine.ListPage
	if req.Limit > 0 && len(items) > req.Limit {
		items = items[:req.Limit]
		out.NextPageToken = items[len(items)-1].Key
	}
	out.Items = items
	return out, nil
}

// relKey is the key a listed secret is read by: its name in the store's
// folder, its path below the folder otherwise. A secret the provider
// could not read back by that key is left out.
func (c *Client) relKey(s sdk.Secret) (string, bool) {
	folder := s.SecretPath
	if folder == "" {
		folder = c.folder
	}
	var key string
	switch {
	case folder == c.folder || folder == c.folder+"/":
		key = s.SecretKey
	case c.folder == "/" && strings.HasPrefix(folder, "/"):
		key = strings.Trim(folder, "/") + "/" + s.SecretKey
	case strings.HasPrefix(folder, c.folder+"/"):
		key = strings.Trim(strings.TrimPrefix(folder, c.folder), "/") + "/" + s.SecretKey
	default:
		return "", false
	}
	if _, _, err := c.locate(key); err != nil {
		return "", false
	}
	return key, true
}

// isSDKError tells an error of the SDK's request from one of Watchword's.
func isSDKError(err error) bool {
	var re *sdk.RequestError
	var ae *sdk.APIError
	return errors.As(err, &re) || errors.As(err, &ae)
}

// status is the HTTP status of an SDK API error; 0 for another error.
func status(err error) int {
	var e *sdk.APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}
