package externalsecret

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

func TestNextRefreshLandsOnPhase(t *testing.T) {
	interval := time.Hour
	offset := 17 * time.Minute
	last := time.Date(2026, 1, 1, 10, 50, 0, 0, time.UTC)
	next := nextRefresh(last, interval, offset)
	if next.Sub(last) < interval/2 || next.Sub(last) > 3*interval/2 {
		t.Fatalf("next refresh %v is %v after the last, want between half and one and a half intervals", next, next.Sub(last))
	}
	if got := time.Duration(next.UnixNano() % int64(interval)); got != offset {
		t.Fatalf("next refresh is at phase %v, want %v", got, offset)
	}
	// From then on, refreshes are exactly one interval apart.
	if again := nextRefresh(next, interval, offset); again.Sub(next) != interval {
		t.Fatalf("steady-state gap = %v, want %v", again.Sub(next), interval)
	}
}

func TestPhaseOffsetSpreadsEvenly(t *testing.T) {
	interval := time.Minute
	const n = 6000
	buckets := make([]int, 60)
	for i := 0; i < n; i++ {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{UID: types.UID(time.Duration(i).String())},
			Spec: v1alpha1.ExternalSecretSpec{Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: time.Duration(i).String()}}}}}
		off := phaseOffset(es, "store", interval)
		if off < 0 || off >= interval+interval/10 {
			t.Fatalf("offset %v outside the interval", off)
		}
		buckets[int(off/time.Second)%60]++
	}
	busiest := 0
	for _, b := range buckets {
		busiest = max(busiest, b)
	}
	mean := n / 60
	if float64(busiest) > 1.5*float64(mean) {
		t.Fatalf("busiest second has %d refreshes, mean %d: phases are not spread", busiest, mean)
	}
}

func TestSameObjectsShareAPhase(t *testing.T) {
	mk := func(uid string) *v1alpha1.ExternalSecret {
		return &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)},
			Spec: v1alpha1.ExternalSecretSpec{Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: "shared"}}}}}
	}
	interval := time.Hour
	a, b := phaseOffset(mk("a"), "s", interval), phaseOffset(mk("b"), "s", interval)
	diff := a - b
	if diff < 0 {
		diff = -diff
	}
	if diff > interval/10 {
		t.Fatalf("ExternalSecrets reading the same object are %v apart, want within %v so that one read serves both", diff, interval/10)
	}
}

func TestSchedulePolicy(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	// Offset 0 puts the phase points on whole hours.
	hourly := schedule{now: now, interval: time.Hour}
	cases := []struct {
		name   string
		s      schedule
		due    bool
		maxAge time.Duration
	}{
		{name: "never synced", s: schedule{now: now, interval: time.Hour}, due: true, maxAge: time.Hour - time.Second},
		{name: "read 10 minutes ago", s: with(hourly, func(s *schedule) { s.lastRead = at(-10 * time.Minute) }), due: false, maxAge: time.Hour},
		{name: "phase point reached", s: with(hourly, func(s *schedule) { s.lastRead = at(-time.Hour) }), due: true, maxAge: time.Hour - time.Second},
		{name: "timer fires within the slack", s: with(hourly, func(s *schedule) { s.lastRead = at(-time.Hour + 500*time.Millisecond) }), due: true, maxAge: time.Hour - time.Second},
		{name: "forced", s: with(hourly, func(s *schedule) { s.lastRead = at(-time.Minute); s.forced = true }), due: true, maxAge: 0},
		{name: "inputs changed", s: with(hourly, func(s *schedule) { s.lastRead = at(-time.Minute); s.inputsChanged = true }), due: true, maxAge: time.Hour - time.Second},
		{name: "interval 0, synced", s: schedule{now: now, lastRead: at(-48 * time.Hour)}, due: false, maxAge: 24 * time.Hour},
		{name: "interval 0, spec changed", s: schedule{now: now, lastRead: at(-time.Hour), inputsChanged: true, generationChanged: true}, due: true, maxAge: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.due(); got != tc.due {
				t.Errorf("due = %v, want %v", got, tc.due)
			}
			if got := tc.s.maxAge(); got != tc.maxAge {
				t.Errorf("maxAge = %v, want %v", got, tc.maxAge)
			}
		})
	}
}

func with(s schedule, f func(*schedule)) schedule {
	f(&s)
	return s
}

