package awsbase_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
	"github.com/watchword-dev/watchword/internal/provider/awsps"
	"github.com/watchword-dev/watchword/internal/provider/awssm"
	"github.com/watchword-dev/watchword/test/awsfake"
)

const (
	region    = "eu-west-1"
	webRole   = "arn:aws:iam::" + awsfake.Account + ":role/web-reader"
	chainRole = "arn:aws:iam::" + awsfake.Account + ":role/chained"
	subject   = "system:serviceaccount:team-a:app"
)

// tokens hands out service-account tokens and records the audiences asked.
type tokens struct {
	mu        sync.Mutex
	token     string
	audiences [][]string
}

func (tk *tokens) get(_ context.Context, sel v1alpha1.ServiceAccountSelector) (string, error) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.audiences = append(tk.audiences, sel.Audiences)
	return tk.token, nil
}

func webStore(fake *awsfake.Server) provider.Store {
	return provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "team-a", Name: "web", Spec: &v1alpha1.SecretStoreProvider{AWSSM: &v1alpha1.AWSProvider{
		Region: region, Endpoint: fake.URL, STSEndpoint: fake.URL,
		Auth: &v1alpha1.AWSAuth{JWT: &v1alpha1.AWSJWTAuth{RoleARN: webRole, ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app"}}},
	}}}
}

// fakeWithWebIdentity trusts the token "valid-token" as the service
// account team-a/app with audience sts.amazonaws.com. (The integration
// tests review real tokens against the test API server.)
func fakeWithWebIdentity() *awsfake.Server {
	fake := awsfake.New(region)
	fake.ReviewToken = func(_ context.Context, token string) (string, []string, error) {
		if token != "valid-token" {
			return "", nil, errors.New("token not valid")
		}
		return subject, []string{awsbase.STSAudience}, nil
	}
	fake.AddRole(awsfake.Role{ARN: webRole, WebIdentitySubjects: []string{subject}})
	return fake
}

func read(t *testing.T, store provider.Store, deps provider.Deps, key string) (engine.Object, error) {
	t.Helper()
	ops, err := awssm.Factory{}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatalf("building the client: %v", err)
	}
	return ops.Reader.GetSecret(context.Background(), engine.Ref{Key: key})
}

// TestWebIdentityRequestsTheSTSAudience: the token is requested with the
// audience sts.amazonaws.com, exchanged once, and the credentials are
// reused by later calls.
func TestWebIdentityRequestsTheSTSAudience(t *testing.T) {
	fake := fakeWithWebIdentity()
	defer fake.Close()
	fake.PutSecretString("app/db", "v")
	tk := &tokens{token: "valid-token"}
	deps := &awsfake.Deps{Token: tk.get}
	ops, err := awssm.Factory{}.New(context.Background(), webStore(fake), deps)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "app/db"}); err != nil {
			t.Fatalf("read with web identity: %v", err)
		}
	}
	if n := fake.Calls("sts:AssumeRoleWithWebIdentity"); n != 1 {
		t.Errorf("AssumeRoleWithWebIdentity calls = %d, want 1 (credentials cached)", n)
	}
	if len(tk.audiences) != 1 || !slices.Equal(tk.audiences[0], []string{"sts.amazonaws.com"}) {
		t.Errorf("token requests = %v, want one with audience sts.amazonaws.com", tk.audiences)
	}
	s := fake.Sessions()
	if len(s) != 1 || s[0].Caller != subject || s[0].SessionName != "watchword-team-a.web" {
		t.Errorf("sessions = %+v", s)
	}
}

// TestWebIdentityRefusalsAreNamed: a token STS rejects, and a service
// account the role does not trust, are PermissionDenied errors naming
// the service account and the role, never the token.
func TestWebIdentityRefusalsAreNamed(t *testing.T) {
	fake := fakeWithWebIdentity()
	defer fake.Close()
	fake.PutSecretString("app/db", "v")
	_, err := read(t, webStore(fake), &awsfake.Deps{Token: (&tokens{token: "forged-token"}).get}, "app/db")
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "InvalidIdentityToken") ||
		!strings.Contains(err.Error(), `"team-a/app"`) || !strings.Contains(err.Error(), webRole) || strings.Contains(err.Error(), "forged-token") {
		t.Errorf("rejected token: %v", err)
	}
	fake.AddRole(awsfake.Role{ARN: webRole, WebIdentitySubjects: []string{"system:serviceaccount:other:sa"}})
	_, err = read(t, webStore(fake), &awsfake.Deps{Token: (&tokens{token: "valid-token"}).get}, "app/db")
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Errorf("untrusted service account: %v", err)
	}
}

