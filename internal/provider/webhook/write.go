package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/watchword-dev/watchword/internal/engine"
)

// current is what a read tells of a remote secret before a write: whether
// it exists, its version, its fields and its ownership marker.
type current struct {
	exists  bool
	version string
	fields  map[string][]byte
	owner   string
}

// look reads key with the store's read request.
func (c *Client) look(ctx context.Context, key string) (current, error) {
	ans, err := c.read(ctx, engine.Ref{Key: key})
	if errors.Is(err, engine.ErrNotFound) {
		return current{}, nil
	}
	if err != nil {
		return current{}, err
	}
	obj, err := c.cfg.object(key, ans)
	if err != nil {
		return current{}, err
	}
	owner, err := c.cfg.owner(ans)
	if err != nil {
		return current{}, fmt.Errorf("key %q: %w", key, err)
	}
	return current{exists: true, version: obj.Version, fields: obj.Fields, owner: owner}, nil
}

// checkOwner refuses a secret that carries another owner's marker, or
// none unless adopt.
func checkOwner(key string, cur current, owner engine.Owner) error {
	switch {
	case !cur.exists || cur.owner == owner.ID:
		return nil
	case cur.owner != "":
		return fmt.Errorf("key %q is owned by %s; Watchword will not write over it or delete it: %w", key, cur.owner, engine.ErrNotOwned)
	case owner.Adopt:
		return nil
	default:
		return fmt.Errorf("key %q exists and carries no Watchword ownership marker (at webhook.push.ownerJSONPath); Watchword will not write over it or delete it unless told to adopt it: %w", key, engine.ErrNotOwned)
	}
}

// PutSecret reads key, checks its owner, and sends the put request, with
// the fields (as text), the owner's marker and the version it replaces.
// With versionHeader ETag, the write is conditional: If-Match the read's
// ETag, or If-None-Match * for a new secret, so that a concurrent writer
// is never overwritten blindly (a lost race is HTTP 412: ErrUnavailable).
// Writing the fields the secret already holds, with the owner's marker,
// sends nothing. It returns the version of what it wrote.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if p.HasMetadata() || len(p.Tags) > 0 {
		return "", fmt.Errorf("key %q: a webhook store keeps no labels, annotations, type or tags; remove the destination's metadata: %w", key, engine.ErrNotSupported)
	}
	fields := make(map[string]string, len(p.Fields))
	for k, v := range p.Fields {
		if !utf8.Valid(v) {
			return "", fmt.Errorf("key %q: field %q is not UTF-8 text; a webhook store publishes text (encode binary data, with a template's b64enc for example): %w", key, k, engine.ErrNotSupported)
		}
		fields[k] = string(v)
	}
	cur, err := c.look(ctx, key)
	if err != nil {
		return "", err
	}
	if err = checkOwner(key, cur, owner); err != nil {
		return "", err
	}
	if cur.exists && cur.owner == owner.ID && maps.EqualFunc(cur.fields, p.Fields, func(a, b []byte) bool { return string(a) == string(b) }) {
		return cur.version, nil
	}
	data := c.data(map[string]any{
		"remoteRef": map[string]any{"key": key},
		"fields":    fields, "owner": owner.ID, "version": cur.version,
	})
	ans, err := c.do(ctx, c.cfg.put, data, fmt.Sprintf("writing key %q", key), c.conditional(cur))
	if err != nil {
		return "", err
	}
	return c.writtenVersion(ctx, key, ans)
}

// conditional are the headers that make a write conditional on the
// version read, when that version is an ETag.
func (c *Client) conditional(cur current) http.Header {
	if !strings.EqualFold(c.cfg.versionHeader, "ETag") {
		return nil
	}
	if !cur.exists {
		return http.Header{"If-None-Match": {"*"}}
	}
	return http.Header{"If-Match": {cur.version}}
}

// writtenVersion is the version a write made: the answer's own (its
// versionHeader, or versionJSONPath in a JSON answer), or else a read's.
func (c *Client) writtenVersion(ctx context.Context, key string, ans *answer) (string, error) {
	cfg := c.cfg
	switch {
	case cfg.versionHeader != "" && ans.header.Get(cfg.versionHeader) != "":
		return ans.header.Get(cfg.versionHeader), nil
	case cfg.versionPath != nil:
		var doc any
		if decode(ans.body, &doc) == nil {
			if v, err := cfg.version(ans, doc); err == nil {
				return v, nil
			}
		}
	case cfg.versionHeader == "":
		return "", nil
	}
	cur, err := c.look(ctx, key)
	if err != nil {
		return "", fmt.Errorf("wrote key %q, but reading its version back failed: %w", key, err)
	}
	return cur.version, nil
}

// DeleteSecret sends the delete request for a secret that carries the
// owner's marker; a secret that does not exist is no error. Without
// push.delete the store cannot delete (ErrNotSupported).
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if c.cfg.del == nil {
		return fmt.Errorf("key %q: the store has no webhook.push.delete request: %w", key, engine.ErrNotSupported)
	}
	cur, err := c.look(ctx, key)
	if err != nil || !cur.exists {
		return err
	}
	// Without adopt, checkOwner accepts only the owner's own marker.
	if err = checkOwner(key, cur, engine.Owner{ID: owner.ID}); err != nil {
		return err
	}
	data := c.data(map[string]any{
		"remoteRef": map[string]any{"key": key},
		"owner":     owner.ID, "version": cur.version,
	})
	var cond http.Header
	if strings.EqualFold(c.cfg.versionHeader, "ETag") {
		cond = http.Header{"If-Match": {cur.version}}
	}
	_, err = c.do(ctx, c.cfg.del, data, fmt.Sprintf("deleting key %q", key), cond)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	return err
}
