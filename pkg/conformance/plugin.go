package conformance

import (
	"context"

	"github.com/watchword-dev/watchword/internal/engine"
	pluginprovider "github.com/watchword-dev/watchword/internal/provider/plugin"
)

// DialPlugin connects to a store plugin at endpoint (unix:///…) as
// Watchword's plugin provider does, for a store whose config is cfg, and
// returns the operations the plugin announced: the Ops of a Harness that
// runs the suite against an out-of-tree plugin. Close them with
// ops.Closer.Close.
func DialPlugin(ctx context.Context, endpoint string, cfg map[string]string) (engine.Ops, error) {
	return pluginprovider.Dial(ctx, endpoint, cfg)
}
