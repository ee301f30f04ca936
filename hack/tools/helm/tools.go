//go:build tools

// Package tools pins Helm (helm.sh/helm/v3), which the tests run to lint
// and render the chart in deploy/charts/watchword. It is a module of its
// own so that Helm's Kubernetes dependencies never meet the project's.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
