package engine

import (
	"strings"
	"testing"
)

// TestPEMHelpersWithoutTheirBlock: each helper names itself and the block
// it looked for, and never repeats its input.
func TestPEMHelpersWithoutTheirBlock(t *testing.T) {
	_, _, keyPEM := testChain(t)
	noCert := "not PEM " + canary + "\n" + keyPEM
	cases := []struct {
		name string
		fn   func(string) (string, error)
		in   string
		want string
	}{
		{name: "pemCertificates", fn: pemCertificates, in: noCert, want: "pemCertificates: no CERTIFICATE block in input"},
		{name: "pemLeaf", fn: pemLeaf, in: noCert, want: "pemLeaf: no CERTIFICATE block in input"},
		{name: "pemChain", fn: pemChain, in: noCert, want: "pemChain: no CERTIFICATE block in input"},
		{name: "pemPrivateKey", fn: pemPrivateKey, in: "text " + canary, want: "pemPrivateKey: no PRIVATE KEY block in input"},
		{name: "certSubject", fn: certSubject, in: noCert, want: "certSubject: no CERTIFICATE block in input"},
		{name: "certNotAfter", fn: certNotAfter, in: noCert, want: "certNotAfter: no CERTIFICATE block in input"},
		{name: "certSubject of a broken certificate", fn: certSubject,
			in: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", want: "certSubject: the first certificate does not parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.fn(tc.in)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("error %q repeats the input", err)
			}
		})
	}
}

func TestPEMBlocksKeepsEveryBlockInOrder(t *testing.T) {
	rootPEM, leafPEM, keyPEM := testChain(t)
	got := pemBlocks("preamble\n" + leafPEM + "between\n" + keyPEM + rootPEM)
	want := []string{leafPEM, keyPEM, rootPEM}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d differs", i)
		}
	}
	if pemBlocks("no PEM here") != nil {
		t.Error("input without PEM must give no blocks")
	}
}
