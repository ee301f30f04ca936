package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"sigs.k8s.io/yaml"
	gopkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

var (
	update        = flag.Bool("update", false, "rewrite the golden files of testdata/convert")
	regenFixtures = flag.Bool("regen-fixtures", false, "make new test keys and certificates in testdata/convert/fixtures")
)

const corpus = "testdata/convert"

// corpusFiles are the ESO manifests of the corpus.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpus, "[0-9]*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !strings.Contains(f, ".samples.") && !strings.Contains(f, ".expect.") && !strings.Contains(f, ".out.") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no corpus")
	}
	return out
}

func convertFile(t *testing.T, file string) *ConvertResult {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert([]ConvertInput{{Name: filepath.Base(file), Data: b}})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return res
}

func findingsText(fs []Finding) string {
	var b bytes.Buffer
	PrintFindings(&b, fs)
	return b.String()
}

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update after checking the change):\n--- got\n%s", path, got)
	}
}

// TestConvertCorpus converts each manifest of the corpus and compares the
// manifests and the findings with their golden files.
func TestConvertCorpus(t *testing.T) {
	for _, file := range corpusFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			res := convertFile(t, file)
			stem := strings.TrimSuffix(file, ".yaml")
			golden(t, stem+".out.yaml", res.Output)
			golden(t, stem+".findings.txt", []byte(findingsText(res.Findings)))
			// Converting the output again changes nothing: it holds no
			// ESO object (the pass-through of foreign kinds aside).
			again, err := Convert([]ConvertInput{{Name: "out", Data: res.Output}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Output, res.Output) {
				t.Error("converting the output again changed it")
			}
		})
	}
}

// TestConvertFindingsNeverHoldValues: the corpus holds values in a fake
// store, a passed-through Secret and a stale annotation; no finding
// repeats one.
func TestConvertFindingsNeverHoldValues(t *testing.T) {
	values := []string{"not-a-real-password", "not-a-real-token", "s.not-a-real-vault-token", "1767225600", "last-applied"}
	for _, file := range corpusFiles(t) {
		text := findingsText(convertFile(t, file).Findings)
		for _, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("%s: a finding repeats the value %q", file, v)
			}
		}
	}
}

func TestConvertCoversEveryKindAndVersion(t *testing.T) {
	seen := map[string]bool{}
	for _, file := range corpusFiles(t) {
		b, _ := os.ReadFile(file)
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var h struct{ APIVersion, Kind string }
			_ = yaml.Unmarshal([]byte(doc), &h)
			seen[h.APIVersion+" "+h.Kind] = true
		}
	}
	for _, want := range []string{
		"external-secrets.io/v1 ExternalSecret", "external-secrets.io/v1beta1 ExternalSecret",
		"external-secrets.io/v1 SecretStore", "external-secrets.io/v1beta1 SecretStore",
		"external-secrets.io/v1 ClusterSecretStore", "external-secrets.io/v1beta1 ClusterSecretStore",
		"external-secrets.io/v1alpha1 PushSecret",
		"external-secrets.io/v1 ClusterExternalSecret", "external-secrets.io/v1beta1 ClusterExternalSecret",
		"external-secrets.io/v1alpha1 ClusterPushSecret",
	} {
		if !seen[want] {
			t.Errorf("the corpus has no %s", want)
		}
	}
}

