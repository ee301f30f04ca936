package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAgent(t *testing.T) {
	c, err := parseAgent([]string{"--config", "a.yaml", "--once", "--health-addr", ":8081"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config != "a.yaml" || !c.Once || c.Addr != ":8081" || c.Log.Level != "info" {
		t.Errorf("parsed %+v", c)
	}
	if c, err = parseAgent([]string{"--config", "a.yaml"}, io.Discard); err != nil || c.Once || c.Addr != "" {
		t.Errorf("defaults: %+v, %v; want a service with no endpoints", c, err)
	}
	for _, args := range [][]string{nil, {"--once"}} {
		if _, err := parseAgent(args, io.Discard); err == nil || !strings.Contains(err.Error(), "--config is required") {
			t.Errorf("%v: got %v, want --config is required", args, err)
		}
	}
	if _, err := parseAgent([]string{"--config", "a.yaml", "--log-level", "loud"}, io.Discard); err == nil {
		t.Error("a bad log level was accepted")
	}
}

// TestAgentOnceWithoutItsPluginSaysWhyAndNoMore: --once against a plugin
// that does not run fails with the reason; it does not promise a
// reconnection that a run which exits never makes.
func TestAgentOnceWithoutItsPluginSaysWhyAndNoMore(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`kind: AgentConfig
stores:
  - name: absent
    plugin: {endpoint: "unix://%s"}
deliveries:
  - directory: %s
    store: absent
    files:
      - {name: password, remoteRef: {key: db, property: password}}
`, filepath.Join(dir, "absent.sock"), filepath.Join(dir, "out"))), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseAgent([]string{"--config", config, "--once", "--log-level", "error"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = runAgent(context.Background(), c)
	if err == nil {
		t.Fatal("--once succeeded without its plugin")
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "its socket does not exist (is the plugin running?)") || strings.Contains(msg, "backoff") {
		t.Fatalf("--once without its plugin: %q; want the reason last, and no backoff promised", msg)
	}
}
