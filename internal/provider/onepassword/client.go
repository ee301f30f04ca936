package onepassword

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/1Password/connect-sdk-go/connect"
	op "github.com/1Password/connect-sdk-go/onepassword"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// OwnerField is the label of the field that marks an item Watchword
// wrote, with the ID of the object that owns it. Reads leave it out.
const OwnerField = "watchword-owner"

// passwordField is the field a read without a property gets, as External
// Secrets Operator's provider does.
const passwordField = "password"

// itemCategory is the category of the items Watchword creates.
const itemCategory = op.ApiCredential

// maxFileBytes bounds the content of a file that a read loads.
const maxFileBytes = 1 << 20

// Client is a Connect client of one store. It is safe for concurrent use.
type Client struct {
	api    connect.Client
	host   string
	who    string
	vaults []string // names or IDs, in priority order

	mu  sync.Mutex
	ids []string // the vaults' IDs, once resolved

	// writes serializes this client's writes: Connect has no conditional
	// write, so two writes of one client would otherwise race.
	writes sync.Mutex
}

var idShape = regexp.MustCompile(`^[a-z0-9]{26}$`)

// vaultIDs resolves the store's vaults to their IDs, once.
func (c *Client) vaultIDs(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	ids := c.ids
	c.mu.Unlock()
	if ids != nil {
		return ids, nil
	}
	ids = make([]string, 0, len(c.vaults))
	for _, name := range c.vaults {
		if idShape.MatchString(name) {
			ids = append(ids, name)
			continue
		}
		what := fmt.Sprintf("looking up vault %q", name)
		found, err := provider.CallWithoutContext(ctx, func() ([]op.Vault, error) { return c.api.GetVaultsByTitle(name) })
		if err != nil {
			return nil, c.classify(what, err)
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("%s: no vault of that name is visible to %s: check the name in onepassword.vaults, and that the token may use the vault: %w", what, c.who, engine.ErrPermissionDenied)
		case 1:
			ids = append(ids, found[0].ID)
		default:
			return nil, fmt.Errorf("%s: %d vaults have that name: name the vault by its ID in onepassword.vaults: %w", what, len(found), engine.ErrInvalidConfig)
		}
	}
	c.mu.Lock()
	c.ids = ids
	c.mu.Unlock()
	return ids, nil
}

// lookup finds the item of key (an ID or a title) in one vault; nil when
// it has none.
func (c *Client) lookup(ctx context.Context, what, key, vaultID string) (*op.Item, error) {
	if idShape.MatchString(key) {
		it, err := provider.CallWithoutContext(ctx, func() (*op.Item, error) { return c.api.GetItemByUUID(key, vaultID) })
		switch {
		case err == nil:
			return it, nil
		case !isStatus(err, 404):
			return nil, c.classify(what, err)
		}
	}
	items, err := provider.CallWithoutContext(ctx, func() ([]op.Item, error) { return c.api.GetItemsByTitle(key, vaultID) })
	if err != nil {
		if isStatus(err, 404) {
			// The item went between the listing and its read.
			return nil, nil
		}
		return nil, c.classify(what, err)
	}
	switch len(items) {
	case 0:
		return nil, nil
	case 1:
		return &items[0], nil
	}
	return nil, fmt.Errorf("%s: vault %q holds %d items titled so: rename all but one, or name the item by its ID", what, vaultID, len(items))
}

// find finds the item of key in the first vault, in priority order, that
// holds one; nil when none does.
func (c *Client) find(ctx context.Context, what, key string) (*op.Item, error) {
	if key == "" {
		return nil, fmt.Errorf("%s: the key is empty: name an item by its title or ID: %w", what, engine.ErrNotFound)
	}
	ids, err := c.vaultIDs(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		it, err := c.lookup(ctx, what, key, id)
		if err != nil || it != nil {
			return it, err
		}
	}
	return nil, nil
}

func (c *Client) notFound(what string) error {
	return fmt.Errorf("%s: no item of that title or ID in vaults %s: %w", what, strings.Join(c.vaults, ", "), engine.ErrNotFound)
}

