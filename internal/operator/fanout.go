package operator

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/internal/controller/clusterfanout"
)

// addClusterFanOut registers the ClusterExternalSecret and
// ClusterPushSecret controllers. A namespaced operator serves neither:
// they are cluster-wide by nature.
func addClusterFanOut(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if len(opts.Namespaces) > 0 {
		return nil
	}
	for _, kind := range []clusterfanout.Kind{clusterfanout.ExternalSecrets, clusterfanout.PushSecrets} {
		r := &clusterfanout.Reconciler{Client: mgr.GetClient(), Kind: kind, Class: opts.ControllerClass}
		if err := r.SetupWithManager(ctx, mgr, clusterfanout.Options{Workers: opts.Workers, RateLimiter: rateLimiter()}); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", kind.Name, err)
		}
	}
	return nil
}
