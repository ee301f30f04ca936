package alibabafake

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	openapi "github.com/alibabacloud-go/darabonba-openapi/v2/client"
	kms "github.com/alibabacloud-go/kms-20160120/v3/client"
	util "github.com/alibabacloud-go/tea-utils/v2/service"
	"github.com/alibabacloud-go/tea/tea"
)

// client is the official SDK's KMS client of the fake, with an AccessKey
// allowed every action.
func client(t *testing.T, s *Server, secret string) *kms.Client {
	t.Helper()
	u, err := url.Parse(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	c, err := kms.NewClient(&openapi.Config{AccessKeyId: tea.String("LTAI5tTest"), AccessKeySecret: tea.String(secret),
		RegionId: tea.String("cn-hangzhou"), Endpoint: tea.String(u.Host), Protocol: tea.String("HTTP")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(t *testing.T, err error) string {
	t.Helper()
	var sdk *tea.SDKError
	if !errors.As(err, &sdk) {
		t.Fatalf("error %v is not an SDK error with a code", err)
	}
	return tea.StringValue(sdk.Code)
}

func TestTheFakeRefusesWhatKMSRefuses(t *testing.T) {
	s := New(t)
	s.AddKey("LTAI5tTest", "right-secret", "kms:*")
	s.PutValue("db", []byte("v"))
	c := client(t, s, "right-secret")

	// A correct call through the SDK.
	resp, err := c.GetSecretValue(&kms.GetSecretValueRequest{SecretName: tea.String("db")})
	if err != nil || tea.StringValue(resp.Body.SecretData) != "v" || tea.StringValue(resp.Body.VersionId) != "v1" {
		t.Fatalf("GetSecretValue: %v", err)
	}

	// A real KMS action the fake does not serve.
	_, err = c.ListKeys(&kms.ListKeysRequest{})
	if got := code(t, err); got != "InvalidAction.NotFound" {
		t.Errorf("unknown action: %s", got)
	}

	// An unknown parameter, sent through the SDK's generic call.
	_, err = c.CallApi(&openapi.Params{Action: tea.String("GetSecretValue"), Version: tea.String(APIVersion), Protocol: tea.String("HTTP"),
		Pathname: tea.String("/"), Method: tea.String("POST"), AuthType: tea.String("AK"), Style: tea.String("RPC"),
		ReqBodyType: tea.String("formData"), BodyType: tea.String("json")},
		&openapi.OpenApiRequest{Query: map[string]*string{"SecretName": tea.String("db"), "Bogus": tea.String("1")}}, &util.RuntimeOptions{})
	if got := code(t, err); got != "InvalidParameter" {
		t.Errorf("unknown parameter: %s", got)
	}

	// A replayed nonce.
	rt := &util.RuntimeOptions{ExtendsParameters: &util.ExtendsParameters{Headers: map[string]*string{"x-acs-signature-nonce": tea.String("fixed-nonce")}}}
	if _, err = c.GetSecretValueWithOptions(&kms.GetSecretValueRequest{SecretName: tea.String("db")}, rt); err != nil {
		t.Fatalf("first use of a nonce: %v", err)
	}
	_, err = c.GetSecretValueWithOptions(&kms.GetSecretValueRequest{SecretName: tea.String("db")}, rt)
	if got := code(t, err); got != "SignatureNonceUsed" {
		t.Errorf("replayed nonce: %s", got)
	}

	// A wrong secret, and a missing required parameter.
	_, err = client(t, s, "wrong-secret").GetSecretValue(&kms.GetSecretValueRequest{SecretName: tea.String("db")})
	if got := code(t, err); got != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %s", got)
	}
	_, err = c.GetSecretValue(&kms.GetSecretValueRequest{})
	if got := code(t, err); got != "MissingParameter" {
		t.Errorf("missing SecretName: %s", got)
	}

	// A version ID used twice, and a tag key of Alibaba's own.
	_, err = c.PutSecretValue(&kms.PutSecretValueRequest{SecretName: tea.String("db"), SecretData: tea.String("w"), VersionId: tea.String("v1")})
	if got := code(t, err); got != "Rejected.ResourceExist" {
		t.Errorf("repeated version ID: %s", got)
	}
	_, err = c.TagResource(&kms.TagResourceRequest{SecretName: tea.String("db"), Tags: tea.String(`[{"TagKey":"acs:x","TagValue":"y"}]`)})
	if got := code(t, err); !strings.HasPrefix(got, "InvalidParameter") {
		t.Errorf("reserved tag key: %s", got)
	}
	if n := s.Calls("refused"); n != 5 {
		t.Errorf("%d requests refused before an action; want 5 (action, parameter, nonce, signature, missing parameter)", n)
	}
}

func TestTheFakeSTSIssuesCredentialsThatNeedTheirToken(t *testing.T) {
	s := New(t)
	s.VerifyOIDCToken = func(_ context.Context, token string) (string, []string, error) {
		if token != "good-token" {
			return "", nil, errors.New("bad token")
		}
		return "system:serviceaccount:team:reader", []string{Audience}, nil
	}
	const role, provider = "acs:ram::1:role/r", "acs:ram::1:oidc-provider/p"
	s.AddOIDCRole(role, provider, "system:serviceaccount:team:reader", "kms:GetSecretValue")
	s.PutValue("db", []byte("v"))
	u, _ := url.Parse(s.Endpoint())
	sts, err := openapi.NewClient(&openapi.Config{Endpoint: tea.String(u.Host), Protocol: tea.String("HTTP")})
	if err != nil {
		t.Fatal(err)
	}
	assume := func(token string) (map[string]any, error) {
		return sts.CallApi(&openapi.Params{Action: tea.String("AssumeRoleWithOIDC"), Version: tea.String("2015-04-01"), Protocol: tea.String("HTTP"),
			Pathname: tea.String("/"), Method: tea.String("POST"), AuthType: tea.String("Anonymous"), Style: tea.String("RPC"),
			ReqBodyType: tea.String("formData"), BodyType: tea.String("json")},
			&openapi.OpenApiRequest{Body: map[string]any{"RoleArn": role, "OIDCProviderArn": provider, "OIDCToken": token, "RoleSessionName": "s"}},
			&util.RuntimeOptions{})
	}
	if _, err = assume("forged-token"); code(t, err) != "AuthenticationFail.OIDCToken.Invalid" {
		t.Errorf("forged token: %s", code(t, err))
	}
	resp, err := assume("good-token")
	if err != nil {
		t.Fatal(err)
	}
	creds := resp["body"].(map[string]any)["Credentials"].(map[string]any)
	kmsWith := func(token string) error {
		c, cerr := kms.NewClient(&openapi.Config{AccessKeyId: tea.String(creds["AccessKeyId"].(string)), AccessKeySecret: tea.String(creds["AccessKeySecret"].(string)),
			SecurityToken: tea.String(token), RegionId: tea.String("cn-hangzhou"), Endpoint: tea.String(u.Host), Protocol: tea.String("HTTP")})
		if cerr != nil {
			t.Fatal(cerr)
		}
		_, cerr = c.GetSecretValue(&kms.GetSecretValueRequest{SecretName: tea.String("db")})
		return cerr
	}
	if err = kmsWith(creds["SecurityToken"].(string)); err != nil {
		t.Fatalf("with the issued token: %v", err)
	}
	if err = kmsWith("CAISforged"); code(t, err) != "InvalidSecurityToken.Mismatch" {
		t.Errorf("another token: %s", code(t, err))
	}
	// Credentials issued already expired.
	s.CredentialLifetime = -time.Minute
	if resp, err = assume("good-token"); err != nil {
		t.Fatal(err)
	}
	creds = resp["body"].(map[string]any)["Credentials"].(map[string]any)
	if err = kmsWith(creds["SecurityToken"].(string)); code(t, err) != "InvalidSecurityToken.Expired" {
		t.Errorf("expired credentials: %s", code(t, err))
	}
}
