package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestParseTemplateAndStatus(t *testing.T) {
	c, err := parseTemplate([]string{"-f", "es.yaml", "--data", "d.yaml", "--configmap", "a.yaml", "--configmap", "b.yaml"}, io.Discard)
	if err != nil || c.ExternalSecret != "es.yaml" || len(c.ConfigMaps) != 2 || c.ShowValues {
		t.Fatalf("parseTemplate = %+v, %v", c, err)
	}
	if _, err = parseTemplate([]string{"-f", "es.yaml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--data is needed") {
		t.Errorf("parseTemplate without --data = %v", err)
	}
	c, err = parseTemplate([]string{"-f", "es.yaml", "--live", "-n", "team-a"}, io.Discard)
	if err != nil || !c.Live || c.Namespace != "team-a" || c.Data != "" {
		t.Errorf("parseTemplate --live = %+v, %v", c, err)
	}
	if c, err = parseTemplate([]string{"--live", "--name", "app", "-n", "team-a"}, io.Discard); err != nil || c.Name != "app" || c.ExternalSecret != "" {
		t.Errorf("parseTemplate --live --name = %+v, %v", c, err)
	}
	for bad, want := range map[string][]string{
		"--data and --live together": {"-f", "es.yaml", "--live", "--data", "d.yaml"},
		"are for --live":             {"-f", "es.yaml", "--data", "d.yaml", "-n", "team-a"},
		"-f is needed":               {"--live"},
		"--name is for --live":       {"--name", "app", "--data", "d.yaml"},
	} {
		if _, err := parseTemplate(want, io.Discard); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("parseTemplate(%q) = %v, want %q", want, err, bad)
		}
	}
	if _, err := parseStatus([]string{"-n", "a", "-A"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-n and -A together") {
		t.Errorf("parseStatus -n -A = %v", err)
	}
	if _, err := parseStatus([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, io.Discard); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("parseStatus with a missing kubeconfig = %v", err)
	}
}

func TestParseRefresh(t *testing.T) {
	c, err := parseRefresh([]string{"-n", "demo", "a", "b"}, io.Discard)
	if err != nil || c.Namespace != "demo" || len(c.Names) != 2 || c.Timeout <= 0 {
		t.Fatalf("parseRefresh = %+v, %v", c, err)
	}
	for _, bad := range [][]string{{}, {"--all", "a"}, {"--timeout", "0s", "a"}, {"a", "-n", "prod"}} {
		if _, err := parseRefresh(bad, io.Discard); err == nil {
			t.Errorf("parseRefresh(%q) was accepted", bad)
		}
	}
}

func TestConvertExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := write("clean.yaml", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: a, namespace: b}\n"+
		"spec:\n  secretStoreRef: {name: s}\n  data:\n  - secretKey: k\n    remoteRef: {key: db, property: password}\n")
	lossy := write("lossy.yaml", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: a, namespace: b}\n"+
		"spec:\n  secretStoreRef: {name: s}\n  data:\n  - secretKey: k\n    sourceRef: {generatorRef: {kind: Password, name: pw}}\n    remoteRef: {key: db}\n")
	broken := write("broken.yaml", "kind: [\n")

	c, err := parseConvert([]string{"-f", clean, "-o", dir + "/out.yaml"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if err := runConvert(c, nil, io.Discard, &stderr); err != nil {
		t.Errorf("a manifest carried whole: %v, want no error (exit 0)", err)
	}
	if out, _ := os.ReadFile(dir + "/out.yaml"); !strings.Contains(string(out), "external-secrets.x-k8s.io/v1alpha1") {
		t.Errorf("-o did not get the converted manifest: %s", out)
	}
	c, _ = parseConvert([]string{"-f", "-"}, io.Discard)
	lossyBody, _ := os.ReadFile(lossy)
	stderr.Reset()
	if err := runConvert(c, strings.NewReader(string(lossyBody)), io.Discard, &stderr); !errors.Is(err, errDropped) {
		t.Errorf("a manifest with a dropped field: %v, want errDropped (exit %d)", err, exitConvertDropped)
	}
	if !strings.Contains(stderr.String(), "spec.data[0]: sourceRef") {
		t.Errorf("stderr does not name the dropped field:\n%s", stderr.String())
	}
	c, _ = parseConvert([]string{"-f", broken}, io.Discard)
	if err := runConvert(c, nil, io.Discard, io.Discard); err == nil || errors.Is(err, errDropped) {
		t.Errorf("a manifest that does not parse: %v, want an error (exit 1)", err)
	}
	if _, err := parseConvert(nil, io.Discard); err == nil {
		t.Error("convert without -f was accepted")
	}
}
