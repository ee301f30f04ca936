package integration

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// The fields External Secrets Operator's users reach for every day:
// decodingStrategy, refreshPolicy, target.immutable, templateFrom from a
// Secret or a literal, rewrite by template.

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64url(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }

// TestDecodingStrategyDecodesAndKeepsTheTargetOnBadInput: each strategy
// decodes as External Secrets Operator's does, on data[], a dataFrom
// remoteRef and a find; a value that stops being base64 fails the sync
// with PropertyError naming the key, never the value, and the target keeps
// its data.
func TestDecodingStrategyDecodesAndKeepsTheTargetOnBadInput(t *testing.T) {
	ns := newNamespace(t, nil)
	// "\xfb\xff?" encodes with '+' and '/' in base64, '-' and '_' in
	// URL-safe base64.
	const binary = "\xfb\xff?"
	fakeStore(t, ns, "store",
		fakeEntry{key: "cert", value: b64("PEM DATA")},
		fakeEntry{key: "urlsafe", value: b64url(binary)},
		fakeEntry{key: "mixed", value: `{"enc":"` + b64("decoded") + `","plain":"not base64!"}`},
		fakeEntry{key: "keys/one", value: b64url(binary)},
		fakeEntry{key: "keys/two", value: "plain value"})
	newES(t, ns, "decoded", "store", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = []v1alpha1.ExternalSecretData{
			{SecretKey: "cert", RemoteRef: v1alpha1.RemoteReference{Key: "cert", DecodingStrategy: v1alpha1.DecodeBase64}},
			{SecretKey: "urlsafe", RemoteRef: v1alpha1.RemoteReference{Key: "urlsafe", DecodingStrategy: v1alpha1.DecodeBase64URL}},
			{SecretKey: "raw", RemoteRef: v1alpha1.RemoteReference{Key: "cert"}},
		}
		es.Spec.DataFrom = []v1alpha1.ExternalSecretDataFrom{
			{RemoteRef: &v1alpha1.RemoteReference{Key: "mixed", DecodingStrategy: v1alpha1.DecodeAuto}},
			{Find: &v1alpha1.ExternalSecretFind{Path: "keys/", DecodingStrategy: v1alpha1.DecodeAuto}},
		}
	})
	waitSecretData(t, ns, "decoded", map[string]string{
		"cert": "PEM DATA", "urlsafe": binary, "raw": b64("PEM DATA"),
		"enc": "decoded", "plain": "not base64!",
		"keys_one": binary, "keys_two": "plain value",
	})

	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) {
		for i := range s.Spec.Fake.Data {
			if s.Spec.Fake.Data[i].Key == "cert" {
				s.Spec.Fake.Data[i].Value = "LEAKED-IF-SHOWN not base64"
			}
		}
	})
	es := waitCondition(t, ns, "decoded", "PropertyError", `remote key "cert"`, "is not base64", "decodingStrategy Base64")
	if msg := readyCond(es).Message; strings.Contains(msg, "LEAKED-IF-SHOWN") {
		t.Errorf("Ready's message %q holds the value", msg)
	}
	s, err := getSecret(ns, "decoded")
	must(t, err)
	if string(s.Data["cert"]) != "PEM DATA" {
		t.Errorf("the target lost its data: cert = %q", s.Data["cert"])
	}
}

// TestDecodingStrategyUnknownIsRefused: the API server refuses a strategy
// it does not know.
func TestDecodingStrategyUnknownIsRefused(t *testing.T) {
	ns := newNamespace(t, nil)
	u := loadSeed(t, "testdata/seed-externalsecret.yaml", ns)
	data, _, _ := unstructured.NestedSlice(u.Object, "spec", "data")
	if len(data) == 0 {
		t.Fatal("the seed example has no data entry")
	}
	ref := data[0].(map[string]any)["remoteRef"].(map[string]any)
	ref["decodingStrategy"] = "Hex"
	must(t, unstructured.SetNestedSlice(u.Object, data, "spec", "data"))
	err := k8s.Create(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), `Unsupported value: "Hex"`) {
		t.Fatalf("err = %v, want the strategy refused", err)
	}
}
