package restart

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTell: the pacing asked for (rate, window) and a window that does
// not parse are told at once, a rollout only once its spell has lasted
// the threshold; a reason told is not told again in the same hold; and a
// hold not told yet is asked about again by the time it would be.
func TestTell(t *testing.T) {
	const warnAfter = 2 * time.Minute
	cases := []struct {
		name      string
		v         Verdict
		told      []string
		lasted    time.Duration
		tell      bool
		retry     time.Duration
		eventType string
	}{
		{"rate", Verdict{Reason: HeldRate, RetryAfter: 6 * time.Second}, nil, 0, true, 6 * time.Second, corev1.EventTypeNormal},
		{"window", Verdict{Reason: HeldWindow, RetryAfter: time.Hour}, nil, 0, true, time.Hour, corev1.EventTypeNormal},
		{"invalid window", Verdict{Reason: HeldInvalidWindow}, nil, 0, true, 0, corev1.EventTypeWarning},
		{"previous, new", Verdict{Reason: HeldPrevious, RetryAfter: pollHeld}, nil, 0, false, pollHeld, corev1.EventTypeWarning},
		{"previous, lasting", Verdict{Reason: HeldPrevious, RetryAfter: pollHeld}, nil, warnAfter, true, pollHeld, corev1.EventTypeWarning},
		{"previous, nearly news", Verdict{Reason: HeldPrevious, RetryAfter: pollHeld}, nil, warnAfter - time.Second, false, time.Second, corev1.EventTypeWarning},
		{"rollout, lasting", Verdict{Reason: HeldRollout, RetryAfter: pollHeld}, []string{HeldRate}, 3 * warnAfter, true, pollHeld, corev1.EventTypeWarning},
		{"rollout, told", Verdict{Reason: HeldRollout, RetryAfter: pollHeld}, []string{HeldRollout}, 3 * warnAfter, false, pollHeld, corev1.EventTypeWarning},
		{"rate, told", Verdict{Reason: HeldRate, RetryAfter: time.Second}, []string{HeldPrevious, HeldRate}, 0, false, time.Second, corev1.EventTypeNormal},
	}
	for _, c := range cases {
		tell, retry := Tell(c.v, c.told, c.lasted, warnAfter)
		if tell != c.tell || retry != c.retry || heldEventType(c.v.Reason) != c.eventType {
			t.Errorf("%s: tell %v, retry %s, %s; want %v, %s, %s", c.name, tell, retry, heldEventType(c.v.Reason), c.tell, c.retry, c.eventType)
		}
	}
	if tell, _ := Tell(Verdict{Reason: HeldPrevious, RetryAfter: pollHeld}, nil, 0, 0); !tell {
		t.Error("a threshold of 0 does not tell a hold at once")
	}
}

// queue plays the restarts of workloads all due at once through the gate
// and the telling of holds, as the reconciler asks: each held workload
// asks again every half second. A workload is available again rollout
// after its restart, except those in stuck, which never are.
type queue struct {
	gate      *Gate
	mem       map[Ref]memory
	warnAfter time.Duration
	rollout   time.Duration
	stuck     map[Ref]bool

	now       time.Time
	restarted map[Ref]time.Time
	told      map[Ref][]string
}

func newQueue(rate Rate, warnAfter, rollout time.Duration) *queue {
	return &queue{gate: NewGate(rate), mem: map[Ref]memory{}, warnAfter: warnAfter, rollout: rollout,
		stuck: map[Ref]bool{}, now: at(0), restarted: map[Ref]time.Time{}, told: map[Ref][]string{}}
}

func (q *queue) available(ref Ref, _ int64) bool {
	restartedAt, ok := q.restarted[ref]
	return ok && !q.stuck[ref] && q.now.Sub(restartedAt) >= q.rollout
}

