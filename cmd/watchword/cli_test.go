package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseTemplateAndStatus(t *testing.T) {
	c, err := parseTemplate([]string{"-f", "es.yaml", "--data", "d.yaml", "--configmap", "a.yaml", "--configmap", "b.yaml"}, io.Discard)
	if err != nil || c.ExternalSecret != "es.yaml" || len(c.ConfigMaps) != 2 || c.ShowValues {
		t.Fatalf("parseTemplate = %+v, %v", c, err)
	}
	if _, err := parseTemplate([]string{"-f", "es.yaml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-f and --data are both needed") {
		t.Errorf("parseTemplate without --data = %v", err)
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