// fixture reads "file:A+B" samples and expectations.
func fixture(t *testing.T, v string) string {
	t.Helper()
	spec, ok := strings.CutPrefix(v, "file:")
	if !ok {
		return v
	}
	var b strings.Builder
	for _, name := range strings.Split(spec, "+") {
		data, err := os.ReadFile(filepath.Join(corpus, "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// TestConvertedTemplatesRender renders the templates of the corpus, after
// conversion, from sample data, as the controller renders them, and
// compares every key with what it must be.
func TestConvertedTemplatesRender(t *testing.T) {
	var samples map[string]map[string]any
	var expect map[string]map[string]string
	for path, into := range map[string]any{"04-templates.samples.yaml": &samples, "04-templates.expect.yaml": &expect} {
		b, err := os.ReadFile(filepath.Join(corpus, path))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	res := convertFile(t, filepath.Join(corpus, "04-templates.yaml"))
	if res.Dropped() {
		t.Fatalf("the template corpus lost settings:\n%s", findingsText(res.Findings))
	}
	rendered := 0
	for _, doc := range strings.Split(string(res.Output), "---\n") {
		var es v1alpha1.ExternalSecret
		if err := yaml.UnmarshalStrict([]byte(doc), &es); err != nil {
			t.Fatal(err)
		}
		t.Run(es.Name, func(t *testing.T) {
			want, ok := expect[es.Name]
			if !ok {
				t.Fatal("no expectation")
			}
			objs := map[engine.Ref]engine.Object{}
			for _, ref := range engine.Refs(&es.Spec) {
				s, ok := samples[es.Name][ref.Key].(map[string]any)
				if !ok {
					t.Fatalf("no sample for remote key %q", ref.Key)
				}
				fields := map[string][]byte{}
				for k, v := range s {
					fields[k] = []byte(fixture(t, v.(string)))
				}
				objs[ref] = engine.Object{Fields: fields}
			}
			out, err := engine.Render(&es.Spec, objs, nil, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range out.Data {
				got[k] = string(v)
			}
			for k, v := range out.Annotations {
				got["annotation:"+k] = v
			}
			for k, w := range want {
				if g, ok := got[k]; !ok {
					t.Errorf("%s was not rendered", k)
				} else if g != fixture(t, w) {
					t.Errorf("%s = %q, want %q", k, g, fixture(t, w))
				}
				rendered++
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s was rendered but is not expected", k)
				}
			}
		})
	}
	if rendered == 0 {
		t.Fatal("nothing rendered")
	}
}

// TestConvertFixtures makes the test keys and certificates of the
// corpus with -regen-fixtures (then the expectations that name them hold
// again, as they are derived from the same keys); without it, it checks
// that the fixtures agree with each other.
func TestConvertFixtures(t *testing.T) {
	dir := filepath.Join(corpus, "fixtures")
	if *regenFixtures {
		writeFixtures(t, dir)
	}
	// The archive holds the leaf, the CA and the key of the PEM files.
	b64, err := os.ReadFile(filepath.Join(dir, "leaf.p12.b64"))
	if err != nil {
		t.Fatal(err)
	}
	pfx, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		t.Fatal(err)
	}
	_, leaf, cas, err := gopkcs12.DecodeChain(pfx, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})); got != fixture(t, "file:leaf.pem") {
		t.Error("leaf.p12.b64 and leaf.pem differ")
	}
	if len(cas) != 1 || string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cas[0].Raw})) != fixture(t, "file:ca.pem") {
		t.Error("leaf.p12.b64 and ca.pem differ")
	}
}

