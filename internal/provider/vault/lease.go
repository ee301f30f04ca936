package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// leaseAnswer is the part of Vault's answer to a secrets engine read, or
// to a renewal, that tells the lease.
type leaseAnswer struct {
	LeaseID       string         `json:"lease_id"`
	LeaseDuration int64          `json:"lease_duration"`
	Renewable     bool           `json:"renewable"`
	Data          map[string]any `json:"data"`
}

func (a leaseAnswer) lease() engine.Lease {
	return engine.Lease{ID: a.LeaseID, Duration: time.Duration(a.LeaseDuration) * time.Second, Renewable: a.Renewable}
}

// Issue reads a secrets engine path that issues credentials, such as
// database/creds/ROLE. The lease ID is the version of what it read; an
// answer without a lease has none; that of a static role
// (database/static-creds/ROLE) has the time of its last rotation as its
// version, and loses its ttl field, which counts
// down at every read and would make every refresh look like a change.
func (c *Client) Issue(ctx context.Context, req engine.LeaseRequest) (engine.Object, engine.Lease, error) {
	if req.Registry != "" {
		return engine.Object{}, engine.Lease{}, failure.Terminalf(failure.NotSupported,
			"Vault issues no %s registry tokens: %s", req.Registry, engine.LeaseStoreNeeded(req))
	}
	path := strings.Trim(req.Path, "/")
	where := fmt.Sprintf("Vault path %q", path)
	var q url.Values
	var body any
	method := http.MethodGet
	if req.Method == http.MethodPost {
		method, body = http.MethodPost, req.Parameters
	} else if len(req.Parameters) > 0 {
		q = url.Values{}
		for k, v := range req.Parameters {
			q.Set(k, v)
		}
	}
	var out leaseAnswer
	if err := c.call(ctx, method, path, q, body, &out); err != nil {
		return engine.Object{}, engine.Lease{}, classify(where, err)
	}
	if out.Data == nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s answered no data: %w", where, engine.ErrNotFound)
	}
	if out.LeaseID == "" {
		if serial, ok := out.Data["serial_number"].(string); ok && out.Data["certificate"] != nil {
			return certificate(path, serial, out.Data)
		}
	}
	version := out.LeaseID
	if r, ok := out.Data["last_vault_rotation"].(string); ok && version == "" {
		version = r
		delete(out.Data, "ttl")
	}
	obj, err := objectOf(out.Data, version)
	if err != nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("%s: %w", where, err)
	}
	return obj, out.lease(), nil
}

// Renew asks for the lease to last increment more; Vault grants less when
// the lease's maximum TTL is nearer. A lease Vault no longer knows (it
// expired or was revoked: Vault answers 400) is ErrNotFound.
func (c *Client) Renew(ctx context.Context, id string, increment time.Duration) (engine.Lease, error) {
	body := map[string]any{"lease_id": id, "increment": int64(increment / time.Second)}
	var out leaseAnswer
	if err := c.call(ctx, http.MethodPut, "sys/leases/renew", nil, body, &out); err != nil {
		if gone(err) {
			return engine.Lease{}, fmt.Errorf("Vault lease %q cannot be renewed: %w", id, engine.ErrNotFound)
		}
		return engine.Lease{}, classify(fmt.Sprintf("Vault lease %q", id), err)
	}
	return out.lease(), nil
}

// Revoke revokes the lease at once; Vault deletes the credentials. Vault
// answers a lease it does not know as done. A certificate's "lease"
// (pki:MOUNT:SERIAL) is revoked by its serial number.
func (c *Client) Revoke(ctx context.Context, id string) error {
	if mount, serial, ok := certLease(id); ok {
		err := c.call(ctx, http.MethodPost, mount+"/revoke", nil, map[string]any{"serial_number": serial}, nil)
		if err != nil {
			return classify(fmt.Sprintf("certificate %s of PKI mount %q", serial, mount), err)
		}
		return nil
	}
	err := c.call(ctx, http.MethodPut, "sys/leases/revoke", nil, map[string]any{"lease_id": id}, nil)
	if err != nil && !gone(err) {
		return classify(fmt.Sprintf("Vault lease %q", id), err)
	}
	return nil
}

// gone tells an answer about a lease that Vault no longer has: 400 with
// "lease not found" or "invalid lease".
func gone(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != http.StatusBadRequest {
		return false
	}
	for _, e := range ae.errs {
		if strings.Contains(e, "lease not found") || strings.Contains(e, "invalid lease") {
			return true
		}
	}
	return false
}

// certPrefix starts the lease ID Watchword gives a certificate that a PKI
// role issued without a Vault lease (the default: generate_lease false).
const certPrefix = "pki:"

// certificate turns the answer of PKI_MOUNT/issue/ROLE into the fields of
// a certificate and a lease that ends at its notAfter, not renewable (a
// certificate is replaced, not extended). ca_chain, a list, becomes one
// PEM text. The ID names the mount and the serial number, for revocation;
// neither is secret.
func certificate(path, serial string, data map[string]any) (engine.Object, engine.Lease, error) {
	mount, _, ok := strings.Cut(path, "/issue/")
	if !ok {
		mount, _, _ = strings.Cut(path, "/sign/")
	}
	if chain, ok := data["ca_chain"].([]any); ok {
		pems := make([]string, 0, len(chain))
		for _, c := range chain {
			if s, ok := c.(string); ok {
				pems = append(pems, strings.TrimSpace(s))
			}
		}
		data["ca_chain"] = strings.Join(pems, "\n") + "\n"
	}
	var expiry int64
	switch e := data["expiration"].(type) {
	case float64:
		expiry = int64(e)
	case json.Number:
		expiry, _ = e.Int64()
	}
	obj, err := objectOf(data, serial)
	if err != nil {
		return engine.Object{}, engine.Lease{}, fmt.Errorf("Vault path %q: %w", path, err)
	}
	d := time.Until(time.Unix(expiry, 0)).Truncate(time.Second)
	return obj, engine.Lease{ID: certPrefix + mount + ":" + serial, Duration: d}, nil
}

// certLease splits a certificate's lease ID.
func certLease(id string) (mount, serial string, ok bool) {
	rest, ok := strings.CutPrefix(id, certPrefix)
	if !ok {
		return "", "", false
	}
	// A serial number is hex pairs joined by ':'; a mount path has none.
	i := strings.Index(rest, ":")
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}