// TestRoleChainedAfterWebIdentity: the role of the block is assumed with
// the web identity's credentials, with the external ID and session tags.
func TestRoleChainedAfterWebIdentity(t *testing.T) {
	fake := fakeWithWebIdentity()
	defer fake.Close()
	fake.AddRole(awsfake.Role{ARN: chainRole, Principals: []string{webRole}, ExternalID: "ext-123"})
	fake.PutSecretString("app/db", "v")
	store := webStore(fake)
	store.Spec.AWSSM.Role = chainRole
	store.Spec.AWSSM.ExternalID = "ext-123"
	store.Spec.AWSSM.SessionTags = []v1alpha1.AWSTag{{Key: "team", Value: "a"}}
	deps := &awsfake.Deps{Token: (&tokens{token: "valid-token"}).get}
	if _, err := read(t, store, deps, "app/db"); err != nil {
		t.Fatalf("read through the chained role: %v", err)
	}
	s := fake.Sessions()
	if len(s) != 2 || s[0].Action != "AssumeRoleWithWebIdentity" || s[1].Action != "AssumeRole" || s[1].Role != chainRole ||
		s[1].ExternalID != "ext-123" || s[1].Tags["team"] != "a" || !strings.Contains(s[1].Caller, ":assumed-role/web-reader/") {
		t.Errorf("sessions = %+v", s)
	}
	// The chained role is the caller AWS sees.
	fake.Deny(chainRole, "secretsmanager:GetSecretValue")
	_, err := read(t, store, deps, "app/db")
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), ":assumed-role/chained/") || !strings.Contains(err.Error(), "secretsmanager:GetSecretValue") {
		t.Errorf("refusal of the chained role: %v", err)
	}
	store.Spec.AWSSM.ExternalID = "wrong-id"
	if _, err := read(t, store, deps, "app/db"); !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "sts:AssumeRole") {
		t.Errorf("a wrong external ID: %v", err)
	}
}

// TestCredentialsNearExpiryAreRefreshed: temporary credentials within
// five minutes of their expiry are obtained again by the SDK's cache
// before a call uses them, so that no call is made with credentials about
// to expire.
func TestCredentialsNearExpiryAreRefreshed(t *testing.T) {
	fake := fakeWithWebIdentity()
	defer fake.Close()
	fake.AddRole(awsfake.Role{ARN: webRole, WebIdentitySubjects: []string{subject}, Duration: 4 * time.Minute})
	fake.PutSecretString("app/db", "v")
	ops, err := awssm.Factory{}.New(context.Background(), webStore(fake), &awsfake.Deps{Token: (&tokens{token: "valid-token"}).get})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "app/db"}); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if n := fake.Calls("sts:AssumeRoleWithWebIdentity"); n != 2 {
		t.Errorf("AssumeRoleWithWebIdentity calls = %d, want 2: four-minute credentials are inside the refresh window", n)
	}
}

// TestErrorsCarryNoAWSText: what AWS writes beyond the code is not
// repeated (it could echo the request), except the caller, action and
// resource of a refusal.
func TestErrorsCarryNoAWSText(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("u")
	deps := &awsfake.Deps{}
	deps.SetSecret("aws", "id", []byte(id))
	deps.SetSecret("aws", "secret", []byte(secret))
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSSM: &v1alpha1.AWSProvider{
		Region: region, Endpoint: fake.URL, Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID: v1alpha1.SecretKeySelector{Name: "aws", Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"}}}}}}
	_, err := read(t, store, deps, "missing")
	if !errors.Is(err, engine.ErrNotFound) || strings.Contains(err.Error(), "can't find") {
		t.Errorf("not found: %v", err)
	}
	if !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("the code is kept: %v", err)
	}
}

// hostRecorder is an HTTP client that records the host of each request
// and answers it with a non-retryable error, without any network.
type hostRecorder struct {
	mu    sync.Mutex
	hosts []string
}

func (h *hostRecorder) Do(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hosts = append(h.hosts, req.URL.Host)
	h.mu.Unlock()
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amzn-Errortype": {"ValidationException"}},
		Body: io.NopCloser(strings.NewReader(`{"__type":"ValidationException","message":"x"}`)), Request: req}, nil
}

