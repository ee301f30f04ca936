package awsfake_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/watchword-dev/watchword/test/awsfake"
)

func ecrClient(fake *awsfake.Server, id, secret string) *ecr.Client {
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""), RetryMaxAttempts: 1}
	return ecr.NewFromConfig(cfg, func(o *ecr.Options) { o.BaseEndpoint = aws.String(fake.URL) })
}

// TestECRAuthorizationToken: the SDK's GetAuthorizationToken, signed for
// service ecr, gets a base64 AWS:PASSWORD token for the caller's registry
// or the one it names, with the expiry the test set; a wrong secret, a
// malformed registry ID and a denied caller are refused with AWS's codes.
func TestECRAuthorizationToken(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("puller")
	ctx := context.Background()
	fake.SetECRTokenLifetime(90 * time.Second)
	before := time.Now()

	out, err := ecrClient(fake, id, secret).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		t.Fatalf("a signed call: %v", err)
	}
	if len(out.AuthorizationData) != 1 {
		t.Fatalf("got %d authorizations, want 1", len(out.AuthorizationData))
	}
	a := out.AuthorizationData[0]
	if got, want := aws.ToString(a.ProxyEndpoint), "https://"+awsfake.Account+".dkr.ecr."+region+".amazonaws.com"; got != want {
		t.Errorf("proxy endpoint %q, want %q", got, want)
	}
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(a.AuthorizationToken))
	if err != nil {
		t.Fatalf("token is not base64: %v", err)
	}
	if pw := fake.ECRPasswords(); len(pw) != 1 || string(raw) != "AWS:"+pw[0] {
		t.Errorf("token is not AWS: and the issued password")
	}
	if exp := aws.ToTime(a.ExpiresAt); exp.Before(before.Add(89*time.Second)) || exp.After(time.Now().Add(91*time.Second)) {
		t.Errorf("expiresAt %v is not 90s from the call", exp)
	}
	if n := fake.Calls("ecr:GetAuthorizationToken"); n != 1 {
		t.Errorf("counted %d calls, want 1", n)
	}

	// registryIds are deprecated (the token is good for every registry),
	// but ECR still takes them, and the fake checks them as ECR does.
	other := "444455556666"
	//nolint:staticcheck // SA1019: the fake must check the deprecated field as ECR still does.
	out, err = ecrClient(fake, id, secret).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{RegistryIds: []string{other}})
	if err != nil || len(out.AuthorizationData) != 1 || !strings.HasPrefix(aws.ToString(out.AuthorizationData[0].ProxyEndpoint), "https://"+other+".") {
		t.Errorf("registry %s: %v %+v", other, err, out)
	}
	//nolint:staticcheck // SA1019: as above.
	if _, err = ecrClient(fake, id, secret).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{RegistryIds: []string{"12"}}); code(err) != "InvalidParameterException" {
		t.Errorf("malformed registry ID: %s", code(err))
	}
	if _, err = ecrClient(fake, id, "wrong"+secret[5:]).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{}); code(err) != "InvalidSignatureException" {
		t.Errorf("wrong secret: %s", code(err))
	}
	fake.Deny(awsfake.UserARN("puller"), "ecr:GetAuthorizationToken")
	if _, err = ecrClient(fake, id, secret).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{}); code(err) != "AccessDeniedException" {
		t.Errorf("denied caller: %s", code(err))
	}
}
