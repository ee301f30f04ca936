package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/watchword-dev/watchword/internal/metrics"
)

// loader is a Loader whose receivers a test sets.
type loader struct {
	mu      sync.Mutex
	targets []Target
	err     error
}

func (l *loader) Load(context.Context) ([]Target, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.targets, l.err
}

func (l *loader) set(targets []Target, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets, l.err = targets, err
}

// start runs n until the test ends.
func start(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// eventually polls cond until it holds, for up to 10 s.
func eventually(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func counter(kind string) func() float64 {
	return func() float64 { return testutil.ToFloat64(metrics.NotificationsSent.WithLabelValues(kind)) }
}

// logLines collects what the Notifier logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestNotifierDelivers: a notification reaches each configured receiver
// once, with its ID, time and the cluster filled in; a type not asked for
// is not sent; the sent counter counts it; the URLs are not logged.
func TestNotifierDelivers(t *testing.T) {
	hook := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	slack := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	logs := &logLines{}
	l := &loader{targets: []Target{{Kind: KindWebhook, URL: hook.URL + "/TOKEN-A", Key: signingKey}, {Kind: KindSlack, URL: slack.URL + "/TOKEN-B"}}}
	n := New(Options{Cluster: "prod-eu", Types: []string{TypeRestarted}, Clock: func() time.Time { return at }}, l, logs.logger())
	sentHook, sentSlack := counter(KindWebhook)(), counter(KindSlack)()
	start(t, n)

	ev := restarted()
	ev.ID, ev.Time, ev.Cluster = "", time.Time{}, ""
	n.Notify(held()) // not asked for
	n.Notify(ev)
	eventually(t, func() (bool, string) {
		return hook.count() == 1 && slack.count() == 1, fmt.Sprintf("%d and %d requests, want 1 each", hook.count(), slack.count())
	})
	var got Event
	strict(t, hook.bodies[0], &got)
	if len(got.ID) != 32 || !got.Time.Equal(at) || got.Cluster != "prod-eu" || got.Type != TypeRestarted {
		t.Errorf("received %+v", got)
	}
	if !strings.Contains(string(slack.bodies[0]), got.ID) {
		t.Errorf("the Slack message does not carry the ID %s", got.ID)
	}
	eventually(t, func() (bool, string) {
		return counter(KindWebhook)() == sentHook+1 && counter(KindSlack)() == sentSlack+1, "the sent counters did not move by one"
	})
	time.Sleep(100 * time.Millisecond)
	if hook.count() != 1 || slack.count() != 1 {
		t.Errorf("%d and %d requests, want 1 each: the RestartHeld notification was sent", hook.count(), slack.count())
	}
	if text := logs.text(); strings.Contains(text, "TOKEN") || strings.Contains(text, hook.URL) {
		t.Errorf("the logs hold a URL:\n%s", text)
	}
}

// TestNotifierSlowReceiverHoldsNothingUp: a receiver that does not
// answer neither slows Notify (the restart path) nor another receiver:
// every Notify returns while it hangs, and the other receiver gets every
// notification.
func TestNotifierSlowReceiverHoldsNothingUp(t *testing.T) {
	release := make(chan struct{})
	slow := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	fast := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	l := &loader{targets: []Target{{Kind: KindSlack, URL: slow.URL}, {Kind: KindTeams, URL: fast.URL}}}
	n := New(Options{QueueSize: 50, Workers: 1, Timeout: time.Hour}, l, logr.Discard())
	start(t, n)
	defer close(release)
	eventually(t, func() (bool, string) { return n.targets.Load() != nil, "the receivers were not loaded" })

	notified := make(chan struct{})
	go func() {
		defer close(notified)
		for range 200 {
			n.Notify(restarted())
		}
	}()
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("Notify waited for the receiver that does not answer")
	}
	eventually(t, func() (bool, string) {
		return fast.count() >= 50, fmt.Sprintf("the other receiver got %d notifications, want the 50 its queue holds at least", fast.count())
	})
	if slow.count() != 1 {
		t.Errorf("the hanging receiver got %d requests, want the one it holds", slow.count())
	}
}

// TestNotifierQueueDropsOldest: a full queue drops the oldest
// notification waiting for the new one, and counts it.
func TestNotifierQueueDropsOldest(t *testing.T) {
	l := &loader{targets: []Target{{Kind: KindWebhook, URL: "http://127.0.0.1:1", Key: signingKey}}}
	n := New(Options{QueueSize: 3}, l, logr.Discard())
	n.reload(context.Background())
	dropped := testutil.ToFloat64(metrics.NotificationsDropped.WithLabelValues(KindWebhook))
	for i := range 5 {
		ev := restarted()
		ev.ID = fmt.Sprint(i)
		n.Notify(ev)
	}
	if got := testutil.ToFloat64(metrics.NotificationsDropped.WithLabelValues(KindWebhook)) - dropped; got != 2 {
		t.Errorf("%g dropped, want 2", got)
	}
	var ids []string
	for n.queues[KindWebhook].len() > 0 {
		ev, _ := n.queues[KindWebhook].pop(context.Background())
		ids = append(ids, ev.ID)
	}
	if !slices.Equal(ids, []string{"2", "3", "4"}) {
		t.Errorf("queued %v, want the newest three", ids)
	}
	if n.queues[KindSlack].len() != 0 || n.queues[KindTeams].len() != 0 {
		t.Error("a receiver that is not configured has a queue of notifications")
	}
}

// TestNotifierGivesUp: a receiver that always fails is tried the
// number of attempts and counted failed, as is one that refuses; while
// the Secret cannot be read, notifications fail as unconfigured.
func TestNotifierGivesUp(t *testing.T) {
	down := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	gone := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	l := &loader{targets: []Target{{Kind: KindWebhook, URL: down.URL, Key: signingKey}, {Kind: KindSlack, URL: gone.URL}}}
	n := New(Options{Attempts: 3, Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}}, l, logr.Discard())
	failed := func(kind, cause string) float64 {
		return testutil.ToFloat64(metrics.NotificationsFailed.WithLabelValues(kind, cause))
	}
	exhausted, refused, retried := failed(KindWebhook, outcomeExhausted), failed(KindSlack, outcomeRefused),
		testutil.ToFloat64(metrics.NotificationsRetried.WithLabelValues(KindWebhook))
	start(t, n)
	eventually(t, func() (bool, string) { return n.targets.Load() != nil, "the receivers were not loaded" })
	n.Notify(restarted())
	eventually(t, func() (bool, string) {
		return failed(KindWebhook, outcomeExhausted) == exhausted+1 && failed(KindSlack, outcomeRefused) == refused+1,
			fmt.Sprintf("failed: webhook exhausted +%g, slack refused +%g; want +1 each", failed(KindWebhook, outcomeExhausted)-exhausted, failed(KindSlack, outcomeRefused)-refused)
	})
	if down.count() != 3 || gone.count() != 1 {
		t.Errorf("%d attempts at the failing receiver (want 3), %d at the refusing one (want 1)", down.count(), gone.count())
	}
	if got := testutil.ToFloat64(metrics.NotificationsRetried.WithLabelValues(KindWebhook)) - retried; got != 2 {
		t.Errorf("%g retries counted, want 2", got)
	}

	// A Notifier whose Secret was never read sends nowhere.
	l2 := &loader{err: errors.New("secrets \"receivers\" not found")}
	n2 := New(Options{}, l2, logr.Discard())
	unconfigured := failed(KindTeams, outcomeUnconfigured)
	start(t, n2)
	n2.Notify(restarted())
	eventually(t, func() (bool, string) {
		return failed(KindTeams, outcomeUnconfigured) == unconfigured+1, "a notification with no receivers read was not counted unconfigured"
	})
}

