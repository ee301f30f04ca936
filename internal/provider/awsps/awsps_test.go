package awsps_test

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
	"github.com/watchword-dev/watchword/internal/provider/awsps"
	"github.com/watchword-dev/watchword/internal/provider/providertest"
	"github.com/watchword-dev/watchword/pkg/conformance"
	"github.com/watchword-dev/watchword/test/awsfake"
)

const region = "us-east-1"

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
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team-a", Name: "ps", Spec: &v1alpha1.SecretStoreProvider{AWSPS: spec}}, deps
}

func newOps(t *testing.T, store provider.Store, deps provider.Deps) engine.Ops {
	t.Helper()
	ops, err := awsps.Factory{}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatalf("building the client: %v", err)
	}
	return ops
}

func TestRefsAreComplete(t *testing.T) {
	providertest.RefsAreComplete(t, awsps.Factory{}, "awsps")
}

// TestCapabilitiesAreDocumented: the capability table of
// docs/providers.md lists what the client declares.
func TestCapabilitiesAreDocumented(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "docs")
	providertest.CapabilitiesAreDocumented(t, "awsps", newOps(t, store, deps))
}

func TestConformance(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "conformance")
	conformance.Run(t, conformance.Harness{
		Name: "awsps",
		Ops:  newOps(t, store, deps),
		Seed: func(_ context.Context, key string, fields map[string][]byte) error {
			text, err := awsbase.FieldsText(fields)
			if err != nil {
				return err
			}
			if !awsfake.ValidParameterName(key) {
				return fmt.Errorf("AWS would refuse the name %q", key)
			}
			fake.PutParameter(key, text, "SecureString")
			return nil
		},
		Key:           func(name string) string { return "/conformance/" + name },
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

func TestReadsVersionsLabelsAndSecureStrings(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "reader")
	ops := newOps(t, store, deps)
	ctx := context.Background()
	fake.PutParameter("/app/db", `{"user":"a"}`, "SecureString")
	fake.PutParameter("/app/db", `{"user":"b"}`, "SecureString")
	fake.LabelParameter("/app/db", 1, "stable")

	cur, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/app/db"})
	if err != nil || cur.Version != "2" || string(cur.Fields["user"]) != "b" {
		t.Fatalf("current: version %q, err %v", cur.Version, err)
	}
	for _, v := range []string{"1", "stable"} {
		old, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/app/db", Version: v})
		if err != nil || old.Version != "1" || string(old.Fields["user"]) != "a" {
			t.Errorf("version %q: got version %q, err %v", v, old.Version, err)
		}
	}
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/app/db", Version: "nolabel"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a missing label: want ErrNotFound, got %v", err)
	}
	if cv, err := ops.Versions.CurrentVersion(ctx, "/app/db"); err != nil || cv != "2" {
		t.Errorf("CurrentVersion = %q, %v", cv, err)
	}
	arn := "arn:aws:ssm:" + region + ":" + awsfake.Account + ":parameter/app/db"
	if a, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: arn}); err != nil || a.Version != "2" {
		t.Errorf("read by ARN: version %q, err %v", a.Version, err)
	}
	fake.PutParameter("plain", "text value", "String")
	if p, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "plain"}); err != nil || string(p.Value) != "text value" {
		t.Errorf("a String parameter: err %v", err)
	}
}

// TestPathAsDataFrom: a path reads every parameter under it, recursively
// and across pages, with "/" mapped to "_"; its version changes when one
// parameter under it does; two names mapping to one key are an error
// naming both.
func TestPathAsDataFrom(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "paths")
	ops := newOps(t, store, deps)
	ctx := context.Background()
	for i := range 23 {
		fake.PutParameter(fmt.Sprintf("/app/prod/k%02d", i), fmt.Sprint(i), "SecureString")
	}
	fake.PutParameter("/app/prod/db/password", "pw", "SecureString")
	fake.PutParameter("/app/other/x", "no", "String")
	fake.ResetCalls()
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/app/prod/"})
	if err != nil {
		t.Fatalf("path read: %v", err)
	}
	if len(obj.Fields) != 24 || string(obj.Fields["db_password"]) != "pw" || string(obj.Fields["k22"]) != "22" {
		t.Errorf("path read: %d fields, db_password present: %v", len(obj.Fields), obj.Fields["db_password"] != nil)
	}
	if n := fake.Calls("ssm:GetParametersByPath"); n != 3 {
		t.Errorf("GetParametersByPath calls = %d, want 3 pages of 10 for 24 parameters", n)
	}
	all, err := engine.ExtractAll("/app/prod/", obj, "")
	if err != nil || len(all) != 24 {
		t.Errorf("dataFrom of the path: %d keys, err %v", len(all), err)
	}
	cv, err := ops.Versions.CurrentVersion(ctx, "/app/prod/")
	if err != nil || cv != obj.Version {
		t.Errorf("path CurrentVersion %q, read version %q, err %v", cv, obj.Version, err)
	}
	fake.PutParameter("/app/prod/k03", "new", "SecureString")
	if cv2, verr := ops.Versions.CurrentVersion(ctx, "/app/prod/"); verr != nil || cv2 == cv {
		t.Errorf("path version after a change: %q (was %q), err %v", cv2, cv, verr)
	}
	fake.PutParameter("/app/prod/db_password", "clash", "SecureString")
	_, err = ops.Reader.GetSecret(ctx, engine.Ref{Key: "/app/prod/"})
	var pe *engine.PropertyError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "/app/prod/db/password") || !strings.Contains(err.Error(), "/app/prod/db_password") {
		t.Errorf("collision: want a PropertyError naming both parameters, got %v", err)
	}
	if _, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/nothing/here/"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("an empty path: want ErrNotFound, got %v", err)
	}
}

