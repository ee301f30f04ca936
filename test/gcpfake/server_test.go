package gcpfake

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"testing"
	"time"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// These tests speak to the fake with the generated gRPC stub alone (no
// client library), to check that it refuses what Secret Manager refuses.

// selfSigned signs a token as the key file's service account would.
func selfSignedJWT(t *testing.T, keyJSON []byte, audience string) string {
	t.Helper()
	var k struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		ClientEmail  string `json:"client_email"`
	}
	if err := json.Unmarshal(keyJSON, &k); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(k.PrivateKey))
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.(*rsa.PrivateKey)},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.PrivateKeyID))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: k.ClientEmail, Subject: k.ClientEmail, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestFakeRefusesWhatSecretManagerRefuses(t *testing.T) {
	s := New(t, "p")
	_, key := s.NewServiceAccount("reader", "secretmanager.versions.access")
	_, other := s.NewServiceAccount("other")
	global := "projects/p/secrets/db/versions/latest"
	regional := "projects/p/locations/europe-west1/secrets/db/versions/latest"
	s.AddVersion("projects/p/secrets/db", []byte("v"))
	s.AddVersion("projects/p/locations/europe-west1/secrets/db", []byte("v"))

	call := func(host, name, tok, params string) error {
		conn, err := grpc.NewClient("dns:///"+host+":443", s.GRPCOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx := context.Background()
		if tok != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", params)
		_, err = secretmanagerpb.NewSecretManagerServiceClient(conn).AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: name})
		return err
	}
	good := selfSignedJWT(t, key, "https://secretmanager.googleapis.com/")
	for _, tc := range []struct {
		name      string
		host, res string
		tok       string
		params    string
		want      codes.Code
	}{
		{"a valid call", "secretmanager.googleapis.com", global, good, "name=" + url.QueryEscape(global), codes.OK},
		{"no token", "secretmanager.googleapis.com", global, "", "name=" + url.QueryEscape(global), codes.Unauthenticated},
		{"a token signed by another account's key with this one's key ID", "secretmanager.googleapis.com", global,
			forge(t, key, other), "name=" + url.QueryEscape(global), codes.Unauthenticated},
		{"another audience", "secretmanager.googleapis.com", global, selfSignedJWT(t, key, "https://storage.googleapis.com/"), "name=" + url.QueryEscape(global), codes.Unauthenticated},
		{"no routing header", "secretmanager.googleapis.com", global, good, "", codes.InvalidArgument},
		{"a regional secret at the global endpoint", "secretmanager.googleapis.com", regional, good, "name=" + url.QueryEscape(regional), codes.InvalidArgument},
		{"a regional secret at its endpoint", "secretmanager.europe-west1.rep.googleapis.com", regional, good, "name=" + url.QueryEscape(regional), codes.OK},
		{"another project", "secretmanager.googleapis.com", "projects/q/secrets/db/versions/1", good, "name=" + url.QueryEscape("projects/q/secrets/db/versions/1"), codes.PermissionDenied},
		{"a permission the account lacks", "secretmanager.googleapis.com", global, selfSignedJWT(t, other, "https://secretmanager.googleapis.com/"), "name=" + url.QueryEscape(global), codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(call(tc.host, tc.res, tc.tok, tc.params)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// forge signs with other's private key but names key's account and key ID.
func forge(t *testing.T, key, other []byte) string {
	t.Helper()
	var k, o map[string]string
	_ = json.Unmarshal(key, &k)
	_ = json.Unmarshal(other, &o)
	o["client_email"], o["private_key_id"] = k["client_email"], k["private_key_id"]
	b, _ := json.Marshal(o)
	return selfSignedJWT(t, b, "https://secretmanager.googleapis.com/")
}
