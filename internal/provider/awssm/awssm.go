// Package awssm is the provider of AWS Secrets Manager, on the official
// SDK (aws-sdk-go-v2). remoteRef.key is a secret's name or ARN and
// remoteRef.version a version ID or a staging label (AWSCURRENT,
// AWSPREVIOUS, a custom one). It reads text and binary secrets, batches
// reads with BatchGetSecretValue, checks versions with DescribeSecret, lists
// with ListSecrets (list.go), and
// publishes with CreateSecret/PutSecretValue, marking what it creates with
// an ownership tag.
package awssm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
)

// BatchLimit is the most secrets one BatchGetSecretValue call takes.
const BatchLimit = 20

// Factory builds Secrets Manager clients.
type Factory struct {
	// HTTPClient, when set, is the SDK's HTTP client (tests).
	HTTPClient aws.HTTPClient
}

var _ provider.Factory = Factory{}

// Validate checks the block without I/O.
func (Factory) Validate(store provider.Store) error { return awsbase.Validate(store) }

// Refs names the credentials of the block.
func (Factory) Refs(store provider.Store) []provider.ObjectRef { return awsbase.Refs(store) }

// New builds the client. It does not call AWS.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	s, err := awsbase.NewSession(ctx, store, deps, f.HTTPClient)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{s: s, api: secretsmanager.NewFromConfig(s.Config, func(o *secretsmanager.Options) {
		o.BaseEndpoint = s.BaseEndpoint()
		s.EndpointOptions(&o.EndpointOptions.UseFIPSEndpoint, &o.EndpointOptions.UseDualStackEndpoint)
	}), tokens: awsbase.NewRegistryTokens(s)}
	return c.Ops(), nil
}

// Client reads and writes the secrets of one store.
type Client struct {
	s   *awsbase.Session
	api *secretsmanager.Client
	// tokens issues ECR pull tokens (dataFrom registryToken).
	tokens *awsbase.RegistryTokens
}

// Ops are the client's operations.
func (c *Client) Ops() engine.Ops {
	return engine.Ops{Reader: c, Batch: c, BatchLimit: BatchLimit, Versions: c, Lister: c, Writer: c, Checker: c, Leaser: c.tokens}
}

// versionID tells a version ID from a staging label: IDs are 32 to 64
// characters of a UUID's alphabet, labels are names such as AWSCURRENT.
var versionID = regexp.MustCompile(`^[0-9a-fA-F-]{32,64}$`)

// GetSecret reads one secret, at a version ID or staging label when the
// ref names one.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	in := &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref.Key)}
	switch {
	case ref.Version == "":
	case versionID.MatchString(ref.Version):
		in.VersionId = aws.String(ref.Version)
	default:
		in.VersionStage = aws.String(ref.Version)
	}
	out, err := c.api.GetSecretValue(ctx, in)
	if err != nil {
		return engine.Object{}, c.s.Classify(readWhat(ref), err)
	}
	return object(aws.ToString(out.VersionId), out.SecretString, out.SecretBinary), nil
}

func readWhat(ref engine.Ref) string {
	if ref.Version == "" {
		return fmt.Sprintf("reading secret %q from AWS Secrets Manager", ref.Key)
	}
	return fmt.Sprintf("reading secret %q at version %q from AWS Secrets Manager", ref.Key, ref.Version)
}

func object(version string, text *string, binary []byte) engine.Object {
	if text == nil {
		return engine.Object{Version: version, Value: binary}
	}
	return engine.TextObject(version, []byte(*text))
}

// GetSecrets reads the current versions of up to BatchLimit secrets with
// one BatchGetSecretValue call; a ref pinned to a version is read on its
// own, as the batch call reads current versions only. A secret the answer
// does not mention is a provider error of its own.
func (c *Client) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	items := make([]engine.BatchItem, len(refs))
	var ids []string
	for i, r := range refs {
		if r.Version != "" {
			obj, err := c.GetSecret(ctx, r)
			items[i] = engine.BatchItem{Object: obj, Err: err}
			continue
		}
		if !slices.Contains(ids, r.Key) {
			ids = append(ids, r.Key)
		}
	}
	found := map[string]engine.BatchItem{}
	for len(ids) > 0 {
		n := min(len(ids), BatchLimit)
		if err := c.batch(ctx, ids[:n], found); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	for i, r := range refs {
		if r.Version != "" {
			continue
		}
		item, ok := found[r.Key]
		if !ok {
			// The store answered, only not about this secret: not an
			// outage.
			item.Err = failure.Retryf(failure.ProviderError, "%s: AWS Secrets Manager answered BatchGetSecretValue without this secret, neither as a value nor as an error", readWhat(r))
		}
		items[i] = item
	}
	return items, nil
}

// batch reads ids with BatchGetSecretValue and files each answer under the
// id it was asked by (a name or an ARN).
func (c *Client) batch(ctx context.Context, ids []string, found map[string]engine.BatchItem) error {
	in := &secretsmanager.BatchGetSecretValueInput{SecretIdList: ids}
	for {
		out, err := c.api.BatchGetSecretValue(ctx, in)
		if err != nil {
			return c.s.Classify(fmt.Sprintf("reading %d secrets from AWS Secrets Manager in one batch", len(ids)), err)
		}
		for _, v := range out.SecretValues {
			for _, id := range ids {
				if id == aws.ToString(v.Name) || id == aws.ToString(v.ARN) {
					found[id] = engine.BatchItem{Object: object(aws.ToString(v.VersionId), v.SecretString, v.SecretBinary)}
				}
			}
		}
		for _, e := range out.Errors {
			id := aws.ToString(e.SecretId)
			found[id] = engine.BatchItem{Err: c.s.Classify(readWhat(engine.Ref{Key: id}), itemError{code: aws.ToString(e.ErrorCode)})}
		}
		if out.NextToken == nil {
			return nil
		}
		in.NextToken = out.NextToken
	}
}

