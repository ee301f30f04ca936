package integration

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/operator"
)

// heldWarningAfter is --restart-held-warning-after in the tests of stuck
// rollouts: short, so that they see the Warning soon.
const heldWarningAfter = 2 * time.Second

// warnHeldAfter sets --restart-held-warning-after of a startRestarter.
func warnHeldAfter(d time.Duration) func(*operator.Options) {
	return func(o *operator.Options) { o.RestartHeldWarningAfter = d }
}

// heldCount is watchword_workload_restarts_held_total of the Deployments
// of ns held for reason.
func heldCount(ns, reason string) float64 {
	return testutil.ToFloat64(metrics.RestartsHeld.WithLabelValues(ns, "Deployment", reason))
}

var heldReasons = []string{restart.HeldRate, restart.HeldRollout, restart.HeldPrevious, restart.HeldWindow, restart.HeldInvalidWindow}

// TestRestartHeldByTheRateSaysSo: with --restart-rate 2/10s, one rotation
// due to six Deployments without replicas (available again as soon as
// their controller has seen the restart) restarts one at once and holds
// the other five for the rate. Each of the five gets one RestartHeld
// event, Normal (the pacing asked for), which says how long it waits and
// the rate; none says it waits for the workload restarted before it; and
// watchword_workload_restarts_held_total counts five RateLimited holds
// and nothing else.
func TestRestartHeldByTheRateSaysSo(t *testing.T) {
	parallel(t)
	const class, n = "restart-rate-named", 6
	startRestarter(t, class, restart.Rate{Count: 2, Per: 10 * time.Second})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "shared", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "shared", map[string]string{"k": "1"})
	ann := map[string]string{restart.OnAnnotation: "shared", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("idle-%d", i)
		newIdleWorkload(t, ns, names[i], ann, envFrom("shared"))
	}
	for _, name := range names {
		waitRecorded(t, ns, name, "shared")
	}

	rotate(t, src, "k", "2")
	for _, name := range names {
		// One every 5 s: the last 25 s after the first.
		deps.waitRestarts(t, name, 1, 3*wait)
	}
	rate := regexp.MustCompile(`^the restart waits [0-9.]+m?s: at most 2 restarts in any 10s across the cluster, spaced evenly \(--restart-rate 2/10s\); rotation of Secret "shared"`)
	eventually(t, wait, func() (bool, string) {
		told := 0
		for _, name := range names {
			for _, e := range eventsOf(t, ns, name, restart.ReasonHeld) {
				if rate.MatchString(e.Message) {
					told++
				}
			}
		}
		return told == n-1, fmt.Sprintf("%d restarts told held for the rate, want %d", told, n-1)
	})
	for _, name := range names {
		evs := eventsOf(t, ns, name, restart.ReasonHeld)
		if len(evs) > 1 {
			t.Errorf("%s: %d RestartHeld events, want at most 1", name, len(evs))
		}
		for _, e := range evs {
			if !rate.MatchString(e.Message) || e.Type != corev1.EventTypeNormal {
				t.Errorf("%s: RestartHeld %s %q, want a Normal event with the rate and its wait", name, e.Type, e.Message)
			}
		}
	}
	if got := heldCount(ns, restart.HeldRate); got != n-1 {
		t.Errorf("%v holds counted for %s, want %d", got, restart.HeldRate, n-1)
	}
	for _, reason := range heldReasons[1:] {
		if got := heldCount(ns, reason); got != 0 {
			t.Errorf("%v holds counted for %s, want none", got, reason)
		}
	}
	for _, name := range names {
		deps.keepRestarts(t, ns, name, 1)
		if held := getDeployment(t, ns, name).Annotations[restart.HeldAnnotation]; held != "" {
			t.Errorf("%s still records a hold told: %q", name, held)
		}
	}
}

