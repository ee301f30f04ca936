package awssm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
	"github.com/watchword-dev/watchword/internal/provider/awssm"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/awsfake"
)

const region = "eu-central-1"

// keyStore is a SecretStore of the fake with a user's static keys.
func keyStore(t *testing.T, fake *awsfake.Server, user string) (provider.Store, *awsfake.Deps) {
	t.Helper()
	id, secret := fake.AddUser(user)
	deps := &awsfake.Deps{}
	deps.SetSecret("aws", "id", []byte(id))
	deps.SetSecret("aws", "secret", []byte(secret))
	spec := &v1alpha1.AWSProvider{Region: region, Endpoint: fake.URL, STSEndpoint: fake.URL, Auth: &v1alpha1.AWSAuth{
		SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID:     v1alpha1.SecretKeySelector{Name: "aws", Key: "id"},
			SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"},
		}}}
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team-a", Name: "sm", Spec: &v1alpha1.SecretStoreProvider{AWSSM: spec}}, deps
}

func newOps(t *testing.T, store provider.Store, deps provider.Deps) engine.Ops {
	t.Helper()
	ops, err := awssm.Factory{}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatalf("building the client: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, awssm.Factory{}, "awssm")
}

// TestCapabilitiesAreDocumented: the capability table of
// docs/providers.md lists what the client declares.
func TestCapabilitiesAreDocumented(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "docs")
	providertest.CapabilitiesAreDocumented(t, "awssm", newOps(t, store, deps))
}

func TestConformance(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "conformance")
	conformance.Run(t, conformance.Harness{
		Name: "awssm",
		Ops:  newOps(t, store, deps),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			text, err := awsbase.FieldsText(fields)
			if err != nil {
				return err
			}
			if !awsfake.ValidSecretName(key) {
				return fmt.Errorf("AWS would refuse the name %q", key)
			}
			fake.PutSecretString(key, text)
			return nil
		},
		Key:           func(name string) string { return "conformance/" + name },
		KeepsVersions: true,
		// ECR pull tokens, as dataFrom registryToken asks for them.
		Lease: &engine.LeaseRequest{Registry: v1alpha1.RegistryECR},
		LeaseWorks: func(_ context.Context, obj engine.Object) error {
			if !slices.Contains(fake.ECRPasswords(), string(obj.Fields["password"])) {
				return errors.New("the password is not a token ECR issued")
			}
			return nil
		},
	})
}

func TestReadsStagesBinaryAndARN(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "reader")
	ops := newOps(t, store, deps)
	ctx := context.Background()

	v1 := fake.PutSecretString("app/db", `{"user":"a","port":5432,"nested":{"k":"v"}}`)
	v2 := fake.PutSecretString("app/db", `{"user":"b"}`)
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "app/db"})
	if err != nil || obj.Version != v2 || string(obj.Fields["user"]) != "b" {
		t.Fatalf("current read: version %q (want %q), err %v", obj.Version, v2, err)
	}
	prev, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "app/db", Version: "AWSPREVIOUS"})
	if err != nil || prev.Version != v1 {
		t.Fatalf("AWSPREVIOUS: version %q (want %q), err %v", prev.Version, v1, err)
	}
	if got, perr := engine.Extract("app/db", prev, "nested.k"); perr != nil || string(got) != "v" {
		t.Errorf("property nested.k of AWSPREVIOUS: err %v", perr)
	}
	if got, perr := engine.Extract("app/db", prev, "port"); perr != nil || string(got) != "5432" {
		t.Errorf("a number member is its JSON text: err %v", perr)
	}
	byID, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "app/db", Version: v1})
	if err != nil || byID.Version != v1 {
		t.Fatalf("read by version ID: version %q, err %v", byID.Version, err)
	}
	if cv, verr := ops.Versions.CurrentVersion(ctx, "app/db"); verr != nil || cv != v2 {
		t.Errorf("CurrentVersion = %q, %v; want %q", cv, verr, v2)
	}
	if _, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "app/db", Version: "NOSUCHSTAGE"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a missing stage: want ErrNotFound, got %v", err)
	}

	bin := []byte{0, 1, 2, 255}
	fake.PutSecretBinary("tls/key", bin)
	b, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "tls/key"})
	if err != nil || string(b.Value) != string(bin) || b.Fields != nil {
		t.Fatalf("binary secret: err %v, fields %v", err, b.Fields != nil)
	}

	fake.PutSecretString("plain", "just text")
	p, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "plain"})
	if err != nil || string(p.Value) != "just text" {
		t.Fatalf("text secret: err %v", err)
	}

	// By ARN, as DescribeSecret reports it.
	arn := fake.SecretARN("plain")
	if a, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: arn}); err != nil || string(a.Value) != "just text" {
		t.Fatalf("read by ARN: err %v", err)
	}
}

