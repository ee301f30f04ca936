package vault

import (
	"context"
	"net/http"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// GetMetadata reads the custom metadata of a KV v2 secret
// (metadataPolicy Fetch): one field per entry, so that a property selects
// one, and the object has no Value, so that an entry without property gets
// them all as one JSON object. It reads the data path, the one a reader's
// policy grants, which answers with the version's metadata; a pinned
// version must exist and not be deleted, as in GetSecret. The custom
// metadata belongs to the secret, not to a version.
func (c *Client) GetMetadata(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	key := strings.Trim(ref.Key, "/")
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
	if err := c.call(ctx, http.MethodGet, c.dataPath(key), q, nil, &out); err != nil {
		return engine.Object{}, c.explainMissing(key, ref.Version, err)
	}
	if out.Data.Data == nil {
		return engine.Object{}, deletedError(c.where(key), out.Data.Metadata)
	}
	fields := make(map[string][]byte, len(out.Data.Metadata.CustomMetadata))
	for k, v := range out.Data.Metadata.CustomMetadata {
		fields[k] = []byte(v)
	}
	return engine.Object{Fields: fields}, nil
}
