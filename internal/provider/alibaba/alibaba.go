// Package alibaba is a provider for Alibaba Cloud KMS Secrets Manager, on
// Alibaba's official Go SDK (kms-20160120). It reads secrets by name, at a
// version stage (ACSCurrent, ACSPrevious or a custom stage) or a version
// ID, a JSON object value as fields (for property and dataFrom), and tells
// the current version from the list of version IDs without reading the
// value. For publishing, it writes and deletes secrets that carry its
// owner tag. It authenticates with a RAM user's AccessKey pair read from
// a Secret, or with RRSA: a token of a Kubernetes service account
// exchanged for a RAM role's temporary credentials.
package alibaba

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	kms "github.com/alibabacloud-go/kms-20160120/v3/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds KMS Secrets Manager clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks what CEL cannot.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Alibaba
	if (spec.Auth.SecretRef == nil) == (spec.Auth.RRSA == nil) {
		return fmt.Errorf("%w: alibaba.auth must set exactly one of secretRef or rrsa", engine.ErrInvalidConfig)
	}
	for field, raw := range map[string]string{"alibaba.endpoint": spec.Endpoint, "alibaba.stsEndpoint": spec.STSEndpoint} {
		if raw != "" {
			if _, _, err := endpoint(raw, field); err != nil {
				return err
			}
		}
	}
	return nil
}

// Refs names the Secret keys of the AccessKey pair and the service
// account of RRSA.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	a := store.Spec.Alibaba.Auth
	var out []provider.ObjectRef
	if s := a.SecretRef; s != nil {
		out = append(out,
			provider.SecretKeyRef("alibaba.auth.secretRef.accessKeyID", s.AccessKeyID),
			provider.SecretKeyRef("alibaba.auth.secretRef.accessKeySecret", s.AccessKeySecret))
	}
	if r := a.RRSA; r != nil {
		out = append(out, provider.ServiceAccountRef("alibaba.auth.rrsa.serviceAccountRef", r.ServiceAccountRef))
	}
	return out
}

// endpoint splits an endpoint URL into the SDK's protocol and host.
func endpoint(raw, field string) (protocol, host string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return "", "", fmt.Errorf("%w: %s must be a URL of a host alone, such as https://kms-vpc.cn-hangzhou.aliyuncs.com", engine.ErrInvalidConfig, field)
	}
	return strings.ToUpper(u.Scheme), u.Host, nil
}

// New builds the client: it reads the AccessKey pair, or prepares the
// RRSA exchange, made at the first call; no call is made here.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.Alibaba
	cfg := &openapi.Config{RegionId: tea.String(spec.RegionID)}
	var who string
	if ref := spec.Auth.SecretRef; ref != nil {
		id, err := deps.SecretValue(ctx, ref.AccessKeyID)
		if err != nil {
			return engine.Ops{}, err
		}
		secret, err := deps.SecretValue(ctx, ref.AccessKeySecret)
		if err != nil {
			return engine.Ops{}, err
		}
		keyID := strings.TrimSpace(string(id))
		if keyID == "" || len(secret) == 0 {
			return engine.Ops{}, fmt.Errorf("%w: alibaba.auth.secretRef: the AccessKey ID or secret in Secret %q is empty", engine.ErrInvalidConfig, ref.AccessKeyID.Name)
		}
		cfg.AccessKeyId, cfg.AccessKeySecret = tea.String(keyID), tea.String(strings.TrimSpace(string(secret)))
		// The AccessKey ID names the caller in messages; it is not a
		// secret (Alibaba Cloud shows it in logs and the console).
		who = fmt.Sprintf("AccessKey %q (from Secret %q)", keyID, ref.AccessKeyID.Name)
	} else {
		cred, w, err := newRRSA(store, deps)
		if err != nil {
			return engine.Ops{}, err
		}
		cfg.Credential, who = cred, w
	}
	host := "kms." + spec.RegionID + ".aliyuncs.com"
	if spec.Endpoint != "" {
		protocol, h, _ := endpoint(spec.Endpoint, "alibaba.endpoint")
		cfg.Protocol, cfg.Endpoint, host = tea.String(protocol), tea.String(h), h
	}
	api, err := kms.NewClient(cfg)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("%w: alibaba: the KMS client cannot be built for region %q", engine.ErrInvalidConfig, spec.RegionID)
	}
	c := &Client{api: api, host: host, who: who, lock: lockFor(host, kmsConnectMS, kmsReadMS)}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Writer: c}, nil
}

// Client reads secrets of one store; safe for concurrent use.
type Client struct {
	api  *kms.Client
	host string
	who  string
	lock *sync.Mutex
}

// CurrentStage is the stage of a secret's current version.
const CurrentStage = "ACSCurrent"

// stagePrefix marks a custom version stage in remoteRef.version.
const stagePrefix = "stage:"

// A secret name: letters, digits, '_', '/', '+', '=', '.', '@', '-', up to
// 192 characters (the documented limit of CreateSecret).
var secretName = regexp.MustCompile(`^[a-zA-Z0-9_/+=.@-]{1,192}$`)

func checkName(what, key string) error {
	if !secretName.MatchString(key) {
		// The name is the input of the object that gives it, refused
		// before any call: never the store's configuration or outage.
		return failure.Terminalf(failure.RemoteNameInvalid, "%s: a KMS secret name has 1 to 192 letters, digits and _/+=.@-", what)
	}
	return nil
}

