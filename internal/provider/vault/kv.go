package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// Custom metadata keys that mark a KV v2 secret as written by Watchword.
const (
	markerManagedBy = "managed-by"
	markerOwner     = "watchword-owner"
	managedByValue  = "watchword"
)

// Client reads and writes one KV mount of one Vault server.
type Client struct {
	t       transport
	session *session
	mount   string
	version string // "1" or "2"
}

// call sends a request with the session's token; a 403 makes it log in
// once more and try again, for tokens that expired or were revoked early.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	tok, err := c.session.get(ctx)
	if err != nil {
		return err
	}
	err = c.t.do(ctx, method, path, q, tok, body, out)
	if isStatus(err, http.StatusForbidden) && c.session.relogin(tok) {
		if tok, err = c.session.get(ctx); err != nil {
			return err
		}
		err = c.t.do(ctx, method, path, q, tok, body, out)
	}
	if isStatus(err, http.StatusForbidden) {
		who, invalid := c.session.describe(ctx, tok)
		return &refusedError{who: who, op: operation(method), path: path, unauthenticated: invalid}
	}
	return err
}

// refusedError is a request that Vault refused (403) after a new login,
// with who was refused and what, rebuilt from the request: Vault's own text
// is left out, since it can echo input.
type refusedError struct {
	who, op, path string
	// unauthenticated: the token itself is refused (it cannot look
	// itself up), not this one request.
	unauthenticated bool
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("Vault does not let %s %s %q", e.who, e.op, e.path)
}

// operation is the Vault policy capability a request method needs.
func operation(method string) string {
	switch method {
	case http.MethodGet:
		return "read"
	case http.MethodDelete:
		return "delete"
	case "LIST":
		return "list"
	default:
		return "create or update"
	}
}

func (c *Client) dataPath(key string) string {
	if c.version == "1" {
		return c.mount + "/" + key
	}
	return c.mount + "/data/" + key
}

func (c *Client) where(key string) string {
	return fmt.Sprintf("Vault secret %q (KV v%s mount %q)", key, c.version, c.mount)
}

type kvMetadata struct {
	Version        int               `json:"version"`
	DeletionTime   string            `json:"deletion_time"`
	Destroyed      bool              `json:"destroyed"`
	CustomMetadata map[string]string `json:"custom_metadata"`
}

// GetSecret reads the current or the pinned version of a secret.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	key := strings.Trim(ref.Key, "/")
	if c.version == "1" {
		if ref.Version != "" {
			return engine.Object{}, fmt.Errorf("%s: version %q was asked for, but a KV v1 mount keeps no versions: %w", c.where(key), ref.Version, engine.ErrNotFound)
		}
		var out struct {
			Data map[string]any `json:"data"`
		}
		if err := c.call(ctx, http.MethodGet, c.dataPath(key), nil, nil, &out); err != nil {
			return engine.Object{}, classify(c.where(key), err)
		}
		return objectOf(out.Data, "")
	}
	q, err := c.versionQuery(key, ref.Version)
	if err != nil {
		return engine.Object{}, err
	}
	var out struct {
		Data struct {
			Data     map[string]any `json:"data"`
			Metadata kvMetadata     `json:"metadata"`
		} `json:"data"`
	}
	err = c.call(ctx, http.MethodGet, c.dataPath(key), q, nil, &out)
	if err != nil {
		return engine.Object{}, c.explainMissing(key, ref.Version, err)
	}
	if out.Data.Data == nil {
		return engine.Object{}, deletedError(c.where(key), out.Data.Metadata)
	}
	return objectOf(out.Data.Data, strconv.Itoa(out.Data.Metadata.Version))
}

// explainMissing tells a deleted or destroyed version from a missing path:
// Vault answers 404 for all three, with the version's metadata for the
// first two.
func (c *Client) explainMissing(key, version string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound && len(ae.raw) > 0 {
		var out struct {
			Data struct {
				Metadata *kvMetadata `json:"metadata"`
			} `json:"data"`
		}
		if json.Unmarshal(ae.raw, &out) == nil && out.Data.Metadata != nil && out.Data.Metadata.Version > 0 {
			return deletedError(c.where(key), *out.Data.Metadata)
		}
		if version != "" {
			return fmt.Errorf("%s has no version %s: %w", c.where(key), version, engine.ErrNotFound)
		}
	}
	return classify(c.where(key), err)
}

func deletedError(where string, m kvMetadata) error {
	switch {
	case m.Destroyed:
		return fmt.Errorf("%s: version %d was destroyed; pin another version or write a new one: %w", where, m.Version, engine.ErrNotFound)
	case m.DeletionTime != "":
		return fmt.Errorf("%s: version %d was deleted (undelete it, or pin another version): %w", where, m.Version, engine.ErrNotFound)
	default:
		return fmt.Errorf("%s: version %d holds no data: %w", where, m.Version, engine.ErrNotFound)
	}
}

// objectOf turns Vault's data map into fields: strings as they are, other
// JSON values as JSON.
func objectOf(data map[string]any, version string) (engine.Object, error) {
	fields := make(map[string][]byte, len(data))
	for k, v := range data {
		if s, ok := v.(string); ok {
			fields[k] = []byte(s)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return engine.Object{}, fmt.Errorf("field %q cannot be rendered", k)
		}
		fields[k] = b
	}
	return engine.Object{Version: version, Fields: fields}, nil
}