// TestBatchReadsTenPerCall: 25 names cost three GetParameters calls of at
// most 10 (the fake refuses more); a missing one is its own NotFound.
func TestBatchReadsTenPerCall(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "batcher")
	ops := newOps(t, store, deps)
	if ops.BatchLimit != 10 {
		t.Fatalf("BatchLimit = %d, want 10", ops.BatchLimit)
	}
	var refs []engine.Ref
	for i := range 23 {
		key := fmt.Sprintf("/batch/%02d", i)
		fake.PutParameter(key, fmt.Sprint(i), "SecureString")
		refs = append(refs, engine.Ref{Key: key})
	}
	fake.PutParameter("/batch/00", "second", "SecureString")
	refs = append(refs, engine.Ref{Key: "/batch/00", Version: "1"}, engine.Ref{Key: "/batch/missing"})
	fake.ResetCalls()
	items, err := ops.Batch.GetSecrets(context.Background(), refs)
	if err != nil {
		t.Fatalf("batch read: %v", err)
	}
	if n := fake.Calls("ssm:GetParameters"); n != 3 {
		t.Errorf("GetParameters calls = %d, want 3 for 25 names", n)
	}
	if string(items[0].Object.Value) != "second" || string(items[23].Object.Value) != "0" || items[23].Object.Version != "1" {
		t.Errorf("current and pinned items differ from single reads")
	}
	for i := 1; i < 23; i++ {
		if items[i].Err != nil || string(items[i].Object.Value) != fmt.Sprint(i) {
			t.Errorf("item %d: err %v", i, items[i].Err)
		}
	}
	if !errors.Is(items[24].Err, engine.ErrNotFound) {
		t.Errorf("missing item: want ErrNotFound, got %v", items[24].Err)
	}
}

func TestPublishingTagsAndRefusesForeign(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "publisher")
	store.Spec.AWSPS.KMSKeyID = "alias/params"
	ops := newOps(t, store, deps)
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/team-a/db"}
	pub := engine.Publication{Fields: map[string][]byte{"password": []byte("p1")}, Tags: map[string]string{"team": "a"}}
	if _, err := ops.Writer.PutSecret(ctx, "/pub/db", pub, owner); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if tags := fake.ParameterTags("/pub/db"); tags[awsbase.OwnerTag] != owner.ID || tags["team"] != "a" {
		t.Errorf("tags = %v", tags)
	}
	if typ, key := fake.ParameterKMSKey("/pub/db"); typ != "SecureString" || key != "alias/params" {
		t.Errorf("written as %s with key %q, want SecureString with alias/params", typ, key)
	}
	fake.PutParameter("/foreign", `{"password":"theirs"}`, "SecureString")
	if _, err := ops.Writer.PutSecret(ctx, "/foreign", pub, owner); !errors.Is(err, engine.ErrNotOwned) {
		t.Errorf("foreign parameter: want ErrNotOwned, got %v", err)
	}
	obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: "/foreign"})
	if err != nil || string(obj.Fields["password"]) != "theirs" {
		t.Errorf("the foreign parameter changed: err %v", err)
	}
}

// TestHundredDueTogetherCostTenCalls: 100 unique parameters missed by the
// engine's fetch cache at once are read with ten GetParameters calls,
// counted by the fake: the engine's batching honours the limit of 10.
func TestHundredDueTogetherCostTenCalls(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "cycle")
	client, err := engine.NewClient("awsps", newOps(t, store, deps))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		fake.PutParameter(fmt.Sprintf("/due/%03d", i), fmt.Sprint(i), "SecureString")
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
				got, err := f.Get(context.Background(), "ns/ps", client, engine.Ref{Key: fmt.Sprintf("/due/%03d", i)}, time.Minute)
				if err == nil && string(got.Object.Value) != fmt.Sprint(i) {
					err = fmt.Errorf("read another parameter's value")
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("parameter %d: %v", i, err)
			}
		}
	}
	for _, round := range []string{"first sync", "refresh cycle"} {
		cycle()
		batches, singles, checks := fake.Calls("ssm:GetParameters"), fake.Calls("ssm:GetParameter"), fake.Calls("ssm:DescribeParameters")
		t.Logf("100 parameters due together, %s: %d batch calls, %d single reads, %d version checks", round, batches, singles, checks)
		if batches != 10 || singles != 0 || checks != 0 {
			t.Errorf("100 parameters due together, %s: %d batch calls, %d single reads, %d version checks; want 10, 0 and 0", round, batches, singles, checks)
		}
		// Every cached read falls due.
		clock.Advance(2 * time.Minute)
	}
}