// The SDK's HTTP layer (tea) keeps one http.Client per endpoint and
// timeouts, shared by every SDK client of the process, and rewrites its
// Timeout on every call while other calls read it; the SDK client also
// clears a field of its own on every call. Neither is safe for concurrent
// use (the race detector reports both), so the calls through one such
// http.Client are made one at a time, under a lock of its own. The
// timeouts are fixed, so that there is one http.Client per endpoint
// (tea keys its pool by them); STS's differ from KMS's so that an
// exchange made inside a KMS call never waits on that call's lock.
var (
	kmsConnectMS, kmsReadMS = 5000, int(engine.CallTimeout.Milliseconds())
	stsConnectMS, stsReadMS = 4000, int(engine.CallTimeout.Milliseconds())
	callLocks               sync.Map // tea's pool tag → *sync.Mutex
)

func lockFor(host string, connectMS, readMS int) *sync.Mutex {
	l, _ := callLocks.LoadOrStore(fmt.Sprintf("%s|%d|%d", host, connectMS, readMS), &sync.Mutex{})
	return l.(*sync.Mutex)
}

// call makes one SDK call under its http.Client's lock, unless the
// context ended while it waited.
func call[T any](ctx context.Context, l *sync.Mutex, connectMS, readMS int, fn func(*util.RuntimeOptions) (T, error)) (T, error) {
	l.Lock()
	defer l.Unlock()
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	return fn(&util.RuntimeOptions{ConnectTimeout: tea.Int(connectMS), ReadTimeout: tea.Int(readMS)})
}

// kmsCall is call for the store's KMS client.
func kmsCall[T any](ctx context.Context, c *Client, fn func(*util.RuntimeOptions) (T, error)) (T, error) {
	return call(ctx, c.lock, kmsConnectMS, kmsReadMS, fn)
}

// GetSecret reads one version of a secret: by stage (ACSCurrent,
// ACSPrevious, stage:NAME) or by version ID; empty is ACSCurrent.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	req := &kms.GetSecretValueRequest{SecretName: tea.String(ref.Key)}
	var what string
	switch v := ref.Version; {
	case v == "" || v == CurrentStage || v == "ACSPrevious":
		stage := v
		if stage == "" {
			stage = CurrentStage
		}
		req.VersionStage = tea.String(stage)
		what = fmt.Sprintf("reading stage %s of secret %q", stage, ref.Key)
	case strings.HasPrefix(v, stagePrefix):
		stage := strings.TrimPrefix(v, stagePrefix)
		if stage == "" {
			return engine.Object{}, fmt.Errorf("reading secret %q: version %q names no stage after %q: %w", ref.Key, v, stagePrefix, engine.ErrInvalidConfig)
		}
		req.VersionStage = tea.String(stage)
		what = fmt.Sprintf("reading stage %s of secret %q", stage, ref.Key)
	default:
		req.VersionId = tea.String(v)
		what = fmt.Sprintf("reading version %q of secret %q", v, ref.Key)
	}
	if err := checkName(what, ref.Key); err != nil {
		return engine.Object{}, err
	}
	if done := ctx.Err(); done != nil {
		return engine.Object{}, c.classify(what, done)
	}
	resp, err := kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.GetSecretValueResponse, error) {
		return c.api.GetSecretValueWithOptions(req, rt)
	})
	if err != nil {
		return engine.Object{}, c.classify(what, err)
	}
	body := resp.Body
	if body == nil || body.VersionId == nil || body.SecretData == nil {
		return engine.Object{}, fmt.Errorf("%s: KMS answered without a version or value: %w", what, engine.ErrUnavailable)
	}
	data := []byte(tea.StringValue(body.SecretData))
	if tea.StringValue(body.SecretDataType) == "binary" {
		// A binary secret's value travels base64-encoded.
		dec, derr := base64.StdEncoding.DecodeString(string(data))
		if derr != nil {
			return engine.Object{}, fmt.Errorf("%s: the binary value is not valid base64: %w", what, engine.ErrUnavailable)
		}
		return engine.Object{Version: tea.StringValue(body.VersionId), Value: dec}, nil
	}
	return engine.TextObject(tea.StringValue(body.VersionId), data), nil
}

// pageSize is the most version IDs ListSecretVersionIds returns at once.
const pageSize = 100

// CurrentVersion finds the version ID that carries ACSCurrent in the list
// of the secret's version IDs, without reading a value. (DescribeSecret
// returns metadata but no version.)
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	what := fmt.Sprintf("listing the version IDs of secret %q", key)
	if err := checkName(what, key); err != nil {
		return "", err
	}
	for page := int32(1); ; page++ {
		if done := ctx.Err(); done != nil {
			return "", c.classify(what, done)
		}
		req := &kms.ListSecretVersionIdsRequest{SecretName: tea.String(key), PageNumber: tea.Int32(page), PageSize: tea.Int32(pageSize)}
		resp, err := kmsCall(ctx, c, func(rt *util.RuntimeOptions) (*kms.ListSecretVersionIdsResponse, error) {
			return c.api.ListSecretVersionIdsWithOptions(req, rt)
		})
		if err != nil {
			return "", c.classify(what, err)
		}
		var versions []*kms.ListSecretVersionIdsResponseBodyVersionIdsVersionId
		if resp.Body != nil && resp.Body.VersionIds != nil {
			versions = resp.Body.VersionIds.VersionId
		}
		for _, v := range versions {
			if v == nil || v.VersionStages == nil {
				continue
			}
			for _, s := range v.VersionStages.VersionStage {
				if tea.StringValue(s) == CurrentStage {
					return tea.StringValue(v.VersionId), nil
				}
			}
		}
		if len(versions) < pageSize || resp.Body.TotalCount == nil || int(page)*pageSize >= int(*resp.Body.TotalCount) {
			return "", fmt.Errorf("%s: no version carries %s: %w", what, CurrentStage, engine.ErrNotFound)
		}
	}
}
