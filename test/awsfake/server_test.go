package awsfake_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/watchword-dev/watchword/test/awsfake"
)

const region = "eu-north-1"

func smClient(fake *awsfake.Server, id, secret, token string, opts ...func(*secretsmanager.Options)) *secretsmanager.Client {
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, token), RetryMaxAttempts: 1}
	return secretsmanager.NewFromConfig(cfg, append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(fake.URL) }}, opts...)...)
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return fmt.Sprintf("no API error: %v", err)
}

// TestSignatureChecks: the fake accepts what the SDK signs with a key it
// issued, and refuses an unknown key, a wrong secret, a body changed after
// signing, a forged session token and an expired one, with AWS's codes.
func TestSignatureChecks(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	fake.PutSecretString("k", "v")
	id, secret := fake.AddUser("alice")
	ctx := context.Background()
	in := &secretsmanager.GetSecretValueInput{SecretId: aws.String("k")}

	if _, err := smClient(fake, id, secret, "").GetSecretValue(ctx, in); err != nil {
		t.Fatalf("a signed call: %v", err)
	}
	if _, err := smClient(fake, "AKIANOTISSUED0000000", secret, "").GetSecretValue(ctx, in); code(err) != "UnrecognizedClientException" {
		t.Errorf("unknown key: %s", code(err))
	}
	if _, err := smClient(fake, id, secret+"x", "").GetSecretValue(ctx, in); code(err) != "InvalidSignatureException" {
		t.Errorf("wrong secret: %s", code(err))
	}
	// A middleware after the signer changes one byte of the body.
	tamper := func(o *secretsmanager.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("tamper", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				req := in.Request.(*smithyhttp.Request)
				body, _ := io.ReadAll(req.GetStream())
				body = bytes.Replace(body, []byte(`"k"`), []byte(`"K"`), 1)
				r2, err := req.SetStream(bytes.NewReader(body))
				if err != nil {
					return middleware.DeserializeOutput{}, middleware.Metadata{}, err
				}
				in.Request = r2
				return next.HandleDeserialize(ctx, in)
			}), middleware.After)
		})
	}
	if _, err := smClient(fake, id, secret, "", tamper).GetSecretValue(ctx, in); code(err) != "InvalidSignatureException" {
		t.Errorf("changed body: %s", code(err))
	}

	// Temporary credentials from STS: a forged token, then expiry.
	role := "arn:aws:iam::" + awsfake.Account + ":role/r"
	fake.AddRole(awsfake.Role{ARN: role, Principals: []string{awsfake.UserARN("alice")}})
	stsc := sts.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""), RetryMaxAttempts: 1},
		func(o *sts.Options) { o.BaseEndpoint = aws.String(fake.URL) })
	out, err := stsc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("s1")})
	if err != nil {
		t.Fatalf("AssumeRole: %v", err)
	}
	c := out.Credentials
	if _, err := smClient(fake, *c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken).GetSecretValue(ctx, in); err != nil {
		t.Fatalf("a call with session credentials: %v", err)
	}
	if _, err := smClient(fake, *c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken+"x").GetSecretValue(ctx, in); code(err) != "UnrecognizedClientException" {
		t.Errorf("forged session token: %s", code(err))
	}
	if _, err := smClient(fake, *c.AccessKeyId, *c.SecretAccessKey, "").GetSecretValue(ctx, in); code(err) != "UnrecognizedClientException" {
		t.Errorf("missing session token: %s", code(err))
	}
	fake.SetClock(func() time.Time { return c.Expiration.Add(time.Second) })
	// The session token's expiry is checked before the request's date.
	exp := smClient(fake, *c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken)
	if _, err := exp.GetSecretValue(ctx, in); code(err) != "ExpiredTokenException" {
		t.Errorf("expired session token: %s", code(err))
	}
	fake.SetClock(func() time.Time { return time.Now().Add(10 * time.Minute) })
	if _, err := smClient(fake, id, secret, "").GetSecretValue(ctx, in); code(err) != "InvalidSignatureException" {
		t.Errorf("a request dated ten minutes off: %s", code(err))
	}
}