// TestEndpoints: the region, FIPS and dual-stack settings and the endpoint
// override reach the SDK's endpoint resolution.
func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		ssm, fips, dualStack bool
		endpoint             string
		want                 string
	}{
		{name: "regional", want: "secretsmanager.eu-west-1.amazonaws.com"},
		{name: "fips", fips: true, want: "secretsmanager-fips.eu-west-1.amazonaws.com"},
		// Secrets Manager's regional endpoints of the aws partition are
		// dual-stack already (its endpoint rules say so); SSM's are not.
		{name: "dual-stack", dualStack: true, want: "secretsmanager.eu-west-1.amazonaws.com"},
		{name: "dual-stack ssm", ssm: true, dualStack: true, want: "ssm.eu-west-1.api.aws"},
		{name: "fips ssm", ssm: true, fips: true, want: "ssm-fips.eu-west-1.amazonaws.com"},
		{name: "override", endpoint: "https://vpce-1.secretsmanager.eu-west-1.vpce.amazonaws.com", want: "vpce-1.secretsmanager.eu-west-1.vpce.amazonaws.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &hostRecorder{}
			deps := &awsfake.Deps{}
			deps.SetSecret("aws", "id", []byte("AKIAEXAMPLEEXAMPLE00"))
			deps.SetSecret("aws", "secret", []byte("not-a-real-secret-not-a-real-secret-0000"))
			block := &v1alpha1.AWSProvider{
				Region: region, FIPS: tc.fips, DualStack: tc.dualStack, Endpoint: tc.endpoint,
				Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
					AccessKeyID: v1alpha1.SecretKeySelector{Name: "aws", Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"}}}}
			store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSSM: block}}
			var factory provider.Factory = awssm.Factory{HTTPClient: rec}
			if tc.ssm {
				store.Spec = &v1alpha1.SecretStoreProvider{AWSPS: block}
				factory = awsps.Factory{HTTPClient: rec}
			}
			ops, err := factory.New(context.Background(), store, deps)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "k"})
			if !errors.Is(err, engine.ErrInvalidConfig) {
				t.Errorf("the recorder's answer: %v", err)
			}
			if len(rec.hosts) != 1 || rec.hosts[0] != tc.want {
				t.Errorf("requests went to %v, want %s", rec.hosts, tc.want)
			}
		})
	}
}

// TestEndpointOverrideExcludesFIPSAndDualStack: the SDK cannot combine an
// endpoint override with FIPS or dual-stack; the store says so first.
func TestEndpointOverrideExcludesFIPSAndDualStack(t *testing.T) {
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSSM: &v1alpha1.AWSProvider{
		Region: region, FIPS: true, Endpoint: "https://vpce.example", Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{}}}}}
	if err := awsbase.Validate(store); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "awssm.endpoint") {
		t.Errorf("FIPS with an endpoint override: %v", err)
	}
}

// TestControllerCredentials: a ClusterSecretStore that says so uses the
// controller's own credentials (here from its environment).
func TestControllerCredentials(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("controller")
	t.Setenv("AWS_ACCESS_KEY_ID", id)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	fake.PutSecretString("k", "v")
	store := provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: "ambient", Spec: &v1alpha1.SecretStoreProvider{AWSSM: &v1alpha1.AWSProvider{
		Region: region, Endpoint: fake.URL, Auth: &v1alpha1.AWSAuth{ControllerCredentials: true}}}}
	obj, err := read(t, store, &awsfake.Deps{}, "k")
	if err != nil || string(obj.Value) != "v" {
		t.Fatalf("read with the controller's credentials: %v", err)
	}
	fake.Deny(awsfake.UserARN("controller"), "secretsmanager:GetSecretValue")
	if _, err = read(t, store, &awsfake.Deps{}, "k"); !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), "the controller's own credentials") {
		t.Errorf("refusal: %v", err)
	}
}

// onlyHost is an HTTP transport that reaches one host (the fake's) and
// finds every other unreachable, as a cluster without a way to AWS's own
// endpoints does, without any network.
type onlyHost struct{ host string }