// TestNotifierReloads: a receiver added to the Secret is used from the
// next read on, and one taken out is no longer sent to.
func TestNotifierReloads(t *testing.T) {
	first := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	second := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	l := &loader{targets: []Target{{Kind: KindWebhook, URL: first.URL, Key: signingKey}}}
	n := New(Options{ReloadPeriod: 20 * time.Millisecond}, l, logr.Discard())
	start(t, n)
	eventually(t, func() (bool, string) { return n.targets.Load() != nil, "the receivers were not loaded" })
	n.Notify(restarted())
	eventually(t, func() (bool, string) { return first.count() == 1, "the first receiver got nothing" })

	l.set([]Target{{Kind: KindTeams, URL: second.URL}}, nil)
	eventually(t, func() (bool, string) {
		t := n.targets.Load()
		_, ok := (*t)[KindTeams]
		return ok, "the new receiver was not read"
	})
	n.Notify(restarted())
	eventually(t, func() (bool, string) { return second.count() == 1, "the new receiver got nothing" })
	var m teamsReceiver
	_ = json.Unmarshal(second.bodies[0], &m)
	if first.count() != 1 || len(m.Attachments) != 1 {
		t.Errorf("the receiver taken out got %d requests, want 1; the new one got %s", first.count(), second.bodies[0])
	}
	// A failed read keeps the receivers last read.
	l.set(nil, errors.New("forbidden"))
	time.Sleep(60 * time.Millisecond)
	n.Notify(restarted())
	eventually(t, func() (bool, string) { return second.count() == 2, "a failed read dropped the receivers" })
}