// TestScopeIsAPathOfItsOwn: a publisher confined to namespace team-a
// writes under /team-a/, whether it names /app/db or app/db, and cannot
// climb out with "..".
func TestScopeIsAPathOfItsOwn(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "scoped")
	client, err := engine.NewClient("awsps", newOps(t, store, deps))
	if err != nil {
		t.Fatal(err)
	}
	inScope, err := client.InScope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	w, err := inScope.AsWriter()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	owner := engine.Owner{ID: "PushSecret/team-a/p"}
	pub := engine.Publication{Fields: map[string][]byte{"k": []byte("v")}}
	for _, key := range []string{"/app/db", "app/cache"} {
		if _, err = w.PutSecret(ctx, key, pub, owner); err != nil {
			t.Fatalf("scoped write of %q: %v", key, err)
		}
	}
	for _, name := range []string{"/team-a/app/db", "/team-a/app/cache"} {
		if fake.ParameterTags(name)[awsbase.OwnerTag] != owner.ID {
			t.Errorf("parameter %q was not written in the scope", name)
		}
	}
	if _, err = w.PutSecret(ctx, "/../team-b/db", pub, owner); err == nil {
		t.Errorf("a key with .. left the scope")
	}
	if obj, gerr := inScope.GetSecret(ctx, engine.Ref{Key: "/app/db"}); gerr != nil || string(obj.Fields["k"]) != "v" {
		t.Errorf("scoped read: %v", gerr)
	}
}

// stepClock is a clock that tests move forward.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *stepClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// TestDueTogetherAtLatencyAreBatched: 30 ExternalSecrets over 30
// parameters of a store that answers in 50-500ms, read by the
// controller's workers through the store's call gate (providertest.Sync),
// cost a few GetParameters calls when they are created within a second
// and when all fall due together: the reads that wait while a call is in
// flight go out together in the next one (up to 10 names).
func TestDueTogetherAtLatencyAreBatched(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "latency")
	client, err := engine.NewClient("awsps", newOps(t, store, deps))
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/slow/%02d", i)
		fake.PutParameter(keys[i], fmt.Sprintf("%02d", i), "SecureString")
	}
	want := func(key string, obj engine.Object) error {
		if "/slow/"+string(obj.Value) != key {
			return fmt.Errorf("read another parameter's value")
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
		providertest.Sync(t, f, "ns/ps", client, keys, round.spread, want)
		batches, singles, checks := fake.Calls("ssm:GetParameters"), fake.Calls("ssm:GetParameter"), fake.Calls("ssm:DescribeParameters")
		t.Logf("%d parameters at 50-500ms, %s: %d GetParameters calls of %v names, %d GetParameter, %d DescribeParameters",
			n, round.name, batches, fake.BatchSizes("ssm:GetParameters"), singles, checks)
		// 30 names take 3 calls at least.
		if batches+singles+checks > 10 {
			t.Errorf("%d parameters at 50-500ms, %s: %d batch calls, %d single reads, %d version checks; want at most 10 calls in all", n, round.name, batches, singles, checks)
		}
		// Every cached read falls due.
		clock.Advance(2 * time.Minute)
	}
}

