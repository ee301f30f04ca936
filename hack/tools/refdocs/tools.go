//go:build tools

// Package tools pins crd-ref-docs, which `make generate` runs to write
// docs/api-reference.md from the Go types of api/.
package tools

import _ "github.com/elastic/crd-ref-docs"
