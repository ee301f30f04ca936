package notify

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/watchword-dev/watchword/internal/metrics"
)

// Options tune the delivery.
type Options struct {
	// Cluster names the cluster in every notification; empty: none.
	Cluster string
	// Types are the notification types sent (TypeRestarted, TypeHeld);
	// empty: all.
	Types []string
	// QueueSize bounds the notifications waiting for each receiver; when
	// it is full, the oldest is dropped.
	QueueSize int
	// Workers send to each receiver at once.
	Workers int
	// Timeout bounds one attempt: connecting, sending, and the answer.
	Timeout time.Duration
	// Attempts bounds the attempts at one notification, the first
	// included.
	Attempts int
	// Backoff spaces the attempts; a 429's or 503's Retry-After, when
	// longer, is waited instead, up to MaxRetryAfter.
	Backoff       wait.Backoff
	MaxRetryAfter time.Duration
	// ReloadPeriod is how often the receivers' Secret is read again, so
	// that a changed URL or key is used without a restart.
	ReloadPeriod time.Duration
	// Client sends the requests; nil: one that honours the proxy
	// environment variables.
	Client *http.Client
	// Clock is injected by tests; nil: the wall clock.
	Clock func() time.Time
}

// The defaults of Options.
const (
	DefaultQueueSize     = 1000
	DefaultWorkers       = 2
	DefaultTimeout       = 10 * time.Second
	DefaultAttempts      = 6
	DefaultMaxRetryAfter = 5 * time.Minute
	DefaultReloadPeriod  = time.Minute
)

// DefaultBackoff waits 1s, 2s, 4s, 8s and 16s (each up to 10% more)
// between the six attempts: about half a minute in all, so that a
// receiver that restarts is waited for, and one that is down is given up
// on before much queues behind it.
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: DefaultAttempts, Cap: time.Minute}

// DefaultOptions are the options without flags.
func DefaultOptions() Options {
	return Options{QueueSize: DefaultQueueSize, Workers: DefaultWorkers, Timeout: DefaultTimeout, Attempts: DefaultAttempts,
		Backoff: DefaultBackoff, MaxRetryAfter: DefaultMaxRetryAfter, ReloadPeriod: DefaultReloadPeriod}
}

// Loader tells which receivers are configured now.
type Loader interface {
	Load(ctx context.Context) ([]Target, error)
}

// Notifier queues notifications and delivers them. It is a runnable of
// the manager, on the leader (which alone restarts workloads).
type Notifier struct {
	opts   Options
	loader Loader
	send   *sender
	types  map[string]bool
	queues map[string]*queue
	// targets are the receivers by kind, from the last load that
	// succeeded; nil before one has.
	targets atomic.Pointer[map[string]Target]
	log     logr.Logger
}

// New builds a Notifier that delivers to the receivers loader names;
// zero options take their defaults.
func New(opts Options, loader Loader, log logr.Logger) *Notifier {
	def := DefaultOptions()
	if opts.QueueSize <= 0 {
		opts.QueueSize = def.QueueSize
	}
	if opts.Workers <= 0 {
		opts.Workers = def.Workers
	}
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = def.Attempts
	}
	if opts.Backoff.Duration <= 0 {
		opts.Backoff = def.Backoff
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = def.MaxRetryAfter
	}
	if opts.ReloadPeriod <= 0 {
		opts.ReloadPeriod = def.ReloadPeriod
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// A redirect would send the body, and for a webhook its signature,
	// somewhere else than the URL configured.
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	n := &Notifier{opts: opts, loader: loader, types: map[string]bool{}, queues: map[string]*queue{}, log: log,
		send: &sender{client: &c, timeout: opts.Timeout, attempts: opts.Attempts, backoff: opts.Backoff,
			maxRetryAfter: opts.MaxRetryAfter, now: opts.Clock,
			retried: func(kind string) { metrics.NotificationsRetried.WithLabelValues(kind).Inc() }}}
	for _, t := range opts.Types {
		n.types[t] = true
	}
	for _, k := range Kinds {
		n.queues[k] = newQueue(opts.QueueSize)
	}
	return n
}

// Notify queues ev for every receiver configured, and returns at once: it
// never waits for a receiver. The ID, time and cluster are filled in when
// empty. A type not asked for is not sent.
func (n *Notifier) Notify(ev Event) {
	if len(n.types) > 0 && !n.types[ev.Type] {
		return
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = n.opts.Clock()
	}
	if ev.Cluster == "" {
		ev.Cluster = n.opts.Cluster
	}
	targets := n.targets.Load()
	for _, k := range Kinds {
		// Before the first load, every queue takes it: the workers tell
		// whether it has somewhere to go.
		if targets != nil {
			if _, ok := (*targets)[k]; !ok {
				continue
			}
		}
		if n.queues[k].push(ev) {
			metrics.NotificationsDropped.WithLabelValues(k).Inc()
		}
	}
}

// Start loads the receivers, runs the workers and reloads the receivers
// every ReloadPeriod, until ctx ends; the notifications still queued then
// are not sent.
func (n *Notifier) Start(ctx context.Context) error {
	n.reload(ctx)
	var wg sync.WaitGroup
	for _, k := range Kinds {
		for range n.opts.Workers {
			wg.Go(func() { n.work(ctx, k) })
		}
	}
	t := time.NewTicker(n.opts.ReloadPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
			n.reload(ctx)
		}
	}
}

// reload reads the receivers again; on failure the last ones read stay.
func (n *Notifier) reload(ctx context.Context) {
	targets, err := n.loader.Load(ctx)
	if err != nil {
		n.log.Error(err, "reading the notification receivers; the last ones read, if any, are used meanwhile")
		return
	}
	byKind := map[string]Target{}
	for _, t := range targets {
		byKind[t.Kind] = t
	}
	if old := n.targets.Swap(&byKind); old == nil || !slices.Equal(kindsOf(*old), kindsOf(byKind)) {
		n.log.Info("notification receivers", "kinds", kindsOf(byKind))
	}
}

func kindsOf(m map[string]Target) []string {
	var out []string
	for _, k := range Kinds {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// work delivers the notifications of one receiver kind, one at a time.
func (n *Notifier) work(ctx context.Context, kind string) {
	for {
		ev, ok := n.queues[kind].pop(ctx)
		if !ok {
			return
		}
		outcome, err := outcomeUnconfigured, error(nil)
		if targets := n.targets.Load(); targets != nil {
			t, configured := (*targets)[kind]
			if !configured {
				continue // taken out of the Secret since it was queued
			}
			outcome, err = n.send.deliver(ctx, t, ev)
		}
		log := n.log.WithValues("receiver", kind, "id", ev.ID, "type", ev.Type, "workload", ev.Workload.String())
		switch outcome {
		case outcomeSent:
			metrics.NotificationsSent.WithLabelValues(kind).Inc()
			log.V(1).Info("notification sent")
		case outcomeCanceled:
			return
		default:
			metrics.NotificationsFailed.WithLabelValues(kind, outcome).Inc()
			log.Info("a notification was not delivered", "cause", outcome, "error", errText(err))
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "the receivers' Secret could not be read"
	}
	return err.Error()
}
