package azurekv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// OwnerTag is the tag that marks a secret Watchword wrote, with the ID of
// the object that owns it.
const OwnerTag = "watchword-owner"

// jsonContentType is the content type of the secrets Watchword writes: a
// JSON object of the publication's fields.
const jsonContentType = "application/json"

// Client is a Key Vault client of one store. It is safe for concurrent use.
type Client struct {
	who   string
	vault string
	// rebuild makes a new SDK client with a new credential, whose token
	// cache is empty.
	rebuild func(ctx context.Context) (*azsecrets.Client, error)

	mu  sync.Mutex
	api *azsecrets.Client
}

// sdk is the current SDK client.
func (c *Client) sdk() *azsecrets.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.api
}

// fail classifies the error of a call made with api. When Key Vault
// refused the access token itself (HTTP 401: revoked, or its tenant's
// keys rolled), the SDK would keep presenting it until it nears expiry:
// the client is replaced by one with a new credential, so that the next
// call signs in again.
func (c *Client) fail(ctx context.Context, api *azsecrets.Client, what string, err error) error {
	if isStatus(err, http.StatusUnauthorized) && c.rebuild != nil {
		if fresh, rerr := c.rebuild(ctx); rerr == nil {
			c.mu.Lock()
			if c.api == api {
				c.api = fresh
			}
			c.mu.Unlock()
		}
	}
	return c.classify(what, err)
}

var secretName = regexp.MustCompile(`^[0-9a-zA-Z-]{1,127}$`)

// checkName refuses a key Key Vault cannot hold, before any call.
func checkName(what, key string) error {
	if !secretName.MatchString(key) {
		// The name is the input of the object that gives it, refused
		// before any call: never the store's configuration or outage.
		return failure.Terminalf(failure.RemoteNameInvalid, "%s: a Key Vault secret name has 1 to 127 letters, digits and '-'", what)
	}
	return nil
}

// GetSecret reads one version of a secret (the current one when ref has no
// version).
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	what := fmt.Sprintf("reading secret %q", ref.Key)
	if ref.Version != "" {
		what = fmt.Sprintf("reading version %q of secret %q", ref.Version, ref.Key)
	}
	if err := checkName(what, ref.Key); err != nil {
		return engine.Object{}, err
	}
	api := c.sdk()
	resp, err := api.GetSecret(ctx, ref.Key, ref.Version, nil)
	if err != nil {
		return engine.Object{}, c.fail(ctx, api, what, err)
	}
	version := ""
	if resp.ID != nil {
		version = resp.ID.Version()
	}
	switch str(resp.ContentType) {
	case pkcs12ContentType:
		// The secret behind a certificate whose key is exportable: the
		// PFX, which Key Vault hands out in base64. The value read is the
		// PFX itself.
		pfx, err := base64.StdEncoding.DecodeString(str(resp.Value))
		if err != nil {
			return engine.Object{}, fmt.Errorf("%s: the certificate's PFX is not valid base64: %w", what, engine.ErrUnavailable)
		}
		return engine.Object{Version: version, Value: pfx}, nil
	case pemContentType:
		// A certificate's PEM (key and chain): one value, never parsed
		// as JSON.
		return engine.Object{Version: version, Value: []byte(str(resp.Value))}, nil
	}
	return engine.TextObject(version, []byte(str(resp.Value))), nil
}

// The content types of the secrets that back certificates.
const (
	pkcs12ContentType = "application/x-pkcs12"
	pemContentType    = "application/x-pem-file"
)

// CurrentVersion tells a secret's current version from its version listing
// (no value in it): the version created last. The listing comes in pages
// of 25 in no documented order, and its creation times are in seconds: for
// a secret with more than one page of versions, or two versions created in
// the newest second, one read of the current version is the cheaper and
// the only certain way, and is made instead.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("listing the versions of secret %q", key)
	if err := checkName(what, key); err != nil {
		return "", err
	}
	api := c.sdk()
	pager := api.NewListSecretPropertiesVersionsPager(key, nil)
	page, err := pager.NextPage(ctx)
	if err != nil {
		return "", c.fail(ctx, api, what, err)
	}
	newest, tie := "", false
	var newestAt int64 = -1
	for _, p := range page.Value {
		if p == nil || p.ID == nil || p.Attributes == nil || p.Attributes.Created == nil {
			tie = true // cannot tell: read instead
			continue
		}
		at := p.Attributes.Created.Unix()
		switch {
		case at > newestAt:
			newest, newestAt, tie = p.ID.Version(), at, false
		case at == newestAt:
			tie = true
		}
	}
	if newest == "" && !pager.More() && !tie {
		return "", fmt.Errorf("%s: it has no versions: %w", what, engine.ErrNotFound)
	}
	if !pager.More() && !tie {
		return newest, nil
	}
	obj, err := c.GetSecret(ctx, engine.Ref{Key: key})
	if err != nil {
		return "", err
	}
	return obj.Version, nil
}

