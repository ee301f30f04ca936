package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics of notifications of restarts (internal/notify). The sink
// label is the receiver's kind (webhook, slack, teams): never its URL.
var (
	// NotificationsSent counts the notifications a receiver accepted.
	NotificationsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_notifications_sent_total",
		Help: "Notifications of restarts delivered, by receiver kind (webhook, slack, teams).",
	}, []string{"sink"})

	// NotificationsFailed counts the notifications given up on.
	NotificationsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_notifications_failed_total",
		Help: "Notifications of restarts given up on, by receiver kind and cause (refused: the receiver answered a 4xx; exhausted: every attempt failed; unconfigured: the receivers' Secret could not be read).",
	}, []string{"sink", "cause"})

	// NotificationsDropped counts the notifications dropped from a full
	// queue (the oldest waiting).
	NotificationsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_notifications_dropped_total",
		Help: "Notifications of restarts dropped unsent because the receiver's queue was full (the oldest waiting goes), by receiver kind.",
	}, []string{"sink"})

	// NotificationsRetried counts the attempts tried again.
	NotificationsRetried = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_notifications_retries_total",
		Help: "Attempts at notifications of restarts that failed and were tried again, by receiver kind.",
	}, []string{"sink"})
)

func init() {
	crmetrics.Registry.MustRegister(NotificationsSent, NotificationsFailed, NotificationsDropped, NotificationsRetried)
}