// TestBatchReadsTwentyPerCall: 45 refs of current versions cost three
// BatchGetSecretValue calls of at most 20, as counted by the fake (which
// refuses more than 20 IDs); a pinned ref is read on its own; each item
// carries its own error.
func TestBatchReadsTwentyPerCall(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "batcher")
	ops := newOps(t, store, deps)
	if ops.BatchLimit != 20 {
		t.Fatalf("BatchLimit = %d, want 20", ops.BatchLimit)
	}
	var refs []engine.Ref
	for i := range 44 {
		key := fmt.Sprintf("batch/%02d", i)
		fake.PutSecretString(key, fmt.Sprintf(`{"n":"%d"}`, i))
		refs = append(refs, engine.Ref{Key: key})
	}
	refs = append(refs, engine.Ref{Key: "batch/missing"})
	pinned := fake.PutSecretString("batch/00", `{"n":"new"}`)
	refs = append(refs, engine.Ref{Key: "batch/00", Version: pinned})
	fake.ResetCalls()
	items, err := ops.Batch.GetSecrets(context.Background(), refs)
	if err != nil {
		t.Fatalf("batch read: %v", err)
	}
	if n := fake.Calls("secretsmanager:BatchGetSecretValue"); n != 3 {
		t.Errorf("BatchGetSecretValue calls = %d, want 3 for 45 names", n)
	}
	if n := fake.Calls("secretsmanager:GetSecretValue"); n != 1 {
		t.Errorf("GetSecretValue calls = %d, want 1 for the pinned ref", n)
	}
	for i := 1; i < 44; i++ {
		if it := items[i]; it.Err != nil || string(it.Object.Fields["n"]) != fmt.Sprint(i) {
			t.Errorf("item %d: err %v", i, it.Err)
		}
	}
	if !errors.Is(items[44].Err, engine.ErrNotFound) {
		t.Errorf("missing secret's item: want ErrNotFound, got %v", items[44].Err)
	}
	if it := items[45]; it.Err != nil || it.Object.Version != pinned {
		t.Errorf("pinned item: version %q, err %v", it.Object.Version, it.Err)
	}
}

// TestAccessDeniedNamesCallerActionResource: an IAM refusal names who was
// refused, the action and the resource, and wraps ErrPermissionDenied.
func TestAccessDeniedNamesCallerActionResource(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "denied")
	ops := newOps(t, store, deps)
	fake.PutSecretString("app/db", "s3cr3t-value")
	fake.Deny(awsfake.UserARN("denied"), "secretsmanager:GetSecretValue")
	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "app/db"})
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("want ErrPermissionDenied, got %v", err)
	}
	for _, want := range []string{awsfake.UserARN("denied"), "secretsmanager:GetSecretValue", `"app/db"`, "on " + fake.SecretARN("app/db")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("refusal carries the value: %q", err)
	}
}

// TestSignatureRefusals: a key the fake does not know, and a wrong secret
// (a bad signature), are refused as PermissionDenied; a key rotated in its
// Secret is used by the next client without a restart.
func TestSignatureRefusals(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "rotator")
	fake.PutSecretString("k", "v")
	ctx := context.Background()

	deps.SetSecret("aws", "secret", []byte("wrong-secret-wrong-secret-wrong-secret-00"))
	if _, err := newOps(t, store, deps).Reader.GetSecret(ctx, engine.Ref{Key: "k"}); !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "InvalidSignatureException") {
		t.Errorf("wrong secret: want ErrPermissionDenied with InvalidSignatureException, got %v", err)
	}
	id, secret := fake.AddUser("rotator")
	deps.SetSecret("aws", "id", []byte("AKIAUNKNOWNUNKNOWN00"))
	if _, err := newOps(t, store, deps).Reader.GetSecret(ctx, engine.Ref{Key: "k"}); !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "UnrecognizedClientException") {
		t.Errorf("unknown key: want ErrPermissionDenied with UnrecognizedClientException, got %v", err)
	}
	deps.SetSecret("aws", "id", []byte(id))
	deps.SetSecret("aws", "secret", []byte(secret))
	if _, err := newOps(t, store, deps).Reader.GetSecret(ctx, engine.Ref{Key: "k"}); err != nil {
		t.Errorf("rotated key: %v", err)
	}
}

// TestThrottlingIsBounded: a throttled call is retried by the SDK's
// retryer at most awsbase.MaxAttempts times, then reported as
// ErrThrottled.
func TestThrottlingIsBounded(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "throttled")
	ops := newOps(t, store, deps)
	fake.PutSecretString("k", "v")
	fake.Throttle("secretsmanager:GetSecretValue", true)
	_, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "k"})
	if !errors.Is(err, engine.ErrThrottled) {
		t.Fatalf("want ErrThrottled, got %v", err)
	}
	if n := fake.Calls("secretsmanager:GetSecretValue"); n != awsbase.MaxAttempts {
		t.Errorf("throttled calls = %d, want %d (the retryer's bound)", n, awsbase.MaxAttempts)
	}
}

