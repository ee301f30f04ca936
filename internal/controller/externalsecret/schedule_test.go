package externalsecret

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/watchword-dev/watchword/api/v1alpha1"
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
