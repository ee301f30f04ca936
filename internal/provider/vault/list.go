package vault

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/watchword-dev/watchword/internal/engine"
)

// The page sizes of a listing that asks for none: a KV v2 page reads the
// metadata of each of its keys, a KV v1 page reads nothing more.
const (
	defaultListLimitV1 = 1000
	defaultListLimitV2 = 100
)

// metadataReads bounds the metadata reads of one KV v2 page in flight at
// once.
const metadataReads = 4

// List lists the secrets under a prefix of the mount, recursively (Vault's
// LIST names one folder's keys and sub-folders at a time), in the order of
// their paths, a page at a time after the last key of the previous page.
// Folders whose keys all come before the page token, or that cannot hold
// the prefix, are not listed. On a KV v2 mount each listed key's metadata
// is read: its current version, and its custom metadata as its tags (which
// the request's tags filter); a key whose current version is deleted or
// destroyed is left out, as a read of it would fail. A KV v1 mount has
// neither versions nor tags: a request by tags is refused.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	if len(req.Tags) > 0 && c.version == "1" {
		return engine.ListPage{}, fmt.Errorf("listing KV v1 mount %q by tags: a KV v1 secret has no custom metadata to filter by: %w", c.mount, engine.ErrNotSupported)
	}
	prefix := strings.TrimLeft(req.Prefix, "/")
	limit := req.Limit
	if limit <= 0 {
		limit = defaultListLimitV2
		if c.version == "1" {
			limit = defaultListLimitV1
		}
	}
	w := walk{c: c, prefix: prefix, after: req.PageToken, want: limit + 1}
	if err := w.folder(ctx, prefix[:strings.LastIndex(prefix, "/")+1]); err != nil {
		return engine.ListPage{}, err
	}
	var page engine.ListPage
	keys := w.keys
	if len(keys) > limit {
		keys = keys[:limit]
		page.NextPageToken = keys[limit-1]
	}
	// Vault's paths have no leading slash, and a read ignores one: the
	// keys listed carry the caller's, so that they are under its prefix.
	lead := req.Prefix[:len(req.Prefix)-len(prefix)]
	if c.version == "1" {
		for _, k := range keys {
			page.Items = append(page.Items, engine.ListItem{Key: lead + k})
		}
		return page, nil
	}
	items, err := c.withMetadata(ctx, keys)
	if err != nil {
		return engine.ListPage{}, err
	}
	for _, it := range items {
		if it.Key != "" && engine.HasTags(it.Tags, req.Tags) {
			it.Key = lead + it.Key
			page.Items = append(page.Items, it)
		}
	}
	return page, nil
}

// walk gathers, in path order, the keys under prefix that come after the
// token, until it has want of them.
type walk struct {
	c      *Client
	prefix string
	after  string
	want   int
	keys   []string
}

// folder lists one folder (a path ending in "/", or "" for the mount's
// root) and walks its sub-folders in order. Sorting each folder's entries
// with a folder's trailing "/" puts every key in path order: the keys of a
// sub-folder all begin with its name.
func (w *walk) folder(ctx context.Context, dir string) error {
	entries, err := w.c.listFolder(ctx, dir)
	if err != nil {
		return err
	}
	slices.Sort(entries)
	for _, e := range entries {
		if len(w.keys) == w.want {
			return nil
		}
		full := dir + e
		if !strings.HasPrefix(full, w.prefix) && !strings.HasPrefix(w.prefix, full) {
			continue
		}
		if strings.HasSuffix(e, "/") {
			// Every key under full sorts before a token that sorts after
			// full and does not begin with it.
			if w.after != "" && full < w.after && !strings.HasPrefix(w.after, full) {
				continue
			}
			if err := w.folder(ctx, full); err != nil {
				return err
			}
			continue
		}
		if full > w.after && strings.HasPrefix(full, w.prefix) {
			w.keys = append(w.keys, full)
		}
	}
	return nil
}

// listFolder names the keys and sub-folders ("name/") of one folder; a
// folder that does not exist holds none.
func (c *Client) listFolder(ctx context.Context, dir string) ([]string, error) {
	path := c.mount + "/" + dir
	if c.version == "2" {
		path = c.mount + "/metadata/" + dir
	}
	var out struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	err := c.call(ctx, "LIST", path, nil, nil, &out)
	if isStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(fmt.Sprintf("listing folder %q of KV v%s mount %q", dir, c.version, c.mount), err)
	}
	return out.Data.Keys, nil
}

// withMetadata reads the metadata of each key, a few at a time, and
// returns one item per key: the key's current version and custom
// metadata, or an empty item for a key that went, or whose current
// version is deleted or destroyed.
func (c *Client) withMetadata(ctx context.Context, keys []string) ([]engine.ListItem, error) {
	items := make([]engine.ListItem, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(metadataReads)
	for i, key := range keys {
		g.Go(func() error {
			var out struct {
				Data struct {
					CurrentVersion int                   `json:"current_version"`
					CustomMetadata map[string]string     `json:"custom_metadata"`
					Versions       map[string]kvMetadata `json:"versions"`
				} `json:"data"`
			}
			err := c.call(gctx, http.MethodGet, c.mount+"/metadata/"+key, nil, nil, &out)
			if isStatus(err, http.StatusNotFound) {
				return nil
			}
			if err != nil {
				return classify(c.where(key)+" metadata, for a listing", err)
			}
			cur := strconv.Itoa(out.Data.CurrentVersion)
			if v, ok := out.Data.Versions[cur]; ok && (v.Destroyed || deletedBy(v.DeletionTime, time.Now())) {
				return nil
			}
			items[i] = engine.ListItem{Key: key, Version: cur, Tags: out.Data.CustomMetadata}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return items, nil
}

// deletedBy tells whether a version whose deletion_time is t is deleted at
// now. Vault sets a deletion time in the future on every version of a
// mount or secret with delete_version_after: such a version is readable
// until then, and is listed.
func deletedBy(t string, now time.Time) bool {
	if t == "" {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, t)
	return err != nil || !at.After(now)
}
