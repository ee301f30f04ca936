package barbican

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"

	"github.com/watchword-dev/watchword/internal/engine"
)

// The secret metadata that marks a secret as written by Watchword.
// Barbican keeps metadata keys in lower case.
const (
	markerManagedBy = "managed-by"
	markerOwner     = "watchword-owner"
	managedByValue  = "watchword"
)

// textPlain is the content type published payloads are stored with.
const textPlain = "text/plain"

// ownerValue is the owner's ID as kept in the metadata: as it is when it
// fits Barbican's 255 characters, otherwise its SHA-256.
func ownerValue(owner engine.Owner) string {
	if len(owner.ID) <= 255 {
		return owner.ID
	}
	sum := sha256.Sum256([]byte(owner.ID))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PutSecret publishes fields as a JSON object of strings, the shape that
// GetSecret reads back as fields. A Barbican secret cannot change, so a
// changed payload is a new secret of the same name, made in three steps so
// that no reader ever sees it unmarked: created without a payload (readers
// skip it), marked in its metadata (with the publication's tags), then
// given its payload. The older secrets of that name that carry the
// owner's marker are deleted after it. Nothing is created when the newest
// secret already holds the payload. The newest secret must carry the
// owner's marker, or none when adopting; an adopted secret is left in
// place, under the new one.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	if refID(key) != "" {
		return "", fmt.Errorf("%w: %q is a secret's reference; publishing writes to a secret name", engine.ErrInvalidConfig, key)
	}
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: a Barbican secret has no labels, annotations or type; remove the destination's metadata: %w", where(key), engine.ErrNotSupported)
	}
	payload, err := payloadOf(key, p.Fields)
	if err != nil {
		return "", err
	}
	meta := map[string]string{}
	for k, v := range p.Tags {
		lk := strings.ToLower(k)
		if lk == markerManagedBy || lk == markerOwner {
			return "", fmt.Errorf("%s: tag %q is where Watchword keeps its ownership marker; choose another tag: %w", where(key), k, engine.ErrNotSupported)
		}
		meta[lk] = v
	}
	meta[markerManagedBy], meta[markerOwner] = managedByValue, ownerValue(owner)

	list, err := c.named(ctx, key)
	if err != nil {
		return "", err
	}
	if cur := current(list); cur != nil {
		mine, oerr := c.checkOwner(ctx, key, cur, owner)
		if oerr != nil {
			return "", oerr
		}
		if mine {
			old, perr := c.payload(ctx, key, cur)
			if perr != nil {
				return "", perr
			}
			if bytes.Equal(old, payload) && cur.ContentTypes["default"] == textPlain {
				return version(cur), nil
			}
		}
	}
	s, err := c.create(ctx, key, payload, meta)
	if err != nil {
		return "", err
	}
	for i := range list {
		if err = c.deleteIfMine(ctx, key, &list[i], owner); err != nil {
			return "", fmt.Errorf("published %s as version %s, but deleting an older secret of it failed: %w", where(key), version(s), err)
		}
	}
	return version(s), nil
}

// create makes a new secret named key: created, marked, then given its
// payload. When a step after the first fails, the new secret is deleted.
func (c *Client) create(ctx context.Context, key string, payload []byte, meta map[string]string) (*secrets.Secret, error) {
	made, err := secrets.Create(ctx, c.sc, secrets.CreateOpts{Name: key, SecretType: secrets.OpaqueSecret}).Extract()
	if err != nil {
		return nil, classify("creating "+where(key), err)
	}
	id := idOf(made)
	undo := func(step error) error {
		if derr := secrets.Delete(ctx, c.sc, id).ExtractErr(); derr != nil {
			return fmt.Errorf("%w (and deleting the incomplete secret %s failed: %w)", step, id, classify(where(key), derr))
		}
		return step
	}
	if _, err = secrets.CreateMetadata(ctx, c.sc, id, secrets.MetadataOpts(meta)).Extract(); err != nil {
		return nil, undo(classify("marking "+where(key)+" as owned", err))
	}
	if err = secrets.Update(ctx, c.sc, id, secrets.UpdateOpts{ContentType: textPlain, Payload: string(payload)}).ExtractErr(); err != nil {
		return nil, undo(classify("storing the payload of "+where(key), err))
	}
	s, err := secrets.Get(ctx, c.sc, id).Extract()
	if err != nil {
		return nil, classify("reading back "+where(key), err)
	}
	return s, nil
}

// checkOwner tells whether s carries owner's marker (true), or none while
// adopting (false), or refuses.
func (c *Client) checkOwner(ctx context.Context, key string, s *secrets.Secret, owner engine.Owner) (bool, error) {
	md, err := secrets.GetMetadata(ctx, c.sc, idOf(s)).Extract()
	if err != nil {
		return false, classify("reading the metadata of "+where(key), err)
	}
	got := md[markerOwner]
	switch {
	case got == ownerValue(owner):
		return true, nil
	case got != "":
		return false, fmt.Errorf("%s (%s) is owned by %s; Watchword will not write over it: %w", where(key), idOf(s), got, engine.ErrNotOwned)
	case owner.Adopt:
		return false, nil
	default:
		return false, fmt.Errorf("%s (%s) exists and carries no Watchword ownership marker; Watchword will not write over it unless told to adopt it: %w", where(key), idOf(s), engine.ErrNotOwned)
	}
}

// deleteIfMine deletes s when it carries owner's marker.
func (c *Client) deleteIfMine(ctx context.Context, key string, s *secrets.Secret, owner engine.Owner) error {
	md, err := secrets.GetMetadata(ctx, c.sc, idOf(s)).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return classify("reading the metadata of "+where(key), err)
	}
	if md[markerOwner] != ownerValue(owner) {
		return nil
	}
	if err := secrets.Delete(ctx, c.sc, idOf(s)).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return classify("deleting "+where(key)+" ("+idOf(s)+")", err)
	}
	return nil
}

// DeleteSecret deletes every secret of the name that carries owner's
// marker, when the newest one does; a name without secrets is not an
// error. A name whose newest secret is someone else's is refused.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	if refID(key) != "" {
		return fmt.Errorf("%w: %q is a secret's reference; publishing deletes by secret name", engine.ErrInvalidConfig, key)
	}
	list, err := c.named(ctx, key)
	if err != nil {
		return err
	}
	if cur := current(list); cur != nil {
		// Without adopt, checkOwner accepts only the owner's marker.
		if _, err := c.checkOwner(ctx, key, cur, engine.Owner{ID: owner.ID}); err != nil {
			return err
		}
	}
	for i := range list {
		if err := c.deleteIfMine(ctx, key, &list[i], owner); err != nil {
			return err
		}
	}
	return nil
}

// payloadOf is the JSON object of the fields. Barbican keeps it as text,
// so every field must be UTF-8.
func payloadOf(key string, fields map[string][]byte) ([]byte, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		if !utf8.Valid(v) {
			return nil, fmt.Errorf("%s: field %q is not UTF-8 text; Barbican payloads are published as a JSON object of text fields (encode binary data, with a template's b64enc for example): %w", where(key), k, engine.ErrNotSupported)
		}
		m[k] = string(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the fields as JSON: %w", where(key), err)
	}
	return b, nil
}