// GetSecret reads an item: its fields by label and its files by name
// (the first of a label or name that repeats). Without a property, the
// value is the field labelled "password". Connect serves only an item's
// current version: a pinned read of another fails with ErrNotFound.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	what := fmt.Sprintf("reading item %q", ref.Key)
	it, err := c.find(ctx, what, ref.Key)
	if err != nil {
		return engine.Object{}, err
	}
	if it == nil {
		return engine.Object{}, c.notFound(what)
	}
	version := strconv.Itoa(it.Version)
	if ref.Version != "" && ref.Version != version {
		return engine.Object{}, fmt.Errorf("%s: version %q was asked, and Connect serves only the current version %s: %w", what, ref.Version, version, engine.ErrNotFound)
	}
	fields := map[string][]byte{}
	for _, f := range it.Fields {
		if f == nil || f.Label == "" || f.Label == OwnerField {
			continue
		}
		if _, dup := fields[f.Label]; !dup {
			fields[f.Label] = []byte(f.Value)
		}
	}
	for _, f := range it.Files {
		if f == nil || f.Name == "" {
			continue
		}
		if _, dup := fields[f.Name]; dup {
			continue
		}
		if f.Size > maxFileBytes {
			return engine.Object{}, fmt.Errorf("%s: file %q has %d bytes, more than the %d a read loads: %w", what, f.Name, f.Size, maxFileBytes, engine.ErrInvalidConfig)
		}
		content, err := provider.CallWithoutContext(ctx, func() ([]byte, error) { return c.api.GetFileContent(f) })
		if err != nil {
			return engine.Object{}, c.classify(fmt.Sprintf("%s: reading file %q", what, f.Name), err)
		}
		fields[f.Name] = content
	}
	return engine.Object{Version: version, Value: fields[passwordField], Fields: fields}, nil
}

// CurrentVersion tells an item's version. Connect's item listing is the
// only answer without values, and the SDK reads every item of a title it
// finds: this reads the item, as GetSecret does, without its files.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("reading the version of item %q", key)
	it, err := c.find(ctx, what, key)
	if err != nil {
		return "", err
	}
	if it == nil {
		return "", c.notFound(what)
	}
	return strconv.Itoa(it.Version), nil
}