// rawCall signs a JSON 1.1 body as the SDK would and posts it: for inputs
// the SDK cannot produce (unknown fields, wrong types).
func rawCall(t *testing.T, fake *awsfake.Server, id, secret, service, target, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, fake.URL+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", target)
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, req, hex.EncodeToString(sum[:]), service, region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStrictInput: unknown fields and wrong types are refused, a signed
// raw request with valid input is answered, and batches over the limits
// are refused through the SDK.
func TestStrictInput(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	fake.PutSecretString("k", "v")
	fake.PutParameter("/p", "v", "String")
	id, secret := fake.AddUser("bob")
	if status, body := rawCall(t, fake, id, secret, "secretsmanager", "secretsmanager.GetSecretValue", `{"SecretId":"k"}`); status != 200 || !strings.Contains(body, `"VersionId"`) {
		t.Fatalf("valid raw call: %d %s", status, body)
	}
	for _, tc := range []struct{ service, target, body string }{
		{"secretsmanager", "secretsmanager.GetSecretValue", `{"SecretId":"k","Extra":1}`},
		{"secretsmanager", "secretsmanager.GetSecretValue", `{"SecretId":5}`},
		{"ssm", "AmazonSSM.GetParameter", `{"Name":"/p","WithDecryption":"yes"}`},
		{"ssm", "AmazonSSM.GetParameters", `{"Names":"/p"}`},
	} {
		status, body := rawCall(t, fake, id, secret, tc.service, tc.target, tc.body)
		if status != 400 || !strings.Contains(body, "SerializationException") {
			t.Errorf("%s %s: %d %s", tc.target, tc.body, status, body)
		}
	}
	ctx := context.Background()
	fake.ResetCalls()
	ids := make([]string, 21)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%d", i)
	}
	if _, err := smClient(fake, id, secret, "").BatchGetSecretValue(ctx, &secretsmanager.BatchGetSecretValueInput{SecretIdList: ids}); code(err) != "ValidationException" {
		t.Errorf("21 secret IDs: %s", code(err))
	}
	ssmc := ssm.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""), RetryMaxAttempts: 1},
		func(o *ssm.Options) { o.BaseEndpoint = aws.String(fake.URL) })
	if _, err := ssmc.GetParameters(ctx, &ssm.GetParametersInput{Names: ids[:11]}); code(err) != "ValidationException" {
		t.Errorf("11 parameter names: %s", code(err))
	}
	if fake.Calls("ssm:GetParameters") != 1 || fake.Calls("secretsmanager:BatchGetSecretValue") != 1 {
		t.Errorf("calls counted: %d GetParameters, %d BatchGetSecretValue", fake.Calls("ssm:GetParameters"), fake.Calls("secretsmanager:BatchGetSecretValue"))
	}
}

// TestLatencyBatchSizesAndSelectors: answers come after the latency set,
// the IDs and names of each batch call are recorded, and parameters read
// at a version or label are answered with their Selector unless the fake
// is told to omit it (as some emulators do); the version number is given
// either way.
func TestLatencyBatchSizesAndSelectors(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	fake.PutSecretString("a", "1")
	fake.PutSecretString("b", "2")
	fake.PutParameter("/p", "one", "String")
	fake.PutParameter("/p", "two", "String")
	fake.LabelParameter("/p", 1, "old")
	id, secret := fake.AddUser("carol")
	ctx := context.Background()

	fake.SetLatency(50*time.Millisecond, 80*time.Millisecond)
	start := time.Now()
	if _, err := smClient(fake, id, secret, "").BatchGetSecretValue(ctx, &secretsmanager.BatchGetSecretValueInput{SecretIdList: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("an answer with a latency of 50-80ms came after %v", d)
	}
	fake.SetLatency(0, 0)

	ssmc := ssm.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""), RetryMaxAttempts: 1},
		func(o *ssm.Options) { o.BaseEndpoint = aws.String(fake.URL) })
	names := []string{"/p", "/p:1", "/p:old"}
	selectors := func() []string {
		out, err := ssmc.GetParameters(ctx, &ssm.GetParametersInput{Names: names})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range out.Parameters {
			got = append(got, fmt.Sprintf("%s%s@%d", aws.ToString(p.Name), aws.ToString(p.Selector), p.Version))
		}
		return got
	}
	if got := strings.Join(selectors(), " "); got != "/p@2 /p:1@1 /p:old@1" {
		t.Errorf("answer with selectors: %s", got)
	}
	fake.OmitSelectors(true)
	if got := strings.Join(selectors(), " "); got != "/p@2 /p@1 /p@1" {
		t.Errorf("answer without selectors: %s", got)
	}
	if got := fmt.Sprint(fake.BatchSizes("secretsmanager:BatchGetSecretValue"), fake.BatchSizes("ssm:GetParameters")); got != "[2] [3 3]" {
		t.Errorf("batch sizes recorded: %s", got)
	}
}

// TestSignatureOverANormalisedPath: like AWS, the fake checks the
// signature over the normalised path, so a GetCallerIdentity signed at "/"
// and sent to "//" (as Vault's aws auth method forwards it) is answered,
// while one signed at another path is not.
func TestSignatureOverANormalisedPath(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("vault-client")
	const body = "Action=GetCallerIdentity&Version=2011-06-15"
	send := func(signedPath, sentPath string) int {
		req, _ := http.NewRequest(http.MethodPost, fake.URL+signedPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, req, hex.EncodeToString(sum[:]), "sts", region, time.Now()); err != nil {
			t.Fatal(err)
		}
		req.URL.Path = sentPath
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && !strings.Contains(string(b), awsfake.UserARN("vault-client")) {
			t.Fatalf("GetCallerIdentity answered %s", b)
		}
		return resp.StatusCode
	}
	if got := send("/", "//"); got != http.StatusOK {
		t.Errorf("signed at / and sent to //: HTTP %d", got)
	}
	if got := send("/other", "/"); got != http.StatusBadRequest {
		t.Errorf("signed at /other and sent to /: HTTP %d, want 400", got)
	}
}
