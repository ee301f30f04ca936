//go:build tools

// Package tools pins buf, the protobuf compiler that `make generate` runs
// for api/plugin. The Go and gRPC code generators it calls are tools of
// the project's own module (go tool), pinned with the runtime they
// generate code for.
package tools

import _ "github.com/bufbuild/buf/cmd/buf"
