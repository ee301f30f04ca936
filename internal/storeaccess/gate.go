package storeaccess

import (
	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// Gate returns the call gate of a store, made on first use, with the
// store's limits (spec.limits over the controller's defaults).
func (c *Clients) Gate(r *Resolved) *engine.Gate {
	limits := LimitsOf(r.Limits, c.Limits)
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gates[r.UID]
	if g == nil {
		// The wall clock: a gate's waits are real ones.
		g = engine.NewGate(limits, nil, metrics.GateObserver(r.Store.Kind, metrics.StoreLabel(r.Store.Namespace, r.Store.Name)))
		c.gates[r.UID] = g
		return g
	}
	g.SetLimits(limits)
	return g
}

// LimitsOf are a store's call limits: each field of spec.limits that is
// set, and the defaults for the others. A budget without a burst allows a
// tenth of a minute's calls at once, at least one.
func LimitsOf(spec *v1alpha1.StoreLimits, defaults engine.GateLimits) engine.GateLimits {
	out := defaults
	if spec == nil {
		return withBurst(out)
	}
	if spec.CallsPerMinute != nil {
		out.CallsPerMinute = float64(*spec.CallsPerMinute)
		out.Burst = 0
	}
	if spec.Burst != nil {
		out.Burst = int(*spec.Burst)
	}
	if spec.MaxConcurrentCalls != nil {
		out.MaxConcurrent = int(*spec.MaxConcurrentCalls)
	}
	return withBurst(out)
}

func withBurst(l engine.GateLimits) engine.GateLimits {
	if l.CallsPerMinute > 0 && l.Burst <= 0 {
		l.Burst = max(1, int(l.CallsPerMinute/10))
	}
	return l
}
