package engine

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestDecodingStrategies(t *testing.T) {
	// Bytes 0xfb 0xff encode to "+/8=" in base64 and to "-_8=" in
	// URL-safe base64: the two alphabets differ there.
	binary := []byte{0xfb, 0xff}
	std, url := base64.StdEncoding.EncodeToString(binary), base64.URLEncoding.EncodeToString(binary)
	cases := []struct {
		name     string
		strategy v1alpha1.DecodingStrategy
		in       string
		want     string
		wantErr  string
	}{
		{name: "unset keeps the value", in: "aGVsbG8=", want: "aGVsbG8="},
		{name: "None keeps the value", strategy: v1alpha1.DecodeNone, in: "aGVsbG8=", want: "aGVsbG8="},
		{name: "Base64 decodes", strategy: v1alpha1.DecodeBase64, in: "aGVsbG8=", want: "hello"},
		{name: "Base64 takes the standard alphabet", strategy: v1alpha1.DecodeBase64, in: std, want: string(binary)},
		{name: "Base64 refuses the URL alphabet", strategy: v1alpha1.DecodeBase64, in: url, wantErr: "is not base64"},
		{name: "Base64 refuses missing padding", strategy: v1alpha1.DecodeBase64, in: "aGVsbG8", wantErr: "is not base64"},
		{name: "Base64URL decodes the URL alphabet", strategy: v1alpha1.DecodeBase64URL, in: url, want: string(binary)},
		{name: "Base64URL refuses the standard alphabet", strategy: v1alpha1.DecodeBase64URL, in: std, wantErr: "is not URL-safe base64"},
		{name: "Auto decodes standard", strategy: v1alpha1.DecodeAuto, in: std, want: string(binary)},
		{name: "Auto decodes URL-safe", strategy: v1alpha1.DecodeAuto, in: url, want: string(binary)},
		{name: "Auto keeps what is not encoded", strategy: v1alpha1.DecodeAuto, in: "not base64!", want: "not base64!"},
		{name: "Auto keeps an empty value", strategy: v1alpha1.DecodeAuto, in: "", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.ExternalSecretSpec{Data: []v1alpha1.ExternalSecretData{{SecretKey: "k",
				RemoteRef: v1alpha1.RemoteReference{Key: "db", DecodingStrategy: tc.strategy}}}}
			res, err := Render(spec, map[Ref]Object{{Key: "db"}: {Value: []byte(tc.in)}}, nil, time.Time{})
			if tc.wantErr != "" {
				var pe *PropertyError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `remote key "db"`) {
					t.Fatalf("err = %v, want a PropertyError naming the key and saying %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), tc.in) {
					t.Errorf("the error %q holds the value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Data["k"]); got != tc.want {
				t.Errorf("k = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodingAfterProperty(t *testing.T) {
	obj := Object{Value: []byte(`{"cert":"` + base64.StdEncoding.EncodeToString([]byte("PEM")) + `","plain":"x y"}`)}
	spec := &v1alpha1.ExternalSecretSpec{Data: []v1alpha1.ExternalSecretData{{SecretKey: "k",
		RemoteRef: v1alpha1.RemoteReference{Key: "db", Property: "cert", DecodingStrategy: v1alpha1.DecodeBase64}}}}
	res, err := Render(spec, map[Ref]Object{{Key: "db"}: obj}, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data["k"]) != "PEM" {
		t.Errorf("k = %q, want the property's value decoded", res.Data["k"])
	}
	spec.Data[0].RemoteRef.Property = "plain"
	_, err = Render(spec, map[Ref]Object{{Key: "db"}: obj}, nil, time.Time{})
	if err == nil || !strings.Contains(err.Error(), `the value of property "plain" is not base64`) {
		t.Errorf("err = %v, want the property named", err)
	}
}

func TestDecodingDataFrom(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString
	objs := map[Ref]Object{
		{Key: "app"}:       {Fields: map[string][]byte{"user": []byte(enc([]byte("admin"))), "pass": []byte(enc([]byte("s3cret")))}},
		{Key: "mixed"}:     {Fields: map[string][]byte{"a": []byte(enc([]byte("A"))), "b": []byte("plain text")}},
		{Key: "p/one"}:     {Value: []byte(enc([]byte("1")))},
		{Key: "p/two"}:     {Value: []byte("2 not encoded")},
		{Key: "p/encoded"}: {Value: []byte(enc([]byte("three")))},
	}
	t.Run("remoteRef decodes every field", func(t *testing.T) {
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "app", DecodingStrategy: v1alpha1.DecodeBase64}}}}
		res, err := Render(spec, objs, nil, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data["user"]) != "admin" || string(res.Data["pass"]) != "s3cret" {
			t.Errorf("data = %q", res.Data)
		}
	})
	t.Run("remoteRef Base64 names the field that is not encoded", func(t *testing.T) {
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "mixed", DecodingStrategy: v1alpha1.DecodeBase64}}}}
		_, err := Render(spec, objs, nil, time.Time{})
		if err == nil || !strings.Contains(err.Error(), `remote key "mixed": field "b" is not base64`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("remoteRef Auto decodes what it can", func(t *testing.T) {
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "mixed", DecodingStrategy: v1alpha1.DecodeAuto}}}}
		res, err := Render(spec, objs, nil, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data["a"]) != "A" || string(res.Data["b"]) != "plain text" {
			t.Errorf("data = %q", res.Data)
		}
	})
	t.Run("find decodes every match", func(t *testing.T) {
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{Find: &v1alpha1.ExternalSecretFind{Path: "p/", DecodingStrategy: v1alpha1.DecodeAuto}}}}
		res, err := RenderFound(spec, objs, Found{0: {"p/encoded", "p/one", "p/two"}}, nil, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"p_one": "1", "p_two": "2 not encoded", "p_encoded": "three"}
		for k, v := range want {
			if string(res.Data[k]) != v {
				t.Errorf("%s = %q, want %q", k, res.Data[k], v)
			}
		}
	})
	t.Run("find Base64 names the remote key that is not encoded", func(t *testing.T) {
		spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{Find: &v1alpha1.ExternalSecretFind{Path: "p/", DecodingStrategy: v1alpha1.DecodeBase64}}}}
		_, err := RenderFound(spec, objs, Found{0: {"p/encoded", "p/one", "p/two"}}, nil, time.Time{})
		if err == nil || !strings.Contains(err.Error(), `remote key "p/two": the value is not base64`) {
			t.Errorf("err = %v", err)
		}
	})
}