// itemError is the error of one secret of a batch answer, as an API error
// whose code is classified like a call's; AWS's message is not kept.
type itemError struct{ code string }

func (e itemError) Error() string                 { return "AWS answered " + e.code }
func (e itemError) ErrorCode() string             { return e.code }
func (e itemError) ErrorMessage() string          { return "" }
func (e itemError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }

// CurrentVersion is the ID of the version labelled AWSCURRENT, read with
// DescribeSecret (no value is read).
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	out, err := c.api.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(key)})
	if err != nil {
		return "", c.s.Classify(fmt.Sprintf("describing secret %q in AWS Secrets Manager", key), err)
	}
	if out.DeletedDate != nil {
		return "", fmt.Errorf("secret %q in AWS Secrets Manager is scheduled for deletion: %w", key, engine.ErrNotFound)
	}
	if v := current(out.VersionIdsToStages); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("secret %q in AWS Secrets Manager has no version labelled AWSCURRENT: %w", key, engine.ErrNotFound)
}

func current(stages map[string][]string) string {
	for id, labels := range stages {
		if slices.Contains(labels, "AWSCURRENT") {
			return id
		}
	}
	return ""
}

// Check verifies the credentials without reading a secret
// (sts:GetCallerIdentity).
func (c *Client) Check(ctx context.Context) error { return c.s.Check(ctx) }

// PutSecret writes the publication's fields as a JSON object: it creates
// the secret with the ownership tag, or writes a new version of a secret
// that carries the owner's tag (or, with adopt, none), and applies the
// publication's tags.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing secret %q to AWS Secrets Manager", key)
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: Secrets Manager keeps no labels, annotations or type; use tags: %w", what, engine.ErrNotSupported)
	}
	text, err := awsbase.FieldsText(p.Fields)
	if err != nil {
		return "", err
	}
	tags, err := awsbase.Tags(owner, p.Tags)
	if err != nil {
		return "", err
	}
	var smTags []types.Tag
	for _, t := range tags {
		smTags = append(smTags, types.Tag{Key: aws.String(t[0]), Value: aws.String(t[1])})
	}
	desc, err := c.api.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(key)})
	if err != nil {
		err = c.s.Classify(what, err)
		if !isNotFound(err) {
			return "", err
		}
		in := &secretsmanager.CreateSecretInput{Name: aws.String(key), SecretString: aws.String(text), Tags: smTags,
			ClientRequestToken: aws.String(requestToken("", text))}
		if c.s.KMSKeyID != "" {
			in.KmsKeyId = aws.String(c.s.KMSKeyID)
		}
		created, cerr := c.api.CreateSecret(ctx, in)
		if cerr != nil {
			// ResourceExistsException: a concurrent writer created it
			// first; the retry will find it.
			return "", c.s.Classify(what, cerr)
		}
		return aws.ToString(created.VersionId), nil
	}
	marker, found := tagValue(desc.Tags, awsbase.OwnerTag)
	if _, err = awsbase.Ownership(fmt.Sprintf("writing secret %q in AWS Secrets Manager", key), marker, found, owner); err != nil {
		return "", err
	}
	if !sameTags(desc.Tags, smTags) {
		if _, err = c.api.TagResource(ctx, &secretsmanager.TagResourceInput{SecretId: aws.String(key), Tags: smTags}); err != nil {
			return "", c.s.Classify(what+" (tagging it)", err)
		}
	}
	cur := current(desc.VersionIdsToStages)
	if cur != "" {
		// Writing what the secret holds makes no new version.
		now, gerr := c.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(key), VersionId: aws.String(cur)})
		if gerr != nil {
			return "", c.s.Classify(what+" (reading its current version to compare)", gerr)
		}
		if now.SecretString != nil && *now.SecretString == text {
			return cur, nil
		}
	}
	out, err := c.api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(key), SecretString: aws.String(text),
		ClientRequestToken: aws.String(requestToken(cur, text))})
	if err != nil {
		return "", c.s.Classify(what, err)
	}
	return aws.ToString(out.VersionId), nil
}

// requestToken is the idempotency token of a write: a retry of the same
// text over the same current version is the same request, which Secrets
// Manager answers without making a second version.
func requestToken(currentVersion, text string) string {
	h := sha256.Sum256([]byte(currentVersion + "\x00" + text))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// DeleteSecret deletes a secret that carries the owner's tag, at once
// (without a recovery window, so that a later publication may create it
// again).
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting secret %q from AWS Secrets Manager", key)
	desc, err := c.api.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(key)})
	if err != nil {
		if err = c.s.Classify(what, err); isNotFound(err) {
			return nil
		}
		return err
	}
	marker, found := tagValue(desc.Tags, awsbase.OwnerTag)
	if !found || marker != owner.ID {
		_, err = awsbase.Ownership(what, marker, found, engine.Owner{ID: owner.ID})
		return err
	}
	_, err = c.api.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String(key), ForceDeleteWithoutRecovery: aws.Bool(true)})
	if err = c.s.Classify(what, err); isNotFound(err) {
		return nil
	}
	return err
}

func tagValue(tags []types.Tag, key string) (string, bool) {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value), true
		}
	}
	return "", false
}

// sameTags tells whether every tag of want is already on the secret.
func sameTags(have, want []types.Tag) bool {
	for _, w := range want {
		if v, ok := tagValue(have, aws.ToString(w.Key)); !ok || v != aws.ToString(w.Value) {
			return false
		}
	}
	return true
}
