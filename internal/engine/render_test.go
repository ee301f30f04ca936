package engine

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

func data(key, prop, secretKey string) v1alpha1.ExternalSecretData {
	return v1alpha1.ExternalSecretData{SecretKey: secretKey, RemoteRef: v1alpha1.RemoteReference{Key: key, Property: prop}}
}

func TestRenderMergeOrder(t *testing.T) {
	objs := map[Ref]Object{
		{Key: "a"}: {Version: "3", Value: []byte(`{"x":"from-a","y":"from-a"}`)},
		{Key: "b"}: {Version: "7", Value: []byte(`{"y":"from-b","z":"from-b"}`)},
		{Key: "c"}: {Version: "1", Value: []byte(`explicit`)},
	}
	spec := &v1alpha1.ExternalSecretSpec{
		DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "a"}}, {RemoteRef: &v1alpha1.RemoteReference{Key: "b"}}},
		Data:     []v1alpha1.ExternalSecretData{data("c", "", "z")},
	}
	res, err := Render(spec, objs, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"x": "from-a", "y": "from-b", "z": "explicit"}
	for k, v := range want {
		if string(res.Data[k]) != v {
			t.Errorf("%s = %q, want %q (later dataFrom wins, data wins over dataFrom)", k, res.Data[k], v)
		}
	}
	if len(res.Versions) != 3 || res.Versions[0] != (v1alpha1.RemoteVersion{Key: "a", Version: "3"}) || res.Versions[1].Version != "7" {
		t.Errorf("versions = %v", res.Versions)
	}
}

func render(t *testing.T, tmpl map[string]string, fetched map[string]string) (map[string][]byte, error) {
	t.Helper()
	fields := map[string][]byte{}
	for k, v := range fetched {
		fields[k] = []byte(v)
	}
	spec := &v1alpha1.ExternalSecretSpec{
		DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "src"}}},
		Target:   v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{Data: tmpl}},
	}
	res, err := Render(spec, map[Ref]Object{{Key: "src"}: {Fields: fields}}, nil, time.Time{})
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

func TestTemplateDockerConfigJSON(t *testing.T) {
	out, err := render(t, map[string]string{
		".dockerconfigjson": `{{ dockerConfigJson .data.server .data.user .data.token }}`,
	}, map[string]string{"server": "registry.example.com", "user": "robot", "token": "t0k"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(out[".dockerconfigjson"], &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	a := doc.Auths["registry.example.com"]
	wantAuth := base64.StdEncoding.EncodeToString([]byte("robot:t0k"))
	if a.Username != "robot" || a.Password != "t0k" || a.Auth != wantAuth {
		t.Fatalf("auth entry = %+v", a)
	}
	if len(out) != 1 {
		t.Fatalf("Replace merge policy must keep only templated keys, got %d keys", len(out))
	}
}

func TestTemplateJDBCURLWithDashedKeys(t *testing.T) {
	out, err := render(t, map[string]string{
		"url": `jdbc:postgresql://{{ .data.host }}:{{ index .data "db-port" }}/{{ get .data "db-name" }}?user={{ .data.user }}&password={{ .data.password | urlquery }}`,
	}, map[string]string{"host": "db", "db-port": "5432", "db-name": "orders", "user": "app", "password": "p&ss/word"})
	if err != nil {
		t.Fatal(err)
	}
	want := "jdbc:postgresql://db:5432/orders?user=app&password=p%26ss%2Fword"
	if string(out["url"]) != want {
		t.Fatalf("url = %q, want %q", out["url"], want)
	}
}

func TestTemplatePEMHelpers(t *testing.T) {
	rootPEM, leafPEM, keyPEM := testChain(t)
	bundle := leafPEM + rootPEM + keyPEM
	out, err := render(t, map[string]string{
		"tls.crt": `{{ pemLeaf .data.bundle }}`,
		"ca.crt":  `{{ pemChain .data.bundle }}`,
		"tls.key": `{{ pemPrivateKey .data.bundle }}`,
		"all":     `{{ pemCertificates .data.bundle }}`,
		"count":   `{{ len (pemBlocks .data.bundle) }}`,
		"subject": `{{ certSubject .data.bundle }}`,
	}, map[string]string{"bundle": bundle})
	if err != nil {
		t.Fatal(err)
	}
	if string(out["tls.crt"]) != leafPEM || string(out["ca.crt"]) != rootPEM || string(out["tls.key"]) != keyPEM {
		t.Fatal("PEM split does not give back the leaf, the chain and the key")
	}
	if string(out["all"]) != leafPEM+rootPEM || string(out["count"]) != "3" || string(out["subject"]) != "CN=leaf.example.com" {
		t.Fatalf("all/count/subject = %q / %q / %q", out["all"], out["count"], out["subject"])
	}
}

func TestTemplateEncodings(t *testing.T) {
	out, err := render(t, map[string]string{
		"b64":   `{{ .data.v | b64enc }}`,
		"round": `{{ .data.v | b64enc | b64dec }}`,
		"hex":   `{{ .data.v | hexenc }}`,
		"json":  `{{ (fromJson .data.doc).a.b }}`,
		"yaml":  `{{ (fromYaml .data.yml).key }}`,
		"toj":   `{{ dict "k" .data.v | toJson }}`,
		"up":    `{{ .data.v | upper }}`,
		"top":   `{{ .v }}`,
	}, map[string]string{"v": "hi", "doc": `{"a":{"b":"deep"}}`, "yml": "key: val\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"b64": "aGk=", "round": "hi", "hex": "6869", "json": "deep", "yaml": "val", "toj": `{"k":"hi"}`, "up": "HI", "top": "hi"}
	for k, v := range want {
		if string(out[k]) != v {
			t.Errorf("%s = %q, want %q", k, out[k], v)
		}
	}
}

func TestTemplateErrorsNameTheKeyAndNoValue(t *testing.T) {
	cases := map[string]string{
		"parse":       `{{ .data.x `,
		"missing key": `{{ .data.nope }}`,
		"bad b64":     `{{ .data.secret | b64dec }}`,
		"bad json":    `{{ fromJson .data.secret }}`,
		"required":    `{{ required "password is required" .data.empty }}`,
	}
	for name, tmpl := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, map[string]string{"out-key": tmpl}, map[string]string{"secret": "TOPSECRET%%", "empty": ""})
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("want a TemplateError, got %v", err)
			}
			if !strings.Contains(err.Error(), `"out-key"`) {
				t.Errorf("error %q does not name the template key", err)
			}
			if strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("error %q leaks the value", err)
			}
			if !failure.Terminal(err) {
				t.Error("a template error must not be retried")
			}
		})
	}
}

