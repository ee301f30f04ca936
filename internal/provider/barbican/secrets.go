package barbican

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/watchword-dev/watchword/internal/engine"
)

// Client reads and writes the secrets of one project of one Barbican.
type Client struct {
	sc *gophercloud.ServiceClient
}

// uuidRE matches a secret's UUID, alone or at the end of its reference
// (https://barbican.example.com:9311/v1/secrets/<uuid>).
var uuidRE = regexp.MustCompile(`^(?:https?://.*/secrets/)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/?$`)

// refID returns the UUID of a key that is a secret's reference or UUID,
// or "" for a name.
func refID(key string) string {
	if m := uuidRE.FindStringSubmatch(key); m != nil {
		return strings.ToLower(m[1])
	}
	return ""
}

// createdLayout is how the creation time is written in versions.
const createdLayout = "2006-01-02T15:04:05.000000Z"

// version is "<uuid>@<created>": a secret is immutable, so its UUID names
// its payload, and the time tells versions apart at a glance.
func version(s *secrets.Secret) string {
	return idOf(s) + "@" + s.Created.UTC().Format(createdLayout)
}

func idOf(s *secrets.Secret) string {
	return s.SecretRef[strings.LastIndex(s.SecretRef, "/")+1:]
}

func hasPayload(s *secrets.Secret) bool { return s.ContentTypes["default"] != "" }

func where(key string) string { return fmt.Sprintf("Barbican secret %q", key) }

// nameFilter is a name filter as Barbican's list takes it: Barbican
// decodes the name filter once more than the query string (with '+' as a
// space), so a name is escaped once here, under the escaping of the
// query; a name with '+', '%' or a space would otherwise match another.
func nameFilter(name string) string { return url.QueryEscape(name) }

// named lists the secrets whose name is exactly name, newest first.
// Barbican's name filter is an SQL LIKE (case-insensitive in some
// databases, with _ and % as wildcards), so each is checked here.
func (c *Client) named(ctx context.Context, name string) ([]secrets.Secret, error) {
	var out []secrets.Secret
	err := secrets.List(c.sc, secrets.ListOpts{Name: nameFilter(name), Sort: "created:desc", Limit: 100}).EachPage(ctx,
		func(_ context.Context, page pagination.Page) (bool, error) {
			list, err := secrets.ExtractSecrets(page)
			if err != nil {
				return false, err
			}
			for _, s := range list {
				if s.Name == name {
					out = append(out, s)
				}
			}
			return true, nil
		})
	if err != nil {
		return nil, classify("listing "+where(name), err)
	}
	return out, nil
}

// current returns the newest secret named name that holds a payload (one
// being published holds none until it is marked), or ErrNotFound.
func current(list []secrets.Secret) *secrets.Secret {
	for i := range list {
		if hasPayload(&list[i]) {
			return &list[i]
		}
	}
	return nil
}

// resolve finds the secret a key and version name: by reference, or the
// newest of a name, or the pinned version, which must belong to the key.
func (c *Client) resolve(ctx context.Context, key, ver string) (*secrets.Secret, error) {
	id := refID(key)
	if ver != "" {
		vid, created, _ := strings.Cut(ver, "@")
		if refID(vid) == "" || (id != "" && strings.ToLower(vid) != id) {
			return nil, fmt.Errorf("%s has no version %q (a version is <uuid>@<created>): %w", where(key), ver, engine.ErrNotFound)
		}
		s, err := c.get(ctx, key, vid)
		if err != nil {
			return nil, err
		}
		if (id == "" && s.Name != key) || (created != "" && created != s.Created.UTC().Format(createdLayout)) {
			return nil, fmt.Errorf("%s has no version %q: %w", where(key), ver, engine.ErrNotFound)
		}
		return s, nil
	}
	if id != "" {
		return c.get(ctx, key, id)
	}
	list, err := c.named(ctx, key)
	if err != nil {
		return nil, err
	}
	if s := current(list); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%s: no secret of this name with a payload in the project: %w", where(key), engine.ErrNotFound)
}

func (c *Client) get(ctx context.Context, key, id string) (*secrets.Secret, error) {
	s, err := secrets.Get(ctx, c.sc, strings.ToLower(id)).Extract()
	if err != nil {
		return nil, classify(where(key)+" ("+id+")", err)
	}
	if !hasPayload(s) {
		return nil, fmt.Errorf("%s (%s) holds no payload: %w", where(key), id, engine.ErrNotFound)
	}
	return s, nil
}

// payload reads a secret's payload in its own content type.
func (c *Client) payload(ctx context.Context, key string, s *secrets.Secret) ([]byte, error) {
	b, err := secrets.GetPayload(ctx, c.sc, idOf(s), secrets.GetPayloadOpts{PayloadContentType: s.ContentTypes["default"]}).Extract()
	if err != nil {
		return nil, classify("reading the payload of "+where(key), err)
	}
	return b, nil
}

// GetSecret reads the newest secret of a name, or a secret by reference,
// or a pinned version. The payload is the value, byte for byte; a text
// payload that is a JSON object also comes as fields, one per member, so
// that property and dataFrom select from it.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	s, err := c.resolve(ctx, ref.Key, ref.Version)
	if err != nil {
		return engine.Object{}, err
	}
	b, err := c.payload(ctx, ref.Key, s)
	if err != nil {
		return engine.Object{}, err
	}
	return objectOf(version(s), s.ContentTypes["default"], b), nil
}

// objectOf is the object of a payload: the payload as the Value, which a
// data entry without a property gets byte for byte, and for a text JSON
// object its members as fields too (a string member as its text, any other
// as its JSON).
func objectOf(ver, contentType string, payload []byte) engine.Object {
	if !strings.HasPrefix(contentType, "text/plain") {
		return engine.Object{Version: ver, Value: payload}
	}
	return engine.TextObject(ver, payload)
}

// CurrentVersion tells the version a read would return, from the secrets'
// metadata alone (one list call, or one get by reference).
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	s, err := c.resolve(ctx, key, "")
	if err != nil {
		return "", err
	}
	return version(s), nil
}

// Check lists one secret of the project: the credentials work and the
// project may list secrets.
func (c *Client) Check(ctx context.Context) error {
	err := secrets.List(c.sc, secrets.ListOpts{Limit: 1}).EachPage(ctx,
		func(context.Context, pagination.Page) (bool, error) { return false, nil })
	if err != nil {
		return classify("listing the project's secrets in Barbican", err)
	}
	return nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.sc.HTTPClient.CloseIdleConnections()
	return nil
}