// List lists the items of the vaults by title (an item whose title an
// earlier vault also has is left out: reads find the earlier one), with
// their versions, from Connect's item summaries: never a value. Connect
// lists a vault whole: a page is cut from the sorted titles, and its
// token is the last title it holds. 1Password's tags are words, not
// key-value pairs: a request with tags is refused.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	what := fmt.Sprintf("listing the items under %q of vaults %s", req.Prefix, strings.Join(c.vaults, ", "))
	if len(req.Tags) > 0 {
		return engine.ListPage{}, fmt.Errorf("%s: 1Password items carry tags as words, not key-value pairs, so this store lists by name only: %w", what, engine.ErrNotSupported)
	}
	ids, err := c.vaultIDs(ctx)
	if err != nil {
		return engine.ListPage{}, err
	}
	versions := map[string]string{}
	for _, id := range ids {
		items, err := provider.CallWithoutContext(ctx, func() ([]op.Item, error) { return c.api.GetItems(id) })
		if err != nil {
			return engine.ListPage{}, c.classify(what, err)
		}
		for _, it := range items {
			if _, seen := versions[it.Title]; !seen && it.Title != "" && strings.HasPrefix(it.Title, req.Prefix) {
				versions[it.Title] = strconv.Itoa(it.Version)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(versions))
	start := 0
	if req.PageToken != "" {
		start, _ = slices.BinarySearch(keys, req.PageToken)
		if start < len(keys) && keys[start] == req.PageToken {
			start++
		}
	}
	var page engine.ListPage
	for i := start; i < len(keys); i++ {
		if req.Limit > 0 && len(page.Items) == req.Limit {
			page.NextPageToken = keys[i-1]
			break
		}
		page.Items = append(page.Items, engine.ListItem{Key: keys[i], Version: versions[keys[i]]})
	}
	return page, nil
}

// marker returns the owner an item's ownership field names.
func marker(it *op.Item) (string, bool) {
	for _, f := range it.Fields {
		if f != nil && f.Label == OwnerField {
			return f.Value, true
		}
	}
	return "", false
}

// ownership decides whether owner may write (or delete) an item whose
// ownership field is mark (found: it has one).
func ownership(what, mark string, found bool, owner engine.Owner) error {
	switch {
	case found && mark == owner.ID:
		return nil
	case found:
		return fmt.Errorf("%s: it belongs to %q (field %s), not to %q: %w", what, mark, OwnerField, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return nil
	}
	return fmt.Errorf("%s: it exists and has no %s field, so Watchword did not create it; set adopt to take it over: %w", what, OwnerField, engine.ErrNotOwned)
}

// itemFields are the fields of a publication as an item holds them
// (concealed, sorted by label), with the ownership field.
func itemFields(what string, p engine.Publication, owner engine.Owner) ([]*op.ItemField, error) {
	if p.HasMetadata() || len(p.Tags) > 0 {
		return nil, fmt.Errorf("%s: 1Password keeps no labels, annotations, type or key-value tags with an item: %w", what, engine.ErrNotSupported)
	}
	if _, clash := p.Fields[OwnerField]; clash {
		return nil, fmt.Errorf("%s: field %q is Watchword's ownership marker and cannot be published: %w", what, OwnerField, engine.ErrInvalidConfig)
	}
	out := []*op.ItemField{}
	for _, label := range slices.Sorted(maps.Keys(p.Fields)) {
		v := p.Fields[label]
		if !utf8.Valid(v) {
			return nil, fmt.Errorf("%s: field %q is not UTF-8 text, and a 1Password field holds text only: encode it (base64) before publishing: %w", what, label, engine.ErrInvalidConfig)
		}
		if label == "" {
			return nil, fmt.Errorf("%s: a field has an empty name: %w", what, engine.ErrInvalidConfig)
		}
		out = append(out, &op.ItemField{Type: op.FieldTypeConcealed, Label: label, Value: string(v)})
	}
	out = append(out, &op.ItemField{Type: op.FieldTypeString, Label: OwnerField, Value: owner.ID})
	return out, nil
}

// sameFields tells whether an item already holds exactly these fields.
func sameFields(have, want []*op.ItemField) bool {
	if len(have) != len(want) {
		return false
	}
	m := map[string]string{}
	for _, f := range have {
		if f == nil {
			return false
		}
		m[f.Label] = f.Value
	}
	for _, f := range want {
		if v, ok := m[f.Label]; !ok || v != f.Value {
			return false
		}
	}
	return len(m) == len(want)
}

// PutSecret writes the publication's fields as the item's fields, with
// the ownership field: it creates the item (in the vault searched first)
// or replaces the fields of the one reads find, which must carry the
// owner's marker (or none, with adopt). Writing what the item already
// holds makes no new version. Connect has no conditional write: this
// client's writes are serialized, and two clients racing each write a
// whole item, the last one winning.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing item %q to 1Password", key)
	fields, err := itemFields(what, p, owner)
	if err != nil {
		return "", err
	}
	c.writes.Lock()
	defer c.writes.Unlock()
	it, err := c.find(ctx, what+" (reading it first)", key)
	if err != nil {
		return "", err
	}
	if it == nil {
		ids, verr := c.vaultIDs(ctx)
		if verr != nil {
			return "", verr
		}
		if idShape.MatchString(key) {
			return "", fmt.Errorf("%s: the key has the shape of an item ID, and no item has it; a new item needs a title: %w", what, engine.ErrNotFound)
		}
		item := &op.Item{Title: key, Category: itemCategory, Vault: op.ItemVault{ID: ids[0]}, Fields: fields}
		made, cerr := provider.CallWithoutContext(ctx, func() (*op.Item, error) { return c.api.CreateItem(item, ids[0]) })
		if cerr != nil {
			return "", c.classify(what, cerr)
		}
		return strconv.Itoa(made.Version), nil
	}
	mark, found := marker(it)
	if oerr := ownership(what, mark, found, owner); oerr != nil {
		return "", oerr
	}
	if sameFields(it.Fields, fields) && len(it.Files) == 0 {
		return strconv.Itoa(it.Version), nil
	}
	if len(it.Files) > 0 {
		return "", fmt.Errorf("%s: the item has files, which Connect cannot write: publish to another item: %w", what, engine.ErrNotSupported)
	}
	it.Fields = fields
	made, err := provider.CallWithoutContext(ctx, func() (*op.Item, error) { return c.api.UpdateItem(it, it.Vault.ID) })
	if err != nil {
		return "", c.classify(what, err)
	}
	return strconv.Itoa(made.Version), nil
}

// DeleteSecret deletes the item reads find, if it carries the owner's
// marker. 1Password keeps a deleted item in the vault's recently deleted
// items for 30 days.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting item %q from 1Password", key)
	c.writes.Lock()
	defer c.writes.Unlock()
	it, err := c.find(ctx, what+" (reading it first)", key)
	if err != nil || it == nil {
		return err
	}
	mark, found := marker(it)
	if !found || mark != owner.ID {
		return ownership(what, mark, found, engine.Owner{ID: owner.ID})
	}
	if _, err := provider.CallWithoutContext(ctx, func() (struct{}, error) { return struct{}{}, c.api.DeleteItem(it, it.Vault.ID) }); err != nil && !isStatus(err, 404) {
		return c.classify(what, err)
	}
	return nil
}
