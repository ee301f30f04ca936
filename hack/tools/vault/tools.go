//go:build tools

// Package tools pins the Vault server that the test harness builds.
package tools

import _ "github.com/hashicorp/vault"