func TestScheduleNext(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := schedule{now: now, interval: time.Hour, offset: 20 * time.Minute}
	if res := s.next(nil); res.RequeueAfter != 0 {
		t.Errorf("nothing read yet: requeue after %v, want none", res.RequeueAfter)
	}
	res := s.next(&now)
	// Half an interval after the read, then the next phase point: 13:20.
	if res.RequeueAfter != 80*time.Minute {
		t.Errorf("requeue after %v, want 1h20m", res.RequeueAfter)
	}
	if res.Priority == nil || *res.Priority != handler.LowPriority {
		t.Errorf("a periodic refresh must queue at low priority, got %v", res.Priority)
	}
	past := now.Add(-5 * time.Hour)
	if res := s.next(&past); res.RequeueAfter != time.Second {
		t.Errorf("an overdue refresh requeues after %v, want the 1s floor", res.RequeueAfter)
	}
	if res := (schedule{now: now}).next(&now); res.RequeueAfter != 0 {
		t.Errorf("refreshInterval 0 requeues after %v, want never", res.RequeueAfter)
	}
}

// TestRefreshPolicies: OnChange and CreatedOnce have no periodic refresh,
// whatever refreshInterval says; OnChange syncs on a change of its inputs
// and takes no notice of the store's; CreatedOnce syncs only before its
// first sync and when forced.
func TestRefreshPolicies(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	synced := metav1.NewTime(now.Add(-48 * time.Hour))
	mk := func(policy v1alpha1.RefreshPolicy, change func(*v1alpha1.ExternalSecret)) *v1alpha1.ExternalSecret {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Generation: 1, UID: "u"},
			Spec: v1alpha1.ExternalSecretSpec{RefreshPolicy: policy, RefreshInterval: &metav1.Duration{Duration: time.Hour},
				Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: "db"}}}},
			Status: v1alpha1.ExternalSecretStatus{RefreshTime: &synced, ObservedGeneration: 1, InputsVersion: "in"}}
		if change != nil {
			change(es)
		}
		return es
	}
	notice := map[string]time.Time{"db": now.Add(-time.Minute)}
	cases := []struct {
		name    string
		es      *v1alpha1.ExternalSecret
		inputs  string
		notices map[string]time.Time
		due     bool
	}{
		{name: "Periodic refreshes on its interval", es: mk(v1alpha1.RefreshPeriodic, nil), inputs: "in", due: true},
		{name: "unset is Periodic", es: mk("", nil), inputs: "in", due: true},
		{name: "OnChange: nothing changed", es: mk(v1alpha1.RefreshOnChange, nil), inputs: "in", due: false},
		{name: "OnChange: a store's change notice", es: mk(v1alpha1.RefreshOnChange, nil), inputs: "in", notices: notice, due: false},
		{name: "OnChange: the spec changed", es: mk(v1alpha1.RefreshOnChange, func(es *v1alpha1.ExternalSecret) { es.Generation = 2 }), inputs: "in2", due: true},
		{name: "OnChange: the store changed", es: mk(v1alpha1.RefreshOnChange, nil), inputs: "in-store2", due: true},
		{name: "OnChange: forced", es: mk(v1alpha1.RefreshOnChange, forced), inputs: "in", due: true},
		{name: "CreatedOnce: never synced", es: mk(v1alpha1.RefreshCreatedOnce, func(es *v1alpha1.ExternalSecret) { es.Status = v1alpha1.ExternalSecretStatus{} }), inputs: "in", due: true},
		{name: "CreatedOnce: synced", es: mk(v1alpha1.RefreshCreatedOnce, nil), inputs: "in", due: false},
		{name: "CreatedOnce: the spec changed", es: mk(v1alpha1.RefreshCreatedOnce, func(es *v1alpha1.ExternalSecret) { es.Generation = 2 }), inputs: "in2", due: false},
		{name: "CreatedOnce: a store's change notice", es: mk(v1alpha1.RefreshCreatedOnce, nil), inputs: "in", notices: notice, due: false},
		{name: "CreatedOnce: forced", es: mk(v1alpha1.RefreshCreatedOnce, forced), inputs: "in", due: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchedule(tc.es, now, "store", tc.inputs, memory{}).withNotices(tc.es, tc.notices)
			if got := s.due(); got != tc.due {
				t.Errorf("due = %v, want %v", got, tc.due)
			}
			if p := tc.es.Spec.RefreshPolicy; p == v1alpha1.RefreshOnChange || p == v1alpha1.RefreshCreatedOnce {
				if res := s.next(s.lastRead); res.RequeueAfter != 0 {
					t.Errorf("requeue after %v, want no periodic refresh", res.RequeueAfter)
				}
				if s.stale() {
					t.Error("stale, but there is no periodic refresh to miss")
				}
			}
		})
	}
}

func forced(es *v1alpha1.ExternalSecret) {
	es.Annotations = map[string]string{conditions.ForceSyncAnnotation: "now"}
}
