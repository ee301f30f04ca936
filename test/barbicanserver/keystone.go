package barbicanserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
)

// startKeystone creates Keystone's configuration, keys and database
// (keystone-manage db_sync and bootstrap), starts it, and provisions the
// test project, user, role and application credential, and Barbican's
// place in the catalog.
func (s *Server) startKeystone(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "keystone")
	k := &Keystone{
		AuthURL:       "http://127.0.0.1:" + strconv.Itoa(port) + "/v3",
		AdminPassword: randomHex(12),
		ProjectName:   "watchword",
		Username:      "watchword",
		Password:      randomHex(12),
		dir:           dir,
		port:          port,
	}
	// Fernet keys are what keystone-manage fernet_setup and
	// credential_setup write: 32 random bytes, URL-safe base64, in files
	// 0 (staged) and 1 (primary).
	for _, repo := range []string{"fernet", "credential"} {
		if err = os.MkdirAll(filepath.Join(dir, repo), 0o700); err != nil {
			return err
		}
		for _, name := range []string{"0", "1"} {
			key := make([]byte, 32)
			if _, err = rand.Read(key); err != nil {
				return err
			}
			if err = os.WriteFile(filepath.Join(dir, repo, name), []byte(base64.URLEncoding.EncodeToString(key)), 0o600); err != nil {
				return err
			}
		}
	}
	conf := fmt.Sprintf(`[DEFAULT]
use_stderr = True
[database]
connection = sqlite:///%[1]s/keystone.sqlite
[token]
provider = fernet
[fernet_tokens]
key_repository = %[1]s/fernet
[fernet_receipts]
key_repository = %[1]s/fernet
[credential]
key_repository = %[1]s/credential
`, dir)
	if err = os.WriteFile(filepath.Join(dir, "keystone.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	if err = s.run(ctx, "keystone-setup", dir, "keystone-setup", filepath.Join(dir, "keystone.conf"), k.AdminPassword, k.AuthURL); err != nil {
		return err
	}
	p, err := s.spawn("keystone", dir, "keystone", dir, strconv.Itoa(port))
	if err != nil {
		return err
	}
	s.keystone = p
	if err = p.waitHTTP(ctx, k.AuthURL); err != nil {
		return err
	}
	s.Keystone = k
	if err = s.provision(ctx); err != nil {
		return fmt.Errorf("provisioning Keystone: %w", err)
	}
	s.ProjectID = k.ProjectID
	return nil
}

// provision creates, as admin, the test project, the role "creator", the
// test user with that role on the project, and Barbican's service and
// endpoint in the catalog; then, as the test user, an application
// credential.
func (s *Server) provision(ctx context.Context) error {
	k := s.Keystone
	admin, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: k.AuthURL, Username: "admin", Password: k.AdminPassword, DomainID: "default",
		Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainID: "default"},
	})
	if err != nil {
		return fmt.Errorf("logging in as admin: %w", err)
	}
	id, err := openstack.NewIdentityV3(admin, gophercloud.EndpointOpts{})
	if err != nil {
		return err
	}
	project, err := projects.Create(ctx, id, projects.CreateOpts{Name: k.ProjectName, DomainID: "default"}).Extract()
	if err != nil {
		return fmt.Errorf("creating the project: %w", err)
	}
	k.ProjectID = project.ID
	user, err := users.Create(ctx, id, users.CreateOpts{Name: k.Username, DomainID: "default", Password: k.Password}).Extract()
	if err != nil {
		return fmt.Errorf("creating the user: %w", err)
	}
	k.UserID = user.ID
	role, err := roles.Create(ctx, id, roles.CreateOpts{Name: "creator"}).Extract()
	if err != nil {
		return fmt.Errorf("creating the role: %w", err)
	}
	if err = roles.Assign(ctx, id, role.ID, roles.AssignOpts{UserID: user.ID, ProjectID: project.ID}).ExtractErr(); err != nil {
		return fmt.Errorf("assigning the role: %w", err)
	}
	svc, err := services.Create(ctx, id, services.CreateOpts{Type: "key-manager", Extra: map[string]any{"name": "barbican"}}).Extract()
	if err != nil {
		return fmt.Errorf("creating the key-manager service: %w", err)
	}
	if _, err = endpoints.Create(ctx, id, endpoints.CreateOpts{
		Availability: gophercloud.AvailabilityPublic, Region: "RegionOne", URL: s.URL, ServiceID: svc.ID,
	}).Extract(); err != nil {
		return fmt.Errorf("creating Barbican's endpoint: %w", err)
	}
	as, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: k.AuthURL, UserID: user.ID, Password: k.Password,
		Scope: &gophercloud.AuthScope{ProjectID: project.ID},
	})
	if err != nil {
		return fmt.Errorf("logging in as the test user: %w", err)
	}
	uid, err := openstack.NewIdentityV3(as, gophercloud.EndpointOpts{})
	if err != nil {
		return err
	}
	cred, err := applicationcredentials.Create(ctx, uid, user.ID, applicationcredentials.CreateOpts{Name: "watchword-tests"}).Extract()
	if err != nil {
		return fmt.Errorf("creating the application credential: %w", err)
	}
	k.AppCredID, k.AppCredSecret = cred.ID, cred.Secret
	return nil
}
