package storeaccess

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

func TestLimitsOfTakeTheStoreOverTheDefaults(t *testing.T) {
	defaults := engine.GateLimits{CallsPerMinute: 600, MaxConcurrent: 8}
	for _, tc := range []struct {
		name string
		spec *v1alpha1.StoreLimits
		want engine.GateLimits
	}{
		{"no limits: the defaults, burst a tenth", nil, engine.GateLimits{CallsPerMinute: 600, Burst: 60, MaxConcurrent: 8}},
		{"own budget, default burst", &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](60)}, engine.GateLimits{CallsPerMinute: 60, Burst: 6, MaxConcurrent: 8}},
		{"own budget and burst", &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](60), Burst: ptr.To[int32](10)}, engine.GateLimits{CallsPerMinute: 60, Burst: 10, MaxConcurrent: 8}},
		{"small budget: burst at least 1", &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](5)}, engine.GateLimits{CallsPerMinute: 5, Burst: 1, MaxConcurrent: 8}},
		{"own concurrency", &v1alpha1.StoreLimits{MaxConcurrentCalls: ptr.To[int32](2)}, engine.GateLimits{CallsPerMinute: 600, Burst: 60, MaxConcurrent: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LimitsOf(tc.spec, defaults); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := LimitsOf(nil, engine.GateLimits{MaxConcurrent: 8}); got.CallsPerMinute != 0 || got.Burst != 0 {
		t.Fatalf("without a budget anywhere, got %+v", got)
	}
}