// fieldsText is the text a publication's fields are written as: a JSON
// object of string members, the shape textObject reads back.
func fieldsText(fields map[string][]byte) (string, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = string(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding the fields as JSON: %w", err)
	}
	return string(b), nil
}

// ownership decides whether owner may write (or delete) a secret whose
// owner tag is marker (found: it has one): nil, or an error wrapping
// ErrNotOwned.
func ownership(what, marker string, found bool, owner engine.Owner) error {
	switch {
	case found && marker == owner.ID:
		return nil
	case found:
		return fmt.Errorf("%s: it belongs to %q (tag %s), not to %q: %w", what, marker, OwnerTag, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return nil
	}
	return fmt.Errorf("%s: it exists and carries no %s tag, so Watchword did not create it; set adopt to take it over: %w", what, OwnerTag, engine.ErrNotOwned)
}

// PutSecret writes the publication's fields as a new version of the
// secret (a JSON object), tagged with the owner and the publication's tags.
// It refuses a secret another owner tagged, or one without a tag unless
// the owner adopts it. Writing what the secret already holds, with the
// same tags, makes no new version. Key Vault has no conditional write: two
// writers racing each add a whole version, and the last one is current.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing secret %q to Key Vault", key)
	if err := checkName(what, key); err != nil {
		return "", err
	}
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: Key Vault keeps no labels, annotations or type with a secret; use tags: %w", what, engine.ErrNotSupported)
	}
	if _, clash := p.Tags[OwnerTag]; clash {
		return "", fmt.Errorf("%s: tag %q is Watchword's ownership marker and cannot be set by a publication: %w", what, OwnerTag, engine.ErrInvalidConfig)
	}
	if len(p.Tags) > 14 {
		return "", fmt.Errorf("%s: Key Vault allows 15 tags on a secret, and Watchword's ownership marker is one: give at most 14: %w", what, engine.ErrInvalidConfig)
	}
	text, err := fieldsText(p.Fields)
	if err != nil {
		return "", err
	}
	tags := map[string]*string{OwnerTag: to.Ptr(owner.ID)}
	for k, v := range p.Tags {
		tags[k] = to.Ptr(v)
	}
	api := c.sdk()
	cur, err := api.GetSecret(ctx, key, "", nil)
	switch {
	case err == nil && cur.Managed != nil && *cur.Managed:
		return "", fmt.Errorf("%s: it is the secret of a Key Vault certificate, which Key Vault manages: publish to another name: %w", what, engine.ErrNotOwned)
	case err == nil:
		marker, found := cur.Tags[OwnerTag]
		if oerr := ownership(what, str(marker), found && marker != nil, owner); oerr != nil {
			return "", oerr
		}
		if str(cur.Value) == text && sameTags(cur.Tags, tags) && cur.ID != nil {
			return cur.ID.Version(), nil
		}
	case !isStatus(err, 404):
		return "", c.fail(ctx, api, what+" (reading its current version first)", err)
	}
	resp, err := api.SetSecret(ctx, key, azsecrets.SetSecretParameters{Value: to.Ptr(text), Tags: tags,
		ContentType: to.Ptr(jsonContentType)}, nil)
	if err != nil {
		return "", c.fail(ctx, api, what, err)
	}
	if resp.ID == nil {
		return "", nil
	}
	return resp.ID.Version(), nil
}

func sameTags(have, want map[string]*string) bool {
	if len(have) != len(want) {
		return false
	}
	return maps.EqualFunc(have, want, func(a, b *string) bool { return str(a) == str(b) })
}

// DeleteSecret deletes a secret that carries the owner's tag. Key Vault
// keeps a deleted secret recoverable for its retention period (soft
// delete), and its name taken until it is purged: Watchword does not
// purge.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting secret %q from Key Vault", key)
	if err := checkName(what, key); err != nil {
		return err
	}
	api := c.sdk()
	cur, err := api.GetSecret(ctx, key, "", nil)
	if err != nil {
		if isStatus(err, 404) {
			return nil
		}
		return c.fail(ctx, api, what+" (reading its tags first)", err)
	}
	marker, found := cur.Tags[OwnerTag]
	if !found || str(marker) != owner.ID {
		return ownership(what, str(marker), found && marker != nil, engine.Owner{ID: owner.ID})
	}
	if _, err := api.DeleteSecret(ctx, key, nil); err != nil && !isStatus(err, 404) {
		return c.fail(ctx, api, what, err)
	}
	return nil
}

// str is the text of an optional string of the SDK.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
