package alibaba

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	kms "github.com/alibabacloud-go/kms-20160120/v3/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/watchword-dev/watchword/internal/engine"
)

// OwnerTag is the tag that marks a secret Watchword wrote; its value is
// the owner's ID.
const OwnerTag = "watchword-owner"

type tag struct {
	TagKey   string `json:"TagKey"`
	TagValue string `json:"TagValue"`
}

// describe reads the secret's tags; found is false when it does not exist.
func (c *Client) describe(ctx context.Context, what, key string) (tags map[string]string, found bool, err error) {
	resp, err := kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.DescribeSecretResponse, error) {
		return c.api.DescribeSecretWithOptions(&kms.DescribeSecretRequest{SecretName: tea.String(key), FetchTags: tea.String("true")}, rt)
	})
	if err != nil {
		cerr := c.classify(what+" (reading its tags first)", err)
		if errors.Is(cerr, engine.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, cerr
	}
	tags = map[string]string{}
	if resp.Body != nil && resp.Body.Tags != nil {
		for _, t := range resp.Body.Tags.Tag {
			if t != nil {
				tags[tea.StringValue(t.TagKey)] = tea.StringValue(t.TagValue)
			}
		}
	}
	return tags, true, nil
}

func ownership(what string, tags map[string]string, owner engine.Owner) (adopt bool, err error) {
	marker, found := tags[OwnerTag]
	switch {
	case found && marker == owner.ID:
		return false, nil
	case found:
		return false, fmt.Errorf("%s: it belongs to %q (tag %s), not to %q: %w", what, marker, OwnerTag, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return true, nil
	}
	return false, fmt.Errorf("%s: it exists and carries no %s tag, so Watchword did not create it; set adopt to take it over: %w", what, OwnerTag, engine.ErrNotOwned)
}

// newVersionID is the ID of a version Watchword writes: KMS asks the
// writer for one, unique within the secret.
func newVersionID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "watchword-" + hex.EncodeToString(b)
}

// PutSecret writes the publication's fields as a JSON object: a new
// secret tagged with the owner (CreateSecret), or a new version of a
// secret the owner's tag marks (PutSecretValue), which then takes
// ACSCurrent. Publication tags become tags. An unchanged value adds no
// version.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing secret %q to KMS", key)
	if err := checkName(what, key); err != nil {
		return "", err
	}
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: KMS keeps no Kubernetes labels, annotations or type; use tags: %w", what, engine.ErrNotSupported)
	}
	if _, clash := p.Tags[OwnerTag]; clash {
		return "", fmt.Errorf("%s: tag %q is Watchword's ownership marker and cannot be set by a publication: %w", what, OwnerTag, engine.ErrInvalidConfig)
	}
	m := make(map[string]string, len(p.Fields))
	for k, v := range p.Fields {
		m[k] = string(v)
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("%s: the fields cannot be written as JSON: %w", what, engine.ErrInvalidConfig)
	}
	tags := []tag{{OwnerTag, owner.ID}}
	for k, v := range p.Tags {
		tags = append(tags, tag{k, v})
	}
	tagJSON, _ := json.Marshal(tags)
	have, found, err := c.describe(ctx, what, key)
	if err != nil {
		return "", err
	}
	version := newVersionID()
	if !found {
		_, err = kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.CreateSecretResponse, error) {
			return c.api.CreateSecretWithOptions(&kms.CreateSecretRequest{SecretName: tea.String(key), SecretData: tea.String(string(payload)),
				SecretDataType: tea.String("text"), VersionId: tea.String(version), Tags: tea.String(string(tagJSON))}, rt)
		})
		if err != nil {
			// Rejected.ResourceExist: a concurrent writer created it; the
			// retry finds it and checks its owner.
			return "", c.classify(what+" (creating it)", err)
		}
		return version, nil
	}
	if _, err = ownership(what, have, owner); err != nil {
		return "", err
	}
	for _, t := range tags {
		if v, ok := have[t.TagKey]; !ok || v != t.TagValue {
			_, err = kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.TagResourceResponse, error) {
				return c.api.TagResourceWithOptions(&kms.TagResourceRequest{SecretName: tea.String(key), Tags: tea.String(string(tagJSON))}, rt)
			})
			if err != nil {
				return "", c.classify(what+" (tagging it)", err)
			}
			break
		}
	}
	cur, err := c.GetSecret(ctx, engine.Ref{Key: key})
	switch {
	case err == nil && bytes.Equal(cur.Value, payload):
		return cur.Version, nil
	case err != nil && !errors.Is(err, engine.ErrNotFound):
		return "", fmt.Errorf("%s (reading its current version to compare): %w", what, err)
	}
	_, err = kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.PutSecretValueResponse, error) {
		return c.api.PutSecretValueWithOptions(&kms.PutSecretValueRequest{SecretName: tea.String(key), SecretData: tea.String(string(payload)),
			SecretDataType: tea.String("text"), VersionId: tea.String(version)}, rt)
	})
	if err != nil {
		return "", c.classify(what, err)
	}
	return version, nil
}

// DeleteSecret deletes, without a recovery window, a secret the owner's
// tag marks; a missing secret is already deleted.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting secret %q from KMS", key)
	if err := checkName(what, key); err != nil {
		return err
	}
	have, found, err := c.describe(ctx, what, key)
	if err != nil || !found {
		return err
	}
	if _, err = ownership(what, have, engine.Owner{ID: owner.ID}); err != nil {
		return err
	}
	_, err = kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.DeleteSecretResponse, error) {
		return c.api.DeleteSecretWithOptions(&kms.DeleteSecretRequest{SecretName: tea.String(key), ForceDeleteWithoutRecovery: tea.String("true")}, rt)
	})
	if err != nil {
		if cerr := c.classify(what, err); !errors.Is(cerr, engine.ErrNotFound) {
			return cerr
		}
	}
	return nil
}
