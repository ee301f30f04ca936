package ldapserver

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
)

func TestServerStartsAnswersAndStops(t *testing.T) {
	root, skip, err := Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	s, err := Start(context.Background(), root, map[string]string{"alice": "pw: with = odd chars\n"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "ldap://"))
	if err != nil {
		s.Stop()
		t.Fatalf("slapd does not answer at %s: %v", s.URL, err)
	}
	_ = conn.Close()
	s.Stop()
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("Stop left %s behind: %v", s.dir, err)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "ldap://")); err == nil {
		t.Fatal("slapd still answers after Stop")
	}
}