func TestTemplateOutputIsBounded(t *testing.T) {
	_, err := render(t, map[string]string{"big": `{{ range $i, $e := split "," .data.many }}{{ $.data.blob }}{{ end }}`},
		map[string]string{"many": strings.Repeat(",", 5000), "blob": strings.Repeat("x", 1024)})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("want a size error, got %v", err)
	}
}

func testChain(t *testing.T) (rootPEM, leafPEM, keyPEM string) {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rootTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "root"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf.example.com"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, rootTmpl, &leafKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(leafKey)
	enc := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	return enc("CERTIFICATE", rootDER), enc("CERTIFICATE", leafDER), enc("EC PRIVATE KEY", keyDER)
}

func FuzzRender(f *testing.F) {
	f.Add(`{{ .data.a }}`, `{"a":"x"}`, "a")
	f.Add(`{{ fromJson .data.a | toYaml }}`, `{"a":"{\"b\":1}"}`, "a.b")
	f.Add(`{{ pemBlocks .data.a }}`, `{"a":"-----BEGIN X-----\nAA==\n-----END X-----\n"}`, "")
	f.Fuzz(func(t *testing.T, tmpl, value, property string) {
		spec := &v1alpha1.ExternalSecretSpec{
			Data:   []v1alpha1.ExternalSecretData{data("k", property, "out")},
			Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{Data: map[string]string{"t": tmpl}, MergePolicy: v1alpha1.TemplateMergeMerge}},
		}
		res, err := Render(spec, map[Ref]Object{{Key: "k"}: {Value: []byte(value)}}, nil, time.Time{})
		if err != nil {
			var te *TemplateError
			var pe *PropertyError
			if !errors.As(err, &te) && !errors.As(err, &pe) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if len(res.Data["t"]) > maxRendered {
			t.Fatal("output over the bound")
		}
	})
}

func TestRenderDataReplacesOrMerges(t *testing.T) {
	data := map[string][]byte{"user": []byte("app"), "pass": []byte("s3cret")}
	tmpl := map[string]string{"dsn": "{{ .data.user }}:{{ .data.pass }}", "user": "{{ .data.user | upper }}"}
	got, err := RenderData(tmpl, false, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["dsn"]) != "app:s3cret" || string(got["user"]) != "APP" {
		t.Errorf("Replace = %q", got)
	}
	got, err = RenderData(tmpl, true, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got["pass"]) != "s3cret" || string(got["user"]) != "APP" {
		t.Errorf("Merge = %q, want the selected keys too, templated ones winning", got)
	}
	if _, err := RenderData(map[string]string{"x": "{{ .data.nope }}"}, false, data); err == nil {
		t.Error("a missing key rendered")
	}
}
