package restart

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Telling of held restarts. A hold lasts from when an owed restart, due,
// is first held until it is made or no longer owed (rotations that add to
// it meanwhile do not end it). It is told (a RestartHeld event on the
// workload, and a count of watchword_workload_restarts_held_total by
// reason) once per reason, and only when it is news:
//
//   - The pacing Watchword was asked for, the restart rate (HeldRate)
//     and the workload's maintenance window (HeldWindow), is told at once
//     in a Normal event that says how long the restart waits and why. It
//     is what was configured, not something to fix.
//   - A window that does not parse (HeldInvalidWindow) is told at once in
//     a Warning: the restart waits until someone fixes it.
//   - A rollout in progress, the workload's own (HeldRollout) or that of
//     the workload restarted before it (HeldPrevious), is told in a
//     Warning only once one spell of it has lasted the warning threshold
//     (--restart-held-warning-after). Restarts made one after the other
//     always wait a moment for the rollout before them, even with no
//     replicas (until its controller has seen the restart): that is the
//     normal pacing, and telling it would raise a Warning, and count a
//     hold the chart's alert fires on, for every rotation that restarts
//     two workloads. A rollout that holds a restart longer is slow or
//     stuck, and worth a look.
//
// A spell lasts while the reason, and what the restart waits behind
// (Verdict.Behind), stay the same: a restart that waits behind one
// workload after another (a queue of restarts, each paced by the one
// before) has many short spells, none of them news.
//
// The reasons told are recorded on the workload (HeldAnnotation) before
// the event is sent, and go with the hold: an instance that starts while
// a restart waits reads them and does not tell the hold again. The rate's
// are the exception (toldOnWorkload). How long a spell has lasted is this
// instance's memory; after a restart of Watchword it counts from the new
// instance's first try, which can only tell a hold later, never twice.

// DefaultHeldWarningAfter is how long a hold for a rollout lasts before
// it is told, without --restart-held-warning-after: longer than restarts
// one after the other wait for each other's rollouts, shorter than the
// ten minutes after which Kubernetes gives up on a Deployment's rollout
// (progressDeadlineSeconds).
const DefaultHeldWarningAfter = 5 * time.Minute

// toldOnWorkload tells whether a hold of reason, once told, is recorded on
// the workload. A rate hold is not: every restart in a queue but the
// first has one, and recording it would write each workload once more
// (moving a Deployment's generation, which its controller then catches
// up with) while the queue is worked off; with 50 workloads that made the
// last restart come seven seconds later. It is remembered by this
// instance, whose rate it is: an instance that starts while restarts wait
// for the rate counts its rate anew, and tells the waits it sets.
func toldOnWorkload(reason string) bool { return reason != HeldRate }

// memory is what an instance remembers of a workload's hold: the spell
// it is in (spellKey, since when) and the reasons told that are not
// recorded on the workload.
type memory struct {
	spell string
	since time.Time
	told  []string
}

// try is the memory after a try at now that held the restart as v says,
// and how long its spell has lasted: 0 at the first try of a new spell.
func (m memory) try(v Verdict, now time.Time) (memory, time.Duration) {
	if key := spellKey(v); m.spell != key {
		m.spell, m.since = key, now
	}
	return m, now.Sub(m.since)
}

// heldEventType is the type of the event that tells a hold of reason.
func heldEventType(reason string) string {
	if reason == HeldRate || reason == HeldWindow {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// newsAfter is how long a hold of reason lasts before it is told.
func newsAfter(reason string, warnAfter time.Duration) time.Duration {
	if reason == HeldRollout || reason == HeldPrevious {
		return warnAfter
	}
	return 0
}

// Tell tells whether a hold whose try says v, in a spell that has lasted
// `lasted`, is told now, told being the reasons of the hold told before;
// and when to ask about the restart again: as v says, and no later than
// when the spell would become news.
func Tell(v Verdict, told []string, lasted, warnAfter time.Duration) (tell bool, retry time.Duration) {
	if slices.Contains(told, v.Reason) {
		return false, v.RetryAfter
	}
	left := newsAfter(v.Reason, warnAfter) - lasted
	if left <= 0 {
		return true, v.RetryAfter
	}
	if v.RetryAfter > 0 && v.RetryAfter < left {
		return false, v.RetryAfter
	}
	return false, left
}

// spellKey tells spells apart: a new reason, or the same one behind
// something else, starts a new spell.
func spellKey(v Verdict) string { return v.Reason + "|" + v.Behind }

// announced adds reason to told, the sorted reasons told.
func announced(told []string, reason string) []string {
	if reason == "" || slices.Contains(told, reason) {
		return told
	}
	out := append(slices.Clone(told), reason)
	slices.Sort(out)
	return out
}