// run asks for the restarts of refs until d has passed.
func (q *queue) run(refs []Ref, d time.Duration) {
	for end := q.now.Add(d); q.now.Before(end); q.now = q.now.Add(500 * time.Millisecond) {
		for _, ref := range refs {
			if _, done := q.restarted[ref]; done {
				continue
			}
			v := q.gate.Admit(q.now, ref, false, q.available)
			if v.Go {
				q.gate.Restarted(ref, 1)
				q.restarted[ref] = q.now
				delete(q.mem, ref)
				continue
			}
			mem, lasted := q.mem[ref].try(v, q.now)
			q.mem[ref] = mem
			if tell, _ := Tell(v, q.told[ref], lasted, q.warnAfter); tell {
				q.told[ref] = append(q.told[ref], v.Reason)
			}
		}
	}
}

func workloads(n int) []Ref {
	refs := make([]Ref, n)
	for i := range refs {
		refs[i] = Ref{"Deployment", "ns", fmt.Sprint("app-", i)}
	}
	return refs
}

// TestRoutinePacingIsNotNews: without a rate, twenty workloads restarted
// one after the other, each waiting for the one before it (a rollout of
// 3 s, or of nothing for a workload without replicas), wait a minute for
// the last, yet no hold is told: each waits behind one workload for a
// moment. With a rate, each restart it holds is told once, as the rate.
func TestRoutinePacingIsNotNews(t *testing.T) {
	for _, rollout := range []time.Duration{0, 3 * time.Second} {
		q := newQueue(Rate{}, time.Minute, rollout)
		refs := workloads(20)
		q.run(refs, 5*time.Minute)
		if len(q.restarted) != len(refs) {
			t.Fatalf("rollouts of %s: %d of %d restarted", rollout, len(q.restarted), len(refs))
		}
		if len(q.told) != 0 {
			t.Errorf("rollouts of %s: holds told %v, want none", rollout, q.told)
		}
	}

	q := newQueue(Rate{Count: 2, Per: 10 * time.Second}, time.Minute, 0)
	refs := workloads(6)
	q.run(refs, time.Minute)
	if len(q.restarted) != len(refs) {
		t.Fatalf("with a rate: %d of %d restarted", len(q.restarted), len(refs))
	}
	for _, ref := range refs[1:] {
		if told := q.told[ref]; len(told) != 1 || told[0] != HeldRate {
			t.Errorf("with a rate: %s told %v, want [%s]", ref, told, HeldRate)
		}
	}
}

// TestStuckRolloutIsNews: the restarts held behind a workload whose
// rollout does not finish are told once each, as waiting for it, once
// they have waited the threshold, and not again however long they wait.
func TestStuckRolloutIsNews(t *testing.T) {
	q := newQueue(Rate{}, time.Minute, time.Second)
	refs := workloads(4)
	q.stuck[refs[0]] = true
	q.run(refs, 59*time.Second)
	if len(q.told) != 0 {
		t.Errorf("told %v before the threshold", q.told)
	}
	q.run(refs, 10*time.Minute)
	if len(q.restarted) != 1 {
		t.Errorf("%d restarted behind a stuck rollout, want 1", len(q.restarted))
	}
	for _, ref := range refs[1:] {
		if told := q.told[ref]; len(told) != 1 || told[0] != HeldPrevious {
			t.Errorf("%s told %v, want [%s] once", ref, told, HeldPrevious)
		}
	}
}

// TestSpell: a spell lasts while the reason and what the restart waits
// behind stay the same; another of either starts a new one.
func TestSpell(t *testing.T) {
	behindA := Verdict{Reason: HeldPrevious, Behind: "Deployment ns/a"}
	m, _ := memory{}.try(behindA, at(0))
	m, lasted := m.try(behindA, at(30))
	if lasted != 30*time.Second {
		t.Errorf("behind a for 30s: lasted %s", lasted)
	}
	if _, lasted := m.try(Verdict{Reason: HeldPrevious, Behind: "Deployment ns/b"}, at(40)); lasted != 0 {
		t.Errorf("behind b: lasted %s, want a new spell", lasted)
	}
	if _, lasted := m.try(Verdict{Reason: HeldRate}, at(40)); lasted != 0 {
		t.Errorf("held for the rate: lasted %s, want a new spell", lasted)
	}
	if toldOnWorkload(HeldRate) || !toldOnWorkload(HeldPrevious) || !toldOnWorkload(HeldWindow) {
		t.Error("only the rate's holds told are not recorded on the workload")
	}
}
