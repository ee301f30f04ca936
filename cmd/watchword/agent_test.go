package main

import (
	"io"
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