// TestPinnedBatchReadsWithAndWithoutSelector: names read at a version
// number or a label in one batch get what single reads get, whether the
// answer gives each parameter's Selector (as AWS does) or leaves it out
// (as some emulators do), without a single read: the answer is matched by
// the parameter's name and the version asked.
func TestPinnedBatchReadsWithAndWithoutSelector(t *testing.T) {
	for _, omit := range []bool{false, true} {
		t.Run(fmt.Sprintf("selectors omitted %v", omit), func(t *testing.T) {
			fake := awsfake.New(region)
			defer fake.Close()
			store, deps := keyStore(t, fake, "pinned")
			ops := newOps(t, store, deps)
			fake.PutParameter("/app/db", "db-1", "SecureString")
			fake.PutParameter("/app/db", "db-2", "SecureString")
			fake.LabelParameter("/app/db", 1, "stable")
			fake.PutParameter("/solo", "solo-1", "SecureString")
			fake.PutParameter("/solo", "solo-2", "SecureString")
			fake.LabelParameter("/solo", 1, "prod")
			fake.OmitSelectors(omit)
			arn := "arn:aws:ssm:" + region + ":" + awsfake.Account + ":parameter/app/db"
			refs := []engine.Ref{
				{Key: "/app/db"}, {Key: "/app/db", Version: "1"}, {Key: "/app/db", Version: "stable"},
				{Key: "/solo", Version: "prod"}, {Key: "/solo", Version: "2"}, {Key: arn, Version: "2"},
				{Key: "/app/db", Version: "9"}, {Key: "/solo", Version: "nolabel"},
			}
			want := []string{"2:db-2", "1:db-1", "1:db-1", "1:solo-1", "2:solo-2", "2:db-2", "NotFound", "NotFound"}
			fake.ResetCalls()
			items, err := ops.Batch.GetSecrets(context.Background(), refs)
			if err != nil {
				t.Fatalf("batch read: %v", err)
			}
			for i, item := range items {
				got := item.Object.Version + ":" + string(item.Object.Value)
				if item.Err != nil {
					got = string(failure.Classify(item.Err).Reason)
				}
				if got != want[i] {
					t.Errorf("%+v: got %s (%v), want %s", refs[i], got, item.Err, want[i])
				}
			}
			if n := fake.Calls("ssm:GetParameter"); n != 0 {
				t.Errorf("%d single reads; the batch answers settle every ref", n)
			}
		})
	}
}

// TestBatchAnswerWithoutAParameterIsAProviderError: a parameter that a
// GetParameters answer does not mention at all, as found or as invalid,
// is a provider error of its own, not an outage of the store (which did
// answer); the others of the batch are read, and a pinned one left out
// is read on its own.
func TestBatchAnswerWithoutAParameterIsAProviderError(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "dropped")
	ops, err := awsps.Factory{HTTPClient: awsfake.Dropper{Target: "AmazonSSM.GetParameters", List: "Parameters", Drop: "/dropped"}}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	fake.PutParameter("/kept", "k", "SecureString")
	fake.PutParameter("/dropped", "d", "SecureString")
	fake.ResetCalls()
	items, err := ops.Batch.GetSecrets(context.Background(), []engine.Ref{{Key: "/kept"}, {Key: "/dropped"}, {Key: "/dropped", Version: "1"}})
	if err != nil {
		t.Fatalf("batch read: %v", err)
	}
	if items[0].Err != nil || string(items[0].Object.Value) != "k" {
		t.Errorf("the parameter answered: %v", items[0].Err)
	}
	if items[2].Err != nil || string(items[2].Object.Value) != "d" || fake.Calls("ssm:GetParameter") != 1 {
		t.Errorf("the pinned parameter left out: %v, after %d single reads; want it read on its own", items[2].Err, fake.Calls("ssm:GetParameter"))
	}
	err = items[1].Err
	if c := failure.Classify(err); c.Reason != failure.ProviderError || c.Terminal || errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), `"/dropped"`) {
		t.Errorf("the parameter left out of the answer: %v (%s), want a retried ProviderError naming it", err, c.Reason)
	}
}

// TestMarksStringParametersNotSecret: String and StringList parameters
// are read marked not secret, SecureString ones are not, by a single
// read, a batch and a path (not secret only when every parameter under
// it is).
func TestMarksStringParametersNotSecret(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	store, deps := keyStore(t, fake, "marks")
	ops := newOps(t, store, deps)
	ctx := context.Background()
	fake.PutParameter("/cfg/plain/level", "debug", "String")
	fake.PutParameter("/cfg/plain/hosts", "a,b", "StringList")
	fake.PutParameter("/cfg/mixed/level", "info", "String")
	fake.PutParameter("/cfg/mixed/token", "t0k3n", "SecureString")
	want := map[string]bool{"/cfg/plain/level": true, "/cfg/plain/hosts": true, "/cfg/mixed/level": true, "/cfg/mixed/token": false,
		"/cfg/plain/": true, "/cfg/mixed/": false}
	var refs []engine.Ref
	for key, notSecret := range want {
		obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: key})
		if err != nil || obj.NotSecret != notSecret {
			t.Errorf("read %s: NotSecret %v, want %v (err %v)", key, obj.NotSecret, notSecret, err)
		}
		refs = append(refs, engine.Ref{Key: key})
	}
	items, err := ops.Batch.GetSecrets(ctx, refs)
	if err != nil {
		t.Fatalf("batch read: %v", err)
	}
	for i, r := range refs {
		if items[i].Err != nil || items[i].Object.NotSecret != want[r.Key] {
			t.Errorf("batch read %s: NotSecret %v, want %v (err %v)", r.Key, items[i].Object.NotSecret, want[r.Key], items[i].Err)
		}
	}
}
