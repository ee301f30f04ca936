//go:build tools

// Package tools pins the linter that `make lint` builds: golangci-lint
// (github.com/golangci/golangci-lint/v2, at the version go.mod requires)
// with the Kubernetes API linter (sigs.k8s.io/kube-api-linter) compiled in
// as the module plugin "kubeapilinter". The Kubernetes API linter's own
// command is that combined binary, built here from Go modules alone.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/pkg/commands"
	_ "sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter"
)