// CurrentVersion reads a KV v2 secret's metadata only, so that a refresh
// can skip reading the data again when nothing changed.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	if c.version == "1" {
		return "", fmt.Errorf("KV v1 has no versions: %w", engine.ErrNotFound)
	}
	m, err := c.metadata(ctx, strings.Trim(key, "/"))
	if err != nil {
		return "", err
	}
	return strconv.Itoa(m.CurrentVersion), nil
}

type fullMetadata struct {
	CurrentVersion int               `json:"current_version"`
	CustomMetadata map[string]string `json:"custom_metadata"`
}

func (c *Client) metadata(ctx context.Context, key string) (*fullMetadata, error) {
	var out struct {
		Data fullMetadata `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, c.mount+"/metadata/"+key, nil, nil, &out); err != nil {
		return nil, classify(c.where(key)+" metadata", err)
	}
	return &out.Data, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	if h, ok := c.t.(*httpTransport); ok {
		h.client.CloseIdleConnections()
	}
	return nil
}

// Check verifies that the token is valid by looking it up.
func (c *Client) Check(ctx context.Context) error {
	if err := c.call(ctx, http.MethodGet, "auth/token/lookup-self", nil, nil, nil); err != nil {
		return classify("checking the Vault token", err)
	}
	return nil
}

// PutSecret writes a KV v2 secret that owner owns and returns its new
// version. It refuses a secret that exists without Watchword's marker
// (unless adopt) or with another owner's, and writes with check-and-set so
// that a concurrent writer is not overwritten blindly. A Vault secret has
// no labels, annotations or type: a publication that sets them is refused;
// its tags go into the custom metadata, beside the marker.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	if c.version != "2" {
		return "", fmt.Errorf("writing needs a KV v2 mount (it keeps the ownership marker in custom metadata); %q is KV v1: %w", c.mount, engine.ErrInvalidConfig)
	}
	key = strings.Trim(key, "/")
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: a Vault secret has no labels, annotations or type; remove the destination's metadata: %w", c.where(key), engine.ErrNotSupported)
	}
	cas := 0
	m, err := c.metadata(ctx, key)
	switch {
	case errors.Is(err, engine.ErrNotFound):
	case err != nil:
		return "", err
	default:
		if err := checkOwner(c.where(key), m, owner); err != nil {
			return "", err
		}
		cas = m.CurrentVersion
	}
	for k := range p.Tags {
		if k == markerManagedBy || k == markerOwner {
			return "", fmt.Errorf("%s: tag %q is where Watchword keeps its ownership marker; choose another tag: %w", c.where(key), k, engine.ErrNotSupported)
		}
	}
	// The custom metadata keeps what it has (a tag taken out of the
	// destination is not removed), and gets the tags and the marker.
	custom := map[string]string{}
	if m != nil {
		maps.Copy(custom, m.CustomMetadata)
	}
	maps.Copy(custom, p.Tags)
	custom[markerManagedBy], custom[markerOwner] = managedByValue, owner.ID
	if m == nil || !maps.Equal(custom, m.CustomMetadata) {
		if err := c.call(ctx, http.MethodPost, c.mount+"/metadata/"+key, nil, map[string]any{"custom_metadata": custom}, nil); err != nil {
			return "", classify("marking "+c.where(key)+" as owned", err)
		}
	}
	data := make(map[string]string, len(p.Fields))
	for k, v := range p.Fields {
		data[k] = string(v)
	}
	body := map[string]any{"data": data, "options": map[string]any{"cas": cas}}
	var out struct {
		Data struct {
			Version int `json:"version"`
		} `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, c.dataPath(key), nil, body, &out); err != nil {
		if isStatus(err, http.StatusBadRequest) {
			return "", fmt.Errorf("%s changed while it was being written (check-and-set failed); retrying: %w", c.where(key), engine.ErrUnavailable)
		}
		return "", classify("writing "+c.where(key), err)
	}
	return strconv.Itoa(out.Data.Version), nil
}

// DeleteSecret deletes every version and the metadata of a secret, only if
// owner owns it. A secret that does not exist is not an error.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	if c.version != "2" {
		return fmt.Errorf("deleting needs a KV v2 mount: %w", engine.ErrInvalidConfig)
	}
	key = strings.Trim(key, "/")
	m, err := c.metadata(ctx, key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if m.CustomMetadata[markerOwner] != owner.ID {
		return fmt.Errorf("%s is not owned by %s; leaving it: %w", c.where(key), owner.ID, engine.ErrNotOwned)
	}
	if err := c.call(ctx, http.MethodDelete, c.mount+"/metadata/"+key, nil, nil, nil); err != nil {
		return classify("deleting "+c.where(key), err)
	}
	return nil
}

func checkOwner(where string, m *fullMetadata, owner engine.Owner) error {
	got := m.CustomMetadata[markerOwner]
	switch {
	case got == owner.ID:
		return nil
	case got != "":
		return fmt.Errorf("%s is owned by %s; Watchword will not write over it: %w", where, got, engine.ErrNotOwned)
	case owner.Adopt:
		return nil
	default:
		return fmt.Errorf("%s exists and carries no Watchword ownership marker; Watchword will not write over it unless told to adopt it: %w", where, engine.ErrNotOwned)
	}
}

// versionQuery is the query of a KV v2 read pinned at version (none for
// the current one); a version that is not a number cannot exist.
func (c *Client) versionQuery(key, version string) (url.Values, error) {
	if version == "" {
		return nil, nil
	}
	if _, err := strconv.Atoi(version); err != nil {
		return nil, fmt.Errorf("%s: version %q is not a KV v2 version number: %w", c.where(key), version, engine.ErrNotFound)
	}
	return url.Values{"version": {version}}, nil
}