func (o onlyHost) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != o.host {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("no route to host")}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestCheckNamesTheSTSHostItTried: a store with an endpoint but no
// stsEndpoint checks its credentials at AWS's own STS of the region; when
// that cannot be reached, the error names the host it tried and
// stsEndpoint, and is an outage (not a refusal of the credentials). With
// stsEndpoint set, the check asks it.
func TestCheckNamesTheSTSHostItTried(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("emulated")
	fake.PutSecretString("k", "v")
	deps := &awsfake.Deps{}
	deps.SetSecret("aws", "id", []byte(id))
	deps.SetSecret("aws", "secret", []byte(secret))
	block := &v1alpha1.AWSProvider{Region: region, Endpoint: fake.URL, Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
		AccessKeyID: v1alpha1.SecretKeySelector{Name: "aws", Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"}}}}
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSSM: block}}
	fakeURL, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	factory := awssm.Factory{HTTPClient: &http.Client{Transport: onlyHost{host: fakeURL.Host}}}
	ops, err := factory.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	if obj, rerr := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "k"}); rerr != nil || string(obj.Value) != "v" {
		t.Fatalf("a read through the endpoint: %v", rerr)
	}
	err = ops.Checker.Check(context.Background())
	msg := fmt.Sprint(err)
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(msg, "at sts."+region+".amazonaws.com") ||
		!strings.Contains(msg, "awssm.stsEndpoint is not set") || strings.Contains(msg, secret) {
		t.Errorf("a check at an unreachable STS: %v; want an outage naming sts.%s.amazonaws.com and awssm.stsEndpoint", err, region)
	}
	if n := fake.Calls("sts:GetCallerIdentity"); n != 0 {
		t.Errorf("the fake's STS was asked %d times; the endpoint is not STS's", n)
	}
	block.STSEndpoint = fake.URL
	ops, err = factory.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err = ops.Checker.Check(context.Background()); err != nil {
		t.Errorf("a check at stsEndpoint: %v", err)
	}
}

// TestUnreachableEndpointIsNamed: a read from an endpoint that cannot be
// reached names its host, not only that AWS could not be reached.
func TestUnreachableEndpointIsNamed(t *testing.T) {
	deps := &awsfake.Deps{}
	deps.SetSecret("aws", "id", []byte("AKIAEXAMPLEEXAMPLE00"))
	deps.SetSecret("aws", "secret", []byte("not-a-real-secret-not-a-real-secret-0000"))
	block := &v1alpha1.AWSProvider{Region: region, Endpoint: "https://secrets.internal.example:8443", STSEndpoint: "https://sts.internal.example:8443",
		Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID: v1alpha1.SecretKeySelector{Name: "aws", Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"}}}}
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSPS: block}}
	ops, err := awsps.Factory{HTTPClient: &http.Client{Transport: onlyHost{host: "none"}}}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "/p"})
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "could not be reached at secrets.internal.example:8443") {
		t.Errorf("an unreachable endpoint: %v", err)
	}
	err = ops.Checker.Check(context.Background())
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "at sts.internal.example:8443") || strings.Contains(err.Error(), "AWS's own STS") {
		t.Errorf("an unreachable stsEndpoint: %v", err)
	}
}

// TestParamsTheSDKRefusesAreTheCallersInput: a request the SDK refuses
// before sending it (its parameter validation) is the input of the object
// that asked, a terminal RemoteNameInvalid, never an outage of the store,
// which would hold the store for every other caller.
func TestParamsTheSDKRefusesAreTheCallersInput(t *testing.T) {
	refused := &smithy.InvalidParamsError{Context: "GetSecretValueInput"}
	refused.Add(smithy.NewErrParamRequired("SecretId"))
	err := (&awsbase.Session{Who: "a user"}).Classify(`reading secret "db"`,
		&smithy.OperationError{ServiceID: "Secrets Manager", OperationName: "GetSecretValue", Err: refused})
	if c := failure.Classify(err); c.Reason != failure.RemoteNameInvalid || !c.Terminal || errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("%v (%+v), want a terminal RemoteNameInvalid", err, c)
	}
	if !strings.Contains(err.Error(), `reading secret "db"`) {
		t.Errorf("%q does not say what was asked", err)
	}
}
