package gcpsm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"regexp"
	"strings"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// OwnerLabel is the label that marks a secret Watchword wrote: its value
// is a digest of the owner's ID (a label value cannot hold the ID itself),
// and the annotation of the same name holds the ID, for people.
const OwnerLabel = "watchword-owner"

// OwnerLabelValue is the label value that marks a secret of owner.
func OwnerLabelValue(ownerID string) string {
	sum := sha256.Sum256([]byte(ownerID))
	return hex.EncodeToString(sum[:])[:62]
}

// Client is a Secret Manager client of one store; safe for concurrent use.
type Client struct {
	api      *secretmanager.Client
	parent   string // projects/P or projects/P/locations/L
	who      string
	regional bool
}

var secretID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,255}$`)

func (c *Client) name(what, key string) (string, error) {
	if !secretID.MatchString(key) {
		// The name is the input of the object that gives it, refused
		// before any call: never the store's configuration or outage.
		return "", failure.Terminalf(failure.RemoteNameInvalid, "%s: a Secret Manager secret ID has 1 to 255 letters, digits, '_' and '-'", what)
	}
	return c.parent + "/secrets/" + key, nil
}

// versionOf is the version part of a version's resource name.
func versionOf(name string) string {
	_, v, _ := strings.Cut(name, "/versions/")
	return v
}

// GetSecret reads one version (a number or an alias; empty: latest).
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	v := ref.Version
	if v == "" {
		v = "latest"
	}
	what := fmt.Sprintf("reading version %q of secret %q", v, ref.Key)
	name, err := c.name(what, ref.Key)
	if err != nil {
		return engine.Object{}, err
	}
	resp, err := c.api.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: name + "/versions/" + v})
	if err != nil {
		return engine.Object{}, c.classify(what, err)
	}
	data := resp.GetPayload().GetData()
	if sum := resp.GetPayload().DataCrc32C; sum != nil && *sum != int64(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))) {
		return engine.Object{}, fmt.Errorf("%s: the payload does not match its checksum (corrupted on the way): %w", what, engine.ErrUnavailable)
	}
	return engine.TextObject(versionOf(resp.GetName()), data), nil
}

// CurrentVersion reads the metadata of the latest version: its number,
// without the payload.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("reading the latest version's metadata of secret %q", key)
	name, err := c.name(what, key)
	if err != nil {
		return "", err
	}
	v, err := c.api.GetSecretVersion(ctx, &secretmanagerpb.GetSecretVersionRequest{Name: name + "/versions/latest"})
	if err != nil {
		return "", c.classify(what, err)
	}
	return versionOf(v.GetName()), nil
}

func fieldsPayload(fields map[string][]byte) ([]byte, error) {
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = string(v)
	}
	return json.Marshal(m)
}

func ownership(what string, labels, annotations map[string]string, owner engine.Owner) (adopt bool, err error) {
	marker, found := labels[OwnerLabel]
	switch {
	case found && marker == OwnerLabelValue(owner.ID):
		return false, nil
	case found:
		who := annotations[OwnerLabel]
		if who == "" {
			who = "another owner"
		} else {
			who = fmt.Sprintf("%q", who)
		}
		return false, fmt.Errorf("%s: it belongs to %s (label %s), not to %q: %w", what, who, OwnerLabel, owner.ID, engine.ErrNotOwned)
	case owner.Adopt:
		return true, nil
	}
	return false, fmt.Errorf("%s: it exists and carries no %s label, so Watchword did not create it; set adopt to take it over: %w", what, OwnerLabel, engine.ErrNotOwned)
}

// PutSecret adds a version holding the publication's fields (a JSON
// object) to a secret it owns, creating the secret, labelled, when it does
// not exist. Publication tags become labels. An unchanged payload adds no
// version.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	what := fmt.Sprintf("writing secret %q to Secret Manager", key)
	name, err := c.name(what, key)
	if err != nil {
		return "", err
	}
	if p.HasMetadata() {
		return "", fmt.Errorf("%s: Secret Manager keeps no Kubernetes labels, annotations or type; use tags (they become labels): %w", what, engine.ErrNotSupported)
	}
	if _, clash := p.Tags[OwnerLabel]; clash {
		return "", fmt.Errorf("%s: label %q is Watchword's ownership marker and cannot be set by a publication: %w", what, OwnerLabel, engine.ErrInvalidConfig)
	}
	payload, err := fieldsPayload(p.Fields)
	if err != nil {
		return "", err
	}
	labels := map[string]string{OwnerLabel: OwnerLabelValue(owner.ID)}
	maps.Copy(labels, p.Tags)
	annotations := map[string]string{OwnerLabel: owner.ID}
	sec, err := c.api.GetSecret(ctx, &secretmanagerpb.GetSecretRequest{Name: name})
	switch {
	case status.Code(err) == codes.NotFound:
		s := &secretmanagerpb.Secret{Labels: labels, Annotations: annotations}
		if !c.regional {
			s.Replication = &secretmanagerpb.Replication{Replication: &secretmanagerpb.Replication_Automatic_{Automatic: &secretmanagerpb.Replication_Automatic{}}}
		}
		if _, cerr := c.api.CreateSecret(ctx, &secretmanagerpb.CreateSecretRequest{Parent: c.parent, SecretId: key, Secret: s}); cerr != nil {
			// AlreadyExists: a concurrent writer created it; the retry finds it.
			return "", c.classify(what+" (creating it)", cerr)
		}
	case err != nil:
		return "", c.classify(what+" (reading its labels first)", err)
	default:
		adopt, oerr := ownership(what, sec.GetLabels(), sec.GetAnnotations(), owner)
		if oerr != nil {
			return "", oerr
		}
		if adopt || !sameLabels(sec.GetLabels(), labels) {
			merged := maps.Clone(sec.GetLabels())
			if merged == nil {
				merged = map[string]string{}
			}
			maps.Copy(merged, labels)
			ann := maps.Clone(sec.GetAnnotations())
			if ann == nil {
				ann = map[string]string{}
			}
			maps.Copy(ann, annotations)
			if _, uerr := c.api.UpdateSecret(ctx, &secretmanagerpb.UpdateSecretRequest{
				Secret:     &secretmanagerpb.Secret{Name: name, Labels: merged, Annotations: ann, Etag: sec.GetEtag()},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels", "annotations"}}}); uerr != nil {
				return "", c.classify(what+" (labelling it)", uerr)
			}
		}
		cur, aerr := c.api.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: name + "/versions/latest"})
		if aerr == nil && bytes.Equal(cur.GetPayload().GetData(), payload) {
			return versionOf(cur.GetName()), nil
		}
		if aerr != nil && status.Code(aerr) != codes.NotFound && status.Code(aerr) != codes.FailedPrecondition {
			return "", c.classify(what+" (reading its latest version to compare)", aerr)
		}
	}
	sum := int64(crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
	v, err := c.api.AddSecretVersion(ctx, &secretmanagerpb.AddSecretVersionRequest{Parent: name,
		Payload: &secretmanagerpb.SecretPayload{Data: payload, DataCrc32C: &sum}})
	if err != nil {
		return "", c.classify(what, err)
	}
	return versionOf(v.GetName()), nil
}

// sameLabels tells whether every label of want is on the secret.
func sameLabels(have, want map[string]string) bool {
	for k, v := range want {
		if h, ok := have[k]; !ok || h != v {
			return false
		}
	}
	return true
}

// DeleteSecret deletes a secret that carries the owner's label, with its
// etag, so that a secret changed in between is not deleted.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	what := fmt.Sprintf("deleting secret %q from Secret Manager", key)
	name, err := c.name(what, key)
	if err != nil {
		return err
	}
	sec, err := c.api.GetSecret(ctx, &secretmanagerpb.GetSecretRequest{Name: name})
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return c.classify(what+" (reading its labels first)", err)
	}
	if _, oerr := ownership(what, sec.GetLabels(), sec.GetAnnotations(), engine.Owner{ID: owner.ID}); oerr != nil {
		return oerr
	}
	err = c.api.DeleteSecret(ctx, &secretmanagerpb.DeleteSecretRequest{Name: name, Etag: sec.GetEtag()})
	if err != nil && status.Code(err) != codes.NotFound {
		return c.classify(what, err)
	}
	return nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.api.Close() }

var (
	deniedPermission = regexp.MustCompile(`Permission '([a-zA-Z.]+)' denied`)
	versionState     = regexp.MustCompile(`is in (DISABLED|DESTROYED) state`)
	oauthError       = regexp.MustCompile(`"error"\s*:\s*"([a-z_]+)"`)
	googleStatus     = regexp.MustCompile(`"status"\s*:\s*"([A-Z_]+)"`)
)

// classify maps an error of a call to the engine's classes. Google's text
// is never repeated beyond its status code, the permission it names and
// the OAuth error codes of a failed token exchange.
func (c *Client) classify(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: Secret Manager did not answer in time: %w", what, engine.ErrUnavailable)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: the call to Secret Manager failed: %w", what, engine.ErrUnavailable)
	}
	msg := st.Message()
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("%s: Secret Manager answered NOT_FOUND: %w", what, engine.ErrNotFound)
	case codes.PermissionDenied:
		perm := ""
		if m := deniedPermission.FindStringSubmatch(msg); m != nil {
			perm = " (permission " + m[1] + "; Secret Manager also answers so for a secret that does not exist)"
		}
		return fmt.Errorf("%s: Secret Manager does not let %s do it%s: grant it a role such as Secret Manager Secret Accessor (reads) or Secret Manager Admin (writes): %w",
			what, c.who, perm, engine.ErrPermissionDenied)
	case codes.Unauthenticated:
		codesSeen := ""
		if m := oauthError.FindStringSubmatch(msg); m != nil {
			codesSeen += " " + m[1]
		}
		if m := googleStatus.FindStringSubmatch(msg); m != nil {
			codesSeen += " " + m[1]
		}
		hint := ""
		switch {
		case strings.Contains(codesSeen, "invalid_target"):
			hint = ": the pool provider (audience) does not exist or is disabled"
		case strings.Contains(codesSeen, "invalid_grant"):
			hint = ": the pool provider does not accept the service account's token (issuer or audience)"
		case strings.Contains(codesSeen, "PERMISSION_DENIED"):
			hint = ": the federated identity may not impersonate the service account (it needs Service Account Token Creator or Workload Identity User)"
		}
		return fmt.Errorf("%s: Google did not accept the credentials of %s (UNAUTHENTICATED%s)%s: %w", what, c.who, codesSeen, hint, engine.ErrUnauthenticated)
	case codes.ResourceExhausted:
		if d, ok := retryDelay(st); ok {
			// The service's hint holds the store (the gate) that long.
			return engine.ThrottledFor(d, fmt.Sprintf("%s: Secret Manager throttled the calls (RESOURCE_EXHAUSTED) and asked to wait %s", what, d))
		}
		return fmt.Errorf("%s: Secret Manager throttled the calls (RESOURCE_EXHAUSTED) after the client's retries: %w", what, engine.ErrThrottled)
	case codes.FailedPrecondition:
		if m := versionState.FindStringSubmatch(msg); m != nil {
			if m[1] == "DESTROYED" {
				return fmt.Errorf("%s: the version was destroyed: %w", what, engine.ErrNotFound)
			}
			return fmt.Errorf("%s: the version is disabled: enable it, or pin another version: %w", what, engine.ErrPermissionDenied)
		}
		return fmt.Errorf("%s: Secret Manager answered FAILED_PRECONDITION: %w", what, engine.ErrUnavailable)
	case codes.InvalidArgument:
		return fmt.Errorf("%s: Secret Manager refused the request as invalid (INVALID_ARGUMENT): check the secret ID, version, labels (lowercase letters, digits, '_' and '-') and location: %w", what, engine.ErrInvalidConfig)
	case codes.AlreadyExists, codes.Aborted:
		return fmt.Errorf("%s: another writer changed it at the same time (%s): %w", what, st.Code(), engine.ErrUnavailable)
	}
	return fmt.Errorf("%s: Secret Manager answered %s: %w", what, st.Code(), engine.ErrUnavailable)
}
