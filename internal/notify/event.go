// Package notify announces restarts of workloads for rotations, and
// restarts held back, to receivers outside the cluster: a generic webhook
// (a JSON body signed with HMAC-SHA256), a Slack incoming webhook and a
// Microsoft Teams workflow webhook (an Adaptive Card). A notification names
// the workload, the Secrets, their keys and versions; never a value.
//
// Delivery never holds up a restart: Notify only puts the notification in
// a bounded queue per receiver, and a few workers per receiver send it,
// with a timeout per attempt and retries with backoff (docs/notifications.md).
//
// event.go is the message; sign.go the webhook's signature; format.go the
// bodies of the three kinds of receiver; queue.go the bounded queue;
// send.go the delivery; notifier.go puts them together; secret.go reads
// the receivers' URLs from a Secret.
package notify

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// The types of notification.
const (
	// TypeRestarted: a workload was restarted for a rotation.
	TypeRestarted = "Restarted"
	// TypeHeld: a due restart is held back, told as the RestartHeld event
	// is (docs/rotation.md).
	TypeHeld = "RestartHeld"
)

// Types are the notification types, in the order the docs list them.
var Types = []string{TypeRestarted, TypeHeld}

// Event is one notification: what happened to which workload, for the
// rotation of which Secrets. It holds names, keys and versions only.
type Event struct {
	// ID is the same for every receiver and every attempt of one
	// notification, so that a receiver can drop a repeat.
	ID string `json:"id"`
	// Type is TypeRestarted or TypeHeld.
	Type string `json:"type"`
	// Time is when it happened.
	Time time.Time `json:"time"`
	// Cluster is the name set with --notify-cluster-name, if any.
	Cluster  string   `json:"cluster,omitempty"`
	Workload Workload `json:"workload"`
	// Reason and Message are a held restart's: why it waits (RateLimited,
	// MaintenanceWindow, ...) and until when, as the RestartHeld event
	// says.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Secrets are the rotated Secrets the restart is for.
	Secrets []Secret `json:"secrets"`
}

// Workload names the workload restarted or held.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// Secret is one rotated Secret of the workload's namespace.
type Secret struct {
	// Kind is Secret, or ConfigMap for a change of a ConfigMap that a
	// workload's reload annotations name (docs/rotation.md).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// RotatedAt is the time of the latest rotation the restart is for.
	RotatedAt time.Time `json:"rotatedAt"`
	// Keys are the rotated keys that the workload uses; none when any key
	// may have changed (AnyKey).
	Keys   []string `json:"keys,omitempty"`
	AnyKey bool     `json:"anyKey,omitempty"`
	// ExternalSecrets are those that write the Secret, with the versions
	// they last synced.
	ExternalSecrets []Source `json:"externalSecrets,omitempty"`
}

// Source is an ExternalSecret writing a rotated Secret, and the versions
// of its last sync.
type Source struct {
	Name string `json:"name"`
	// TargetResourceVersion is the Secret's resourceVersion after the
	// ExternalSecret's last write.
	TargetResourceVersion string `json:"targetResourceVersion,omitempty"`
	// Versions are the remote objects read and their versions.
	Versions []Version `json:"versions,omitempty"`
}

// Version is a remote object's key in its store and the version read.
type Version struct {
	Key     string `json:"key"`
	Version string `json:"version,omitempty"`
}

// NewID is a random notification ID: 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
