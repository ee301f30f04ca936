package restart

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func rollout(spec, status map[string]any) *unstructured.Unstructured {
	u := rolloutKind.newObj().(*unstructured.Unstructured)
	u.SetGeneration(3)
	u.Object["spec"] = spec
	u.Object["status"] = status
	return u
}

func healthy(extra map[string]any) map[string]any {
	s := map[string]any{"phase": "Healthy", "observedGeneration": "3", "updatedReplicas": int64(2), "availableReplicas": int64(2)}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func TestRolloutRollingOut(t *testing.T) {
	two := map[string]any{"replicas": int64(2)}
	cases := []struct {
		name    string
		u       *unstructured.Unstructured
		rolling bool
	}{
		{"healthy", rollout(two, healthy(nil)), false},
		{"progressing", rollout(two, healthy(map[string]any{"phase": "Progressing"})), true},
		{"paused", rollout(two, healthy(map[string]any{"phase": "Paused"})), true},
		{"generation not seen", rollout(two, healthy(map[string]any{"observedGeneration": "2"})), true},
		{"generation as a number", rollout(two, healthy(map[string]any{"observedGeneration": int64(3)})), false},
		{"a restart not done", rollout(map[string]any{"replicas": int64(2), "restartAt": "2026-11-23T12:00:00Z"},
			healthy(map[string]any{"restartedAt": "2026-11-23T11:00:00Z"})), true},
		{"a restart never done", rollout(map[string]any{"replicas": int64(2), "restartAt": "2026-11-23T12:00:00Z"}, healthy(nil)), true},
		{"a restart done", rollout(map[string]any{"replicas": int64(2), "restartAt": "2026-11-23T12:00:00Z"},
			healthy(map[string]any{"restartedAt": "2026-11-23T12:00:00Z"})), false},
		{"a replica not available", rollout(two, healthy(map[string]any{"availableReplicas": int64(1)})), true},
		{"one replica by default", rollout(map[string]any{}, healthy(nil)), false},
		{"no status", rollout(two, nil), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := rollingOut(c.u); got != c.rolling {
				t.Fatalf("rollingOut %v, want %v", got, c.rolling)
			}
		})
	}
}