// TestRestartRoutinePacingRaisesNoWarning: without a rate, one rotation
// restarts six Deployments, three without replicas and three with one,
// one after the other, each waiting for the rollout of the one before:
// that wait is the normal pacing, shorter than
// --restart-held-warning-after (its default), and raises no RestartHeld
// event and counts no hold, so the chart's alert stays quiet.
func TestRestartRoutinePacingRaisesNoWarning(t *testing.T) {
	parallel(t)
	const class = "restart-routine"
	startRestarter(t, class, restart.Rate{})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "shared", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "shared", map[string]string{"k": "1"})
	ann := map[string]string{restart.OnAnnotation: "shared", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	idle, busy := []string{"idle-0", "idle-1", "idle-2"}, []string{"busy-0", "busy-1", "busy-2"}
	for _, name := range idle {
		newIdleWorkload(t, ns, name, ann, envFrom("shared"))
	}
	for _, name := range busy {
		newWorkload(t, ns, name, ann, envFrom("shared"))
	}
	names := append(idle, busy...)
	for _, name := range names {
		waitRecorded(t, ns, name, "shared")
	}
	for _, name := range busy {
		waitRolledOut(t, ns, name, 1, 2*wait)
	}

	rotate(t, src, "k", "2")
	for _, name := range names {
		deps.waitRestarts(t, name, 1, 2*wait)
	}
	for _, name := range busy {
		waitRolledOut(t, ns, name, 2, 2*wait)
	}
	consistently(t, 3*time.Second, func() (bool, string) {
		for _, name := range names {
			if evs := eventsOf(t, ns, name, restart.ReasonHeld); len(evs) > 0 {
				return false, fmt.Sprintf("%s: RestartHeld %s %q", name, evs[0].Type, evs[0].Message)
			}
		}
		for _, reason := range heldReasons {
			if got := heldCount(ns, reason); got != 0 {
				return false, fmt.Sprintf("%v holds counted for %s", got, reason)
			}
		}
		return true, ""
	})
	for _, name := range names {
		deps.keepRestarts(t, ns, name, 1)
	}
}

// TestRestartHeldIsToldOnceAcrossRestarts: a restart that waits for a
// maintenance window, and one whose window does not parse, are each told
// once; a new instance of Watchword, started while they still wait, does
// not tell them again, nor count them again, and restarts neither.
func TestRestartHeldIsToldOnceAcrossRestarts(t *testing.T) {
	parallel(t)
	const class = "restart-held-once"
	stop := startRestarter(t, class, restart.Rate{})
	ns := newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	src := rotationSource(t, ns, map[string]string{"k": "1"})
	newES(t, ns, "s", "remote", withRefresh(time.Second), withData("k", "upstream", "k"))
	waitSecretData(t, ns, "s", map[string]string{"k": "1"})
	ann := func(extra ...string) map[string]string {
		a := map[string]string{restart.OnAnnotation: "s", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	// A window that opens in twelve hours, long after the test.
	opens := time.Now().UTC().Add(12 * time.Hour)
	newWorkload(t, ns, "nightly", ann(restart.WindowAnnotation, fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour())), envFrom("s"))
	newWorkload(t, ns, "typo", ann(restart.WindowAnnotation, "Mon-Fri 02:00-04:00"), envFrom("s"))
	waitRecorded(t, ns, "nightly", "s")
	waitRecorded(t, ns, "typo", "s")

	rotate(t, src, "k", "2")
	waitEvent(t, ns, "nightly", restart.ReasonHeld, "the restart waits for the maintenance window")
	waitEvent(t, ns, "typo", restart.ReasonHeld, "the restart waits until "+restart.WindowAnnotation+" is fixed")
	told := func() (bool, string) {
		for name, reason := range map[string]string{"nightly": restart.HeldWindow, "typo": restart.HeldInvalidWindow} {
			if n := countEvents(t, ns, name, restart.ReasonHeld, ""); n != 1 {
				return false, fmt.Sprintf("%s: %d RestartHeld events, want 1", name, n)
			}
			if got := heldCount(ns, reason); got != 1 {
				return false, fmt.Sprintf("%v holds counted for %s, want 1", got, reason)
			}
			if deps.count(name) != 0 {
				return false, fmt.Sprintf("%s restarted while its window is closed or does not parse", name)
			}
		}
		return true, ""
	}
	eventually(t, wait, told)

	stop()
	startRestarter(t, class, restart.Rate{})
	// The new instance is at work: it takes a new workload as its
	// baseline, and has reconciled the waiting ones at its start.
	newWorkload(t, ns, "probe", ann(), envFrom("s"))
	waitRecorded(t, ns, "probe", "s")
	consistently(t, 5*time.Second, told)
	if n := countEventsOfType(t, ns, "typo", corev1.EventTypeWarning, restart.ReasonHeld, ""); n != 1 {
		t.Errorf("typo: %d RestartHeld Warnings, want 1", n)
	}
}

// eventsOf lists the events of a reason about an object.
func eventsOf(t *testing.T, ns, object, reason string) []corev1.Event {
	t.Helper()
	var evs corev1.EventList
	must(t, k8s.List(t.Context(), &evs, client.InNamespace(ns)))
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