func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Watchword test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "app.example.com"},
		DNSNames: []string{"app.example.com"}, NotBefore: caTmpl.NotBefore, NotAfter: caTmpl.NotAfter}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(leafKey)
	enc := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	pfx, err := gopkcs12.Modern.Encode(leafKey, leaf, []*x509.Certificate{ca}, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	jwtKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	jwk, err := jose.JSONWebKey{Key: jwtKey, KeyID: "test-signing-key", Algorithm: "ES384", Use: "sig"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	jwtPub, _ := x509.MarshalPKIXPublicKey(&jwtKey.PublicKey)
	jwtPriv, _ := x509.MarshalPKCS8PrivateKey(jwtKey)
	files := map[string]string{
		"ca.pem":          enc("CERTIFICATE", caDER),
		"leaf.pem":        enc("CERTIFICATE", leafDER),
		"leaf.key":        enc("PRIVATE KEY", keyDER),
		"bundle.pem":      enc("CERTIFICATE", leafDER) + enc("CERTIFICATE", caDER) + enc("PRIVATE KEY", keyDER),
		"leaf.p12.b64":    base64.StdEncoding.EncodeToString(pfx),
		"jwk.json":        string(jwk),
		"jwk-public.pem":  enc("PUBLIC KEY", jwtPub),
		"jwk-private.pem": enc("PRIVATE KEY", jwtPriv),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConvertList: what kubectl get -o yaml writes, a v1 List, is
// converted item by item.
func TestConvertList(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: external-secrets.io/v1
  kind: ExternalSecret
  metadata: {name: a, namespace: b, uid: 0b6c, resourceVersion: "7"}
  spec:
    secretStoreRef: {name: s}
    data: [{secretKey: k, remoteRef: {key: db, property: pw}}]
  status: {refreshTime: "2026-01-01T00:00:00Z"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c, namespace: b}
`
	res, err := Convert([]ConvertInput{{Name: "list.yaml", Data: []byte(list)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped() {
		t.Errorf("a List of convertible items dropped settings:\n%s", findingsText(res.Findings))
	}
	docs := strings.Split(string(res.Output), "---\n")
	if len(docs) != 2 || !strings.Contains(docs[0], "kind: ExternalSecret") || strings.Contains(docs[0], "uid") ||
		!strings.Contains(docs[1], "kind: ConfigMap") {
		t.Errorf("output:\n%s", res.Output)
	}
	if !strings.Contains(findingsText(res.Findings), "list.yaml#1.items[1]: ConfigMap b/c") {
		t.Errorf("findings do not name the item:\n%s", findingsText(res.Findings))
	}
}

func TestConvertRefusesOldVersions(t *testing.T) {
	old := "apiVersion: external-secrets.io/v1alpha1\nkind: ExternalSecret\nmetadata: {name: a, namespace: b}\nspec:\n  secretStoreRef: {name: s}\n  dataFrom: [{key: x}]\n"
	res, err := Convert([]ConvertInput{{Name: "old.yaml", Data: []byte(old)}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Dropped() || string(res.Output) != old {
		t.Errorf("a v1alpha1 ExternalSecret: want it passed through unchanged and reported, got\n%s\n%s", res.Output, findingsText(res.Findings))
	}
}

// FuzzConvert: no input makes convert panic, and what it writes always
// decodes (checkTyped) or is refused with an error.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: a}\nspec: {provider: {vault: null}}\n",
		"apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: a}\nspec: {provider: {kubernetes: {server: 3, auth: []}}}\n",
		"apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: a}\nspec: {data: [1, {remoteRef: 2}], dataFrom: [null], target: {template: {templateFrom: [1]}}}\n",
		"apiVersion: external-secrets.io/v1alpha1\nkind: PushSecret\nmetadata: {name: a}\nspec: {selector: 1, secretStoreRefs: [1, {name: x}], data: [1]}\n",
		"apiVersion: v1\nkind: List\nitems: [1, {apiVersion: external-secrets.io/v1, kind: ClusterSecretStore, spec: {conditions: [1]}}]\n",
		"apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: a}\nspec: {provider: {azurekv: {vaultUrl: 'https://v', authType: WorkloadIdentity, authSecretRef: [], serviceAccountRef: 2, identityId: 3}}}\n",
		"apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata: {name: a}\nspec: {provider: {gcpsm: {projectID: 1, auth: {workloadIdentityFederation: {credConfig: 1, serviceAccountRef: {}}, workloadIdentity: 2}}}}\n",
		"apiVersion: external-secrets.io/v1\nkind: SecretStore\nmetadata: {name: a}\nspec: {provider: {alibaba: {regionID: x, auth: {rrsa: {roleArn: 'acs:ram::1', oidcProviderArn: 'acs:ram::2', sessionName: 4}}}}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(_ *testing.T, doc string) {
		_, _ = Convert([]ConvertInput{{Name: "fuzz", Data: []byte(doc)}})
	})
}
