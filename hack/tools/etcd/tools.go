//go:build tools

// Package tools pins the etcd server that the test harness builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
