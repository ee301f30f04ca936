package engine

import (
	"context"
	"hash/fnv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// LeaseRequest asks a store for credentials that it issues on demand (a
// secrets engine of Vault), at a path of its API.
type LeaseRequest struct {
	Path string
	// Method is GET or POST.
	Method string
	// Parameters go in the query of a GET, the body of a POST.
	Parameters map[string]string
	// Registry, when set, asks instead for a registry pull token of that
	// kind (dataFrom registryToken), of the registry RegistryID (empty:
	// the caller's own); Path, Method and Parameters are then unused.
	// The Object holds the key .dockerconfigjson and its version is the
	// token's expiry; the Lease's ID names the registry and the expiry,
	// and it cannot be renewed.
	Registry   v1alpha1.RegistryKind
	RegistryID string
	// RegistryHost is the registry host of a GAR token.
	RegistryHost string
}

// Lease is what a store granted with issued credentials: an ID to renew
// and revoke them by, and how long they last. An empty ID is an answer
// without a lease (static credentials), read again like any secret.
type Lease struct {
	ID        string
	Duration  time.Duration
	Renewable bool
}

// Leaser issues credentials with a lease, renews and revokes the lease
// (CanLease). Lease IDs are not secret values; the credentials are, and
// come back only in the Object.
type Leaser interface {
	// Issue asks for credentials. The Object's fields are the
	// credentials; its version is the lease ID, or the store's rotation
	// time for static credentials.
	Issue(ctx context.Context, req LeaseRequest) (Object, Lease, error)
	// Renew extends a lease by increment, as far as the store allows; an
	// error wrapping ErrNotFound when the lease is gone.
	Renew(ctx context.Context, id string, increment time.Duration) (Lease, error)
	// Revoke ends a lease at once: the store deletes the credentials. A
	// lease that is already gone is no error.
	Revoke(ctx context.Context, id string) error
}

// LeaseRef is the remote reference under which the credentials of a
// vaultDynamic entry are rendered and their version recorded.
func LeaseRef(v *v1alpha1.VaultDynamicSecret) Ref { return Ref{Key: v.Path} }

// DefaultRegistryRenewBefore is how long before its expiry a registry
// token is replaced when the spec does not say: an hour of ECR's twelve,
// ten minutes of GAR's one.
func DefaultRegistryRenewBefore(kind v1alpha1.RegistryKind) time.Duration {
	if kind == v1alpha1.RegistryGAR {
		return 10 * time.Minute
	}
	return time.Hour
}

// LeaseStoreNeeded says which kind of store grants a lease request, for
// the refusal of a store that cannot: "registry ECR needs an awssm or
// awsps store".
func LeaseStoreNeeded(req LeaseRequest) string {
	switch req.Registry {
	case "":
		return "dataFrom vaultDynamic needs a Vault store"
	case v1alpha1.RegistryECR:
		return "registry ECR needs an awssm or awsps store"
	case v1alpha1.RegistryGAR:
		return "registry GAR needs a gcpsm store"
	}
	return "registry " + string(req.Registry) + " is not one Watchword knows"
}

// RegistryLease is the lease entry that a registryToken entry is held by:
// a token cannot be renewed or revoked, so it is replaced renewBefore its
// expiry and retained (it expires) when the ExternalSecret goes. Its path
// names the registry, so a changed registry asks for a new token.
func RegistryLease(t *v1alpha1.RegistryToken) *v1alpha1.VaultDynamicSecret {
	before := DefaultRegistryRenewBefore(t.Registry)
	if t.RenewBefore != nil && t.RenewBefore.Duration > 0 {
		before = t.RenewBefore.Duration
	}
	path := "registry:" + string(t.Registry)
	if t.RegistryID != "" {
		path += ":" + t.RegistryID
	}
	if t.Host != "" {
		path += ":" + t.Host
	}
	return &v1alpha1.VaultDynamicSecret{Path: path, RenewBefore: &metav1.Duration{Duration: before},
		DeletionPolicy: v1alpha1.VaultLeaseRetain}
}

// DynamicEntry is the spec's dataFrom entry that holds a lease (a
// vaultDynamic, or a registryToken as RegistryLease makes it) and the
// request that issues it; nil when there is none.
func DynamicEntry(spec *v1alpha1.ExternalSecretSpec) (*v1alpha1.VaultDynamicSecret, *LeaseRequest) {
	for _, d := range spec.DataFrom {
		if v := d.VaultDynamic; v != nil {
			return v, &LeaseRequest{Path: v.Path, Method: v.Method, Parameters: v.Parameters}
		}
		if t := d.RegistryToken; t != nil {
			return RegistryLease(t), &LeaseRequest{Registry: t.Registry, RegistryID: t.RegistryID, RegistryHost: t.Host}
		}
	}
	return nil, nil
}

// LeaseAction is what a held lease needs now.
type LeaseAction int

// The lease actions.
const (
	// LeaseKeep: nothing until the lease's next time.
	LeaseKeep LeaseAction = iota
	// LeaseRenew: renew it.
	LeaseRenew
	// LeaseRotate: issue new credentials in its place.
	LeaseRotate
)

// DefaultRenewPercent is the share of a lease's duration that passes
// before it is renewed, when the spec does not say.
const DefaultRenewPercent = 67

// NextLeaseAction tells what a lease needs at now, and when it needs
// something next: renewal once percent of its last granted duration has
// passed; new credentials in its place instead when it cannot be renewed,
// or when Vault granted less than its TTL last time (its maximum TTL is
// near), so that new credentials are in place before the old ones end;
// and for a lease that has expired.
func NextLeaseAction(l *v1alpha1.VaultLeaseStatus, percent int32, now time.Time) (LeaseAction, time.Time) {
	return nextLeaseAction(l, percent, 0, now)
}

// NextLeaseActionFor is NextLeaseAction with the times a vaultDynamic
// entry sets: renewBefore, when set, acts that long before expiry.
func NextLeaseActionFor(l *v1alpha1.VaultLeaseStatus, v *v1alpha1.VaultDynamicSecret, now time.Time) (LeaseAction, time.Time) {
	var before time.Duration
	if v.RenewBefore != nil {
		before = v.RenewBefore.Duration
	}
	return nextLeaseAction(l, v.RenewPercent, before, now)
}

func nextLeaseAction(l *v1alpha1.VaultLeaseStatus, percent int32, before time.Duration, now time.Time) (LeaseAction, time.Time) {
	if percent <= 0 {
		percent = DefaultRenewPercent
	}
	last := l.IssueTime.Time
	if l.RenewTime != nil {
		last = l.RenewTime.Time
	}
	at := last.Add(l.Duration.Duration * time.Duration(percent) / 100)
	if before > 0 {
		at = l.ExpiryTime.Add(-before)
	}
	if exp := l.ExpiryTime.Time; at.After(exp) {
		at = exp
	}
	at = at.Add(-LeaseSpread(l.ID, at.Sub(last)))
	capped := l.Duration.Duration < l.TTL.Duration
	switch {
	case now.Before(at):
		return LeaseKeep, at
	case l.Renewable && !capped && now.Before(l.ExpiryTime.Time):
		return LeaseRenew, at
	default:
		return LeaseRotate, at
	}
}

// MaxLeaseSpread bounds how much earlier than its share a lease is
// renewed (or replaced) to spread renewals in time.
const MaxLeaseSpread = 10 * time.Minute

// LeaseSpread is how much earlier than its due time a lease acts, so that
// leases issued together (a thousand ExternalSecrets synced in the same
// minute) are not renewed together: up to a tenth of the wait, at most
// MaxLeaseSpread, taken from a hash of the lease ID. Earlier, never later,
// so the margin before expiry that renewPercent and renewBefore keep is
// only ever larger; the same ID gives the same spread after a restart.
// Written here rather than taken from a jitter helper (such as
// apimachinery's wait.Jitter) because it must be deterministic per lease.
func LeaseSpread(id string, wait time.Duration) time.Duration {
	window := min(wait/10, MaxLeaseSpread)
	if window <= 0 || id == "" {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(window))
}

type timedLeaser struct{ inner Leaser }

func (t timedLeaser) Issue(ctx context.Context, req LeaseRequest) (Object, Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.Issue(ctx, req)
}

func (t timedLeaser) Renew(ctx context.Context, id string, increment time.Duration) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.Renew(ctx, id, increment)
}

func (t timedLeaser) Revoke(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return t.inner.Revoke(ctx, id)
}