// TestPublishingTagsAndRefusesForeign: a created secret carries the owner
// tag and the publication's tags and KMS key; a secret without the tag is
// refused and left intact.
func TestPublishingTagsAndRefusesForeign(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "publisher")
	store.Spec.AWSSM.KMSKeyID = "alias/watchword"
	ops := newOps(t, store, deps)
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/team-a/db"}
	pub := engine.Publication{Fields: map[string][]byte{"password": []byte("p1")}, Tags: map[string]string{"team": "a"}}
	v1, err := ops.Writer.PutSecret(ctx, "pub/db", pub, owner)
	if err != nil {
		t.Fatalf("first write: %v", err)
	}
	tags := fake.SecretTags("pub/db")
	if tags[awsbase.OwnerTag] != owner.ID || tags["team"] != "a" {
		t.Errorf("tags = %v", tags)
	}
	if k := fake.SecretKMSKey("pub/db"); k != "alias/watchword" {
		t.Errorf("KMS key = %q", k)
	}
	v2, err := ops.Writer.PutSecret(ctx, "pub/db", pub, owner)
	if err != nil || v2 != v1 {
		t.Errorf("an unchanged write made version %q (first %q), err %v", v2, v1, err)
	}
	fake.PutSecretString("foreign", `{"password":"theirs"}`)
	if _, err = ops.Writer.PutSecret(ctx, "foreign", pub, owner); !errors.Is(err, engine.ErrNotOwned) {
		t.Errorf("foreign secret: want ErrNotOwned, got %v", err)
	}
	if err = ops.Writer.DeleteSecret(ctx, "foreign", owner); !errors.Is(err, engine.ErrNotOwned) {
		t.Errorf("deleting a foreign secret: want ErrNotOwned, got %v", err)
	}
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "foreign"})
	if err != nil || string(obj.Fields["password"]) != "theirs" {
		t.Errorf("the foreign secret changed: err %v", err)
	}
}

// TestValidate: the controller's credentials only on a ClusterSecretStore,
// exactly one way to authenticate.
func TestValidate(t *testing.T) {
	ns := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{
		AWSSM: &v1alpha1.AWSProvider{Region: region, Auth: &v1alpha1.AWSAuth{ControllerCredentials: true}}}}
	if err := (awssm.Factory{}).Validate(ns); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "ClusterSecretStore") {
		t.Errorf("controllerCredentials in a SecretStore: %v", err)
	}
	cluster := ns
	cluster.Kind, cluster.Namespace = v1alpha1.ClusterSecretStoreKind, ""
	if err := (awssm.Factory{}).Validate(cluster); err != nil {
		t.Errorf("controllerCredentials in a ClusterSecretStore: %v", err)
	}
	none := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSSM: &v1alpha1.AWSProvider{Region: region}}}
	if err := (awssm.Factory{}).Validate(none); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Errorf("no auth: %v", err)
	}
}

// TestHundredDueTogetherCostFiveCalls: 100 unique secrets missed by the
// engine's fetch cache at once (as when their ExternalSecrets fall due
// together) are read with five BatchGetSecretValue calls, counted by the
// fake: the engine's batching honours the store's limit of 20.
func TestHundredDueTogetherCostFiveCalls(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "cycle")
	client, err := engine.NewClient("awssm", newOps(t, store, deps))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		fake.PutSecretString(fmt.Sprintf("due/%03d", i), fmt.Sprintf(`{"n":"%d"}`, i))
	}
	clock := &stepClock{t: time.Unix(1000, 0)}
	f := engine.NewFetcher(clock, nil)
	// A batch is sent when it is full, so that the count does not depend
	// on how fast this machine is.
	f.SetBatching(time.Hour, engine.MaxBatch)
	cycle := func() {
		fake.ResetCalls()
		var wg sync.WaitGroup
		errs := make([]error, 100)
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := f.Get(context.Background(), "ns/sm", client, engine.Ref{Key: fmt.Sprintf("due/%03d", i)}, time.Minute)
				if err == nil && string(got.Object.Fields["n"]) != fmt.Sprint(i) {
					err = fmt.Errorf("read another secret's fields")
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("secret %d: %v", i, err)
			}
		}
	}
	for _, round := range []string{"first sync", "refresh cycle"} {
		cycle()
		batches, singles, checks := fake.Calls("secretsmanager:BatchGetSecretValue"), fake.Calls("secretsmanager:GetSecretValue"), fake.Calls("secretsmanager:DescribeSecret")
		t.Logf("100 secrets due together, %s: %d batch calls, %d single reads, %d version checks", round, batches, singles, checks)
		if batches != 5 || singles != 0 || checks != 0 {
			t.Errorf("100 secrets due together, %s: %d batch calls, %d single reads, %d version checks; want 5, 0 and 0", round, batches, singles, checks)
		}
		// Every cached read falls due.
		clock.Advance(2 * time.Minute)
	}
}

// TestCheckNeedsNoSecretsPermission: the store's check asks STS who the
// credentials are, which needs no permission: a reader denied listing
// secrets passes it, and an unknown key fails it as PermissionDenied.
func TestCheckNeedsNoSecretsPermission(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "narrow")
	fake.Deny(awsfake.UserARN("narrow"), "secretsmanager:ListSecrets")
	if err := newOps(t, store, deps).Checker.Check(context.Background()); err != nil {
		t.Fatalf("check of valid credentials: %v", err)
	}
	if n := fake.Calls("sts:GetCallerIdentity"); n != 1 {
		t.Errorf("GetCallerIdentity calls = %d, want 1", n)
	}
	deps.SetSecret("aws", "id", []byte("AKIANOTISSUED0000000"))
	if err := newOps(t, store, deps).Checker.Check(context.Background()); !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Errorf("check of an unknown key: %v", err)
	}
}

// stepClock is a clock that tests move forward.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *stepClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// TestDueTogetherAtLatencyAreBatched: 30 ExternalSecrets over 30 secrets
// of a store that answers in 50-500ms, read by the controller's workers
// through the store's call gate (providertest.Sync), cost a few calls
// when they are created within a second and when all fall due together:
// the reads that wait while a call is in flight go out together in the
// next one, rather than each few milliseconds' worth on its own.
func TestDueTogetherAtLatencyAreBatched(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "latency")
	client, err := engine.NewClient("awssm", newOps(t, store, deps))
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("slow/%02d", i)
		fake.PutSecretString(keys[i], fmt.Sprintf(`{"n":"%02d"}`, i))
	}
	want := func(key string, obj engine.Object) error {
		if "slow/"+string(obj.Fields["n"]) != key {
			return fmt.Errorf("read another secret's fields")
		}
		return nil
	}
	fake.SetLatency(50*time.Millisecond, 500*time.Millisecond)
	clock := &providertest.Clock{}
	f := engine.NewFetcher(clock, nil)
	for _, round := range []struct {
		name   string
		spread time.Duration
	}{{"created within a second", time.Second}, {"all due together", 0}} {
		fake.ResetCalls()
		providertest.Sync(t, f, "ns/sm", client, keys, round.spread, want)
		batches, singles, checks := fake.Calls("secretsmanager:BatchGetSecretValue"), fake.Calls("secretsmanager:GetSecretValue"), fake.Calls("secretsmanager:DescribeSecret")
		t.Logf("%d secrets at 50-500ms, %s: %d BatchGetSecretValue calls of %v ids, %d GetSecretValue, %d DescribeSecret",
			n, round.name, batches, fake.BatchSizes("secretsmanager:BatchGetSecretValue"), singles, checks)
		if batches+singles+checks > 10 {
			t.Errorf("%d secrets at 50-500ms, %s: %d batch calls, %d single reads, %d version checks; want at most 10 calls in all", n, round.name, batches, singles, checks)
		}
		// Every cached read falls due.
		clock.Advance(2 * time.Minute)
	}
}

// TestBatchAnswerWithoutASecretIsAProviderError: a secret that a
// BatchGetSecretValue answer does not mention, as a value or as an error,
// is a provider error of its own, not an outage of the store (which did
// answer); the others of the batch are read.
func TestBatchAnswerWithoutASecretIsAProviderError(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "dropped")
	ops, err := awssm.Factory{HTTPClient: awsfake.Dropper{Target: "secretsmanager.BatchGetSecretValue", List: "SecretValues", Drop: "dropped"}}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	fake.PutSecretString("kept", "k")
	fake.PutSecretString("dropped", "d")
	items, err := ops.Batch.GetSecrets(context.Background(), []engine.Ref{{Key: "kept"}, {Key: "dropped"}})
	if err != nil {
		t.Fatalf("batch read: %v", err)
	}
	if items[0].Err != nil || string(items[0].Object.Value) != "k" {
		t.Errorf("the secret answered: %v", items[0].Err)
	}
	err = items[1].Err
	if c := failure.Classify(err); c.Reason != failure.ProviderError || c.Terminal || errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), `"dropped"`) {
		t.Errorf("the secret left out of the answer: %v (%s), want a retried ProviderError naming it", err, c.Reason)
	}
}
