package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/agent"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

// These tests run `watchword agent` as a user runs it, a process of the
// built binary, against the real Vault of the suite.

// agentVaultToken writes a token that may read and list the KV v2 data
// and metadata under prefix into a file, and returns the file.
func agentVaultToken(t *testing.T, srv *vaultserver.Server, prefix string) string {
	t.Helper()
	policy := "agent-" + prefix
	must(t, srv.Policy(policy, fmt.Sprintf(`
path "secret/data/%[1]s/*" { capabilities = ["read"] }
path "secret/metadata/%[1]s/*" { capabilities = ["read"] }
`, prefix)))
	tok, err := srv.Token(policy)
	must(t, err)
	f := filepath.Join(t.TempDir(), "vault-token")
	must(t, os.WriteFile(f, []byte(tok+"\n"), 0o600))
	return f
}

// agentStore is the stores and credentials sections of a config.
func agentStore(addr, tokenFile string) string {
	return fmt.Sprintf(`kind: AgentConfig
stores:
  - name: vault
    vault:
      server: %s
      path: secret
      version: v2
      auth:
        tokenSecretRef: {name: vault-token, key: token}
credentials:
  - {secret: vault-token, key: token, file: %s}
`, addr, tokenFile)
}

func writeAgentConfig(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "agent.yaml")
	must(t, os.WriteFile(f, []byte(body), 0o600))
	return f
}

// runningAgent is a `watchword agent` process.
type runningAgent struct {
	cmd    *exec.Cmd
	output *syncBuffer
}

func startAgent(t *testing.T, config string, args ...string) *runningAgent {
	t.Helper()
	cmd := exec.Command(watchwordBinary(t), append([]string{"agent", "--config", config}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", out.String())
		}
	})
	return &runningAgent{cmd: cmd, output: out}
}

func fileIs(path, want string) bool {
	b, err := os.ReadFile(path)
	return err == nil && string(b) == want
}

// TestAgentRotationsNeverShowATornSet: twenty rotations of a Vault secret
// while a reader reads the whole set in a tight loop. Every file the
// reader opens by its visible name is whole (never empty, never part of a
// value); every set it reads through ..data (resolve it, read the files,
// check that it still names the same directory) is of one version. The
// reload command runs once per rotation, and refreshes with nothing new
// leave the files untouched (same inode and mtime).
func TestAgentRotationsNeverShowATornSet(t *testing.T) {
	parallel(t)
	needVault(t)
	prefix := "agent-rotate"
	tokenFile := agentVaultToken(t, vaultSrv, prefix)
	put := func(n int) {
		t.Helper()
		must(t, vaultSrv.PutKV2("secret", prefix+"/app", map[string]any{
			"user": fmt.Sprintf("user-%03d", n), "password": fmt.Sprintf("password-%03d-%s", n, strings.Repeat("x", 4096)), "host": fmt.Sprintf("host-%03d", n)}))
	}
	put(0)
	dir := filepath.Join(t.TempDir(), "secrets")
	reloads := filepath.Join(t.TempDir(), "reloads")
	cfg := writeAgentConfig(t, agentStore(vaultSrv.Addr(), tokenFile)+fmt.Sprintf(`refreshInterval: 1s
deliveries:
  - directory: %s
    store: vault
    mode: "0440"
    files:
      - {name: user, remoteRef: {key: %[2]s/app, property: user}}
      - {name: password, remoteRef: {key: %[2]s/app, property: password}}
      - {name: host, remoteRef: {key: %[2]s/app, property: host}}
    onChange:
      command: [/bin/sh, -c, "echo reload >> %[3]s"]
`, dir, prefix, reloads))
	startAgent(t, cfg)
	eventually(t, time.Minute, func() (bool, string) { return fileIs(filepath.Join(dir, "user"), "user-000"), "the first delivery" })

	names := []string{"user", "password", "host"}
	// versionOf is the version a file's content belongs to, or -1 when
	// the content is not a whole value.
	versionOf := func(name string, b []byte) int {
		p := len(name) + 1
		if len(b) < p+3 {
			return -1
		}
		n, err := strconv.Atoi(string(b[p : p+3]))
		if err != nil {
			return -1
		}
		want := fmt.Sprintf("%s-%03d", name, n)
		if name == "password" {
			want += "-" + strings.Repeat("x", 4096)
		}
		if string(b) != want {
			return -1
		}
		return n
	}
	var files, sets, retried, torn, empty, mixed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Each visible file is whole.
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(dir, n))
				files.Add(1)
				switch {
				case err != nil || len(b) == 0:
					empty.Add(1)
				case versionOf(n, b) < 0:
					torn.Add(1)
				}
			}
			// The set read through ..data is of one version.
			ts, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil {
				empty.Add(1)
				continue
			}
			seen := map[int]bool{}
			ok := true
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(dir, ts, n))
				if err != nil {
					ok = false // the old directory went away: read again
					break
				}
				seen[versionOf(n, b)] = true
			}
			if ts2, err := os.Readlink(filepath.Join(dir, "..data")); !ok || err != nil || ts2 != ts {
				retried.Add(1)
				continue
			}
			sets.Add(1)
			if len(seen) != 1 || seen[-1] {
				mixed.Add(1)
			}
		}
	}()
	const rotations = 20
	for n := 1; n <= rotations; n++ {
		put(n)
		want := fmt.Sprintf("host-%03d", n)
		eventually(t, time.Minute, func() (bool, string) { return fileIs(filepath.Join(dir, "host"), want), "rotation " + want })
	}
	close(stop)
	wg.Wait()
	t.Logf("reader: %d files read by name, %d whole sets read through ..data, %d set reads begun again after a swap; torn %d, empty %d, mixed %d",
		files.Load(), sets.Load(), retried.Load(), torn.Load(), empty.Load(), mixed.Load())
	if torn.Load()+empty.Load()+mixed.Load() != 0 {
		t.Errorf("the reader saw %d torn, %d empty and %d mixed reads", torn.Load(), empty.Load(), mixed.Load())
	}
	if sets.Load() == 0 {
		t.Error("the reader read no set at all")
	}

	// Nothing new for a few refreshes: the files are left alone, and no
	// reload runs beyond one per rotation.
	stat := func(p string) (uint64, time.Time) {
		fi, err := os.Stat(p)
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime()
	}
	ino, mtime := stat(filepath.Join(dir, "password"))
	link, err := os.Readlink(filepath.Join(dir, "..data"))
	must(t, err)
	time.Sleep(3500 * time.Millisecond) // three refreshes of 1s (±10%)
	ino2, mtime2 := stat(filepath.Join(dir, "password"))
	link2, err := os.Readlink(filepath.Join(dir, "..data"))
	must(t, err)
	if ino2 != ino || !mtime2.Equal(mtime) || link2 != link {
		t.Errorf("refreshes with nothing new touched the files: inode %d->%d, mtime %v->%v, ..data %s->%s", ino, ino2, mtime, mtime2, link, link2)
	}
	b, err := os.ReadFile(reloads)
	must(t, err)
	if got := strings.Count(string(b), "reload"); got != rotations {
		t.Errorf("the reload command ran %d times for %d rotations", got, rotations)
	}
	fi, err := os.Stat(filepath.Join(dir, "user"))
	must(t, err)
	if fi.Mode().Perm() != 0o440 {
		t.Errorf("mode %v, want 0440", fi.Mode().Perm())
	}
}

// auditReads counts the reads Vault's own audit log records per path,
// from the response entries (one per request that got an answer).
func auditReads(t *testing.T, file string) map[string]int {
	t.Helper()
	f, err := os.Open(file)
	must(t, err)
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Type    string `json:"type"`
			Request struct {
				Operation string `json:"operation"`
				Path      string `json:"path"`
			} `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "response" && e.Request.Operation == "read" {
			out[e.Request.Path]++
		}
	}
	must(t, sc.Err())
	return out
}

// TestAgentTenDirectoriesShareOneReadPerObject: one agent serving ten
// directories that share three objects makes one data read per object,
// counted in Vault's own audit log; refreshes with nothing new read
// metadata only; a change costs one data read of the changed object.
func TestAgentTenDirectoriesShareOneReadPerObject(t *testing.T) {
	parallel(t)
	needVault(t)
	prefix := "agent-shared"
	tokenFile := agentVaultToken(t, vaultSrv, prefix)
	objects := []string{"a", "b", "c"}
	for _, o := range objects {
		must(t, vaultSrv.PutKV2("secret", prefix+"/"+o, map[string]any{"value": "v1-" + o}))
	}
	auditFile := filepath.Join(t.TempDir(), "audit.log")
	must(t, vaultSrv.Do(http.MethodPut, "sys/audit/agent-shared", map[string]any{"type": "file", "options": map[string]string{"file_path": auditFile}}, nil))
	t.Cleanup(func() { _ = vaultSrv.Do(http.MethodDelete, "sys/audit/agent-shared", nil, nil) })

	root := t.TempDir()
	var b strings.Builder
	b.WriteString(agentStore(vaultSrv.Addr(), tokenFile) + "refreshInterval: 2s\ndeliveries:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - directory: %s/d%d\n    store: vault\n    files:\n", root, i)
		for _, o := range objects {
			fmt.Fprintf(&b, "      - {name: %s, remoteRef: {key: %s/%s, property: value}}\n", o, prefix, o)
		}
	}
	ag := startAgent(t, writeAgentConfig(t, b.String()), "--health-addr", "127.0.0.1:0")
	allHold := func(name, want string) func() (bool, string) {
		return func() (bool, string) {
			for i := range 10 {
				if !fileIs(fmt.Sprintf("%s/d%d/%s", root, i, name), want) {
					return false, fmt.Sprintf("d%d/%s does not hold the new value yet", i, name)
				}
			}
			return true, ""
		}
	}
	eventually(t, time.Minute, allHold("c", "v1-c"))
	data := func(reads map[string]int, o string) int { return reads["secret/data/"+prefix+"/"+o] }
	meta := func(reads map[string]int, o string) int { return reads["secret/metadata/"+prefix+"/"+o] }

	first := auditReads(t, auditFile)
	for _, o := range objects {
		if got := data(first, o); got != 1 {
			t.Errorf("first delivery: %d data reads of %s for ten directories, want 1", got, o)
		}
	}
	// The agent's own count agrees, on its metrics endpoint.
	addr := ag.healthAddr(t)
	must(t, getOK("http://"+addr+"/readyz"))
	if m := ag.metric(t, addr, `watchword_agent_store_reads_total{store="config/vault"}`); m != 3 {
		t.Errorf("the agent counted %v store reads, want 3", m)
	}
	time.Sleep(5 * time.Second) // about two refreshes with nothing new
	idle := auditReads(t, auditFile)
	for _, o := range objects {
		if got := data(idle, o); got != 1 {
			t.Errorf("refreshes with nothing new read the data of %s again: %d data reads in all", o, got)
		}
		if meta(idle, o) == meta(first, o) {
			t.Errorf("refreshes with nothing new made no version check of %s", o)
		}
	}
	must(t, vaultSrv.PutKV2("secret", prefix+"/b", map[string]any{"value": "v2-b"}))
	eventually(t, time.Minute, allHold("b", "v2-b"))
	changed := auditReads(t, auditFile)
	t.Logf("Vault audit log, reads of data / metadata: first delivery %v / %v; after idle refreshes %v / %v; after b changed %v / %v",
		counts(first, data, objects), counts(first, meta, objects), counts(idle, data, objects), counts(idle, meta, objects),
		counts(changed, data, objects), counts(changed, meta, objects))
	for _, o := range objects {
		want := 1
		if o == "b" {
			want = 2
		}
		if got := data(changed, o); got != want {
			t.Errorf("after b changed: %d data reads of %s in all, want %d", got, o, want)
		}
	}
}

// healthAddr is the address the agent's endpoints listen on, from its log.
func (a *runningAgent) healthAddr(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`"serving health and metrics","address":"([^"]+)"`)
	var addr string
	eventually(t, 30*time.Second, func() (bool, string) {
		if m := re.FindStringSubmatch(a.output.String()); m != nil {
			addr = m[1]
		}
		return addr != "", "the agent to log its health address"
	})
	return addr
}

// metric reads one sample of the agent's /metrics.
func (a *runningAgent) metric(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return f
		}
	}
	t.Fatalf("no sample %s on /metrics", sample)
	return 0
}

func getOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

func counts(reads map[string]int, f func(map[string]int, string) int, objects []string) map[string]int {
	out := map[string]int{}
	for _, o := range objects {
		out[o] = f(reads, o)
	}
	return out
}

// TestAgentOnceWritesEverythingOrExitsWithTheReason: `--once`, as an init
// container runs it, exits 0 with the files written; with Vault sealed it
// exits 1 naming the directory and the reason, writes nothing and prints
// no value. An agent running as a service meanwhile keeps its last good
// files while Vault is sealed, and delivers again once it is unsealed,
// without a restart. It uses a Vault of its own, which it seals.
func TestAgentOnceWritesEverythingOrExitsWithTheReason(t *testing.T) {
	parallel(t)
	needVault(t) // for the skip or failure without a vault binary
	bin, _, err := vaultserver.Lookup()
	must(t, err)
	srv, err := vaultserver.Start(bin)
	must(t, err)
	t.Cleanup(srv.Close)
	const secretValue = "once-secret-value-7f3a"
	must(t, srv.PutKV2("secret", "once/app", map[string]any{"password": secretValue}))
	tokenFile := agentVaultToken(t, srv, "once")
	config := func(dir string) string {
		return writeAgentConfig(t, agentStore(srv.Addr(), tokenFile)+fmt.Sprintf(`refreshInterval: 1s
deliveries:
  - directory: %s
    store: vault
    mode: "0400"
    files:
      - {name: password, remoteRef: {key: once/app, property: password}}
`, dir))
	}
	dir := filepath.Join(t.TempDir(), "secrets")
	out, err := exec.Command(watchwordBinary(t), "agent", "--once", "--config", config(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("--once failed: %v\n%s", err, out)
	}
	if !fileIs(filepath.Join(dir, "password"), secretValue) {
		t.Error("--once exited 0 without the file written")
	}
	fi, err := os.Stat(filepath.Join(dir, "password"))
	must(t, err)
	if fi.Mode().Perm() != 0o400 {
		t.Errorf("mode %v, want 0400", fi.Mode().Perm())
	}
	if bytes.Contains(out, []byte(secretValue)) {
		t.Errorf("the output holds the value:\n%s", out)
	}

	// A service on the same Vault, to see it keep its files while
	// Vault is sealed and recover without a restart.
	serviceDir := filepath.Join(t.TempDir(), "service")
	service := startAgent(t, config(serviceDir))
	eventually(t, time.Minute, func() (bool, string) {
		return fileIs(filepath.Join(serviceDir, "password"), secretValue), "the service's delivery"
	})

	must(t, srv.Seal())
	sealedDir := filepath.Join(t.TempDir(), "sealed")
	cmd := exec.Command(watchwordBinary(t), "agent", "--once", "--config", config(sealedDir))
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("--once with Vault sealed: %v, want exit status 1\n%s", err, out)
	}
	t.Logf("--once with Vault sealed exited 1:\n%s", out)
	for _, want := range []string{"directory " + sealedDir, "Vault is sealed"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte(secretValue)) {
		t.Errorf("the output holds the value:\n%s", out)
	}
	if _, err := os.Stat(sealedDir); !os.IsNotExist(err) {
		t.Errorf("--once wrote into %s although it failed: %v", sealedDir, err)
	}

	eventually(t, time.Minute, func() (bool, string) {
		return strings.Contains(service.output.String(), "Vault is sealed"), "the service to report the sealed Vault"
	})
	if !fileIs(filepath.Join(serviceDir, "password"), secretValue) {
		t.Error("the service lost its last good files while Vault was sealed")
	}
	must(t, srv.Unseal())
	must(t, srv.PutKV2("secret", "once/app", map[string]any{"password": secretValue + "-2"}))
	eventually(t, time.Minute, func() (bool, string) {
		return fileIs(filepath.Join(serviceDir, "password"), secretValue+"-2"), "the service to deliver after Vault was unsealed"
	})
	if strings.Contains(service.output.String(), secretValue) {
		t.Errorf("the service's output holds a value:\n%s", service.output.String())
	}
}

// TestAgentConfigExamplesInDocs parses every agent config the docs and
// deploy/agent show (```yaml agent-config blocks, deploy/agent/agent.yaml
// and the config in deploy/agent/pod.yaml) as the agent does, and applies
// the objects of deploy/agent/pod.yaml with a server-side dry run.
func TestAgentConfigExamplesInDocs(t *testing.T) {
	parallel(t)
	parsed := 0
	for _, file := range docFiles(t) {
		blocks, err := docBlocks(file)
		must(t, err)
		for _, b := range blocks {
			if b.info != infoAgentConfig {
				continue
			}
			parsed++
			if _, err := agent.ParseConfig(b.String(), []byte(b.body)); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	body, err := os.ReadFile("../../deploy/agent/agent.yaml")
	must(t, err)
	if _, err = agent.ParseConfig("deploy/agent/agent.yaml", body); err != nil {
		t.Errorf("%v", err)
	}
	pod, err := os.ReadFile("../../deploy/agent/pod.yaml")
	must(t, err)
	objs, err := docObjects(string(pod))
	must(t, err)
	ns := newNamespace(t, nil)
	for _, u := range objs {
		if u.GetKind() == "ConfigMap" {
			cfg, _, _ := unstructured.NestedString(u.Object, "data", "agent.yaml")
			parsed++
			if _, err := agent.ParseConfig("deploy/agent/pod.yaml ConfigMap", []byte(cfg)); err != nil {
				t.Errorf("%v", err)
			}
		}
		u.SetNamespace(ns)
		if u.GetKind() == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = ns
			}
			must(t, unstructured.SetNestedSlice(u.Object, subjects, "subjects"))
		}
		if err := dryRunCreate(u); err != nil {
			t.Errorf("deploy/agent/pod.yaml: %s %q was refused: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if parsed < 3 {
		t.Errorf("only %d agent configs found in the docs and the pod example", parsed)
	}
	t.Logf("%d agent configs parsed, %d objects of the pod example applied", parsed+1, len(objs))
}

// TestAgentFollowsAnExternalSecretWithKubernetesAuth: in Kubernetes mode
// the agent follows an ExternalSecret with creationPolicy None by name and
// logs in to the real Vault with a projected service-account token
// (audience vault) through Vault's Kubernetes auth method, which checks it
// with a TokenReview against the test API server. No credential is stored:
// the token file is all the agent has. A rotation reaches the files, and
// an ExternalSecret whose Secret the controller writes is refused.
func TestAgentFollowsAnExternalSecretWithKubernetesAuth(t *testing.T) {
	parallel(t)
	needVault(t)
	ctx := context.Background()
	ns := newNamespace(t, nil)
	const sa, mount, prefix = "payments", "agent-kube", "agent-kube"

	// Vault's Kubernetes auth, reviewing tokens with a token of its own
	// account, which may review tokens (system:auth-delegator), as Vault
	// outside the cluster is set up. The agent's token (audience vault)
	// could not do it: the API server accepts only its own audience.
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault-reviewer"}}))
	must(t, k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-review"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "vault-reviewer"}}}))
	if err := vaultSrv.Do(http.MethodPost, "sys/auth/"+mount, map[string]any{"type": "kubernetes"}, nil); err != nil && !strings.Contains(err.Error(), "path is already in use") {
		t.Fatal(err)
	}
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/config", map[string]any{
		"kubernetes_host": restCfg.Host, "kubernetes_ca_cert": string(restCfg.CAData), "disable_local_ca_jwt": true,
		"token_reviewer_jwt": accountToken(t, ns, "vault-reviewer")}, nil))
	must(t, vaultSrv.Policy(prefix, fmt.Sprintf(`
path "secret/data/%[1]s/*" { capabilities = ["read"] }
path "secret/metadata/%[1]s/*" { capabilities = ["read"] }
`, prefix)))
	must(t, vaultSrv.Do(http.MethodPost, "auth/"+mount+"/role/payments", map[string]any{
		"bound_service_account_names": []string{sa}, "bound_service_account_namespaces": []string{ns},
		"audience": "vault", "policies": []string{prefix}, "token_ttl": "1h"}, nil))
	must(t, vaultSrv.PutKV2("secret", prefix+"/db", map[string]any{"user": "payments", "password": "kube-pw-1"}))

	// The projected token, as the kubelet would write it.
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	tokenFile := filepath.Join(t.TempDir(), "vault")
	must(t, os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600))
	// Vault accepts the token itself once the API server's RBAC lets
	// the account review tokens.
	eventually(t, 30*time.Second, func() (bool, string) {
		lerr := vaultSrv.Do(http.MethodPost, "auth/"+mount+"/login", map[string]any{"role": "payments", "jwt": tr.Status.Token}, nil)
		return lerr == nil, fmt.Sprintf("Vault refuses the projected token, before the agent is involved: %v", lerr)
	})

	must(t, k8s.Create(ctx, &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: v1alpha1.VaultKVv2,
			Auth: v1alpha1.VaultAuth{Kubernetes: &v1alpha1.VaultKubernetesAuth{MountPath: mount, Role: "payments",
				ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: sa}}}}}}}))
	es := func(name string, policy v1alpha1.CreationPolicy) *v1alpha1.ExternalSecret {
		return &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "vault"},
				Target: v1alpha1.ExternalSecretTarget{CreationPolicy: policy},
				Data: []v1alpha1.ExternalSecretData{
					{SecretKey: "db-user", RemoteRef: v1alpha1.RemoteReference{Key: prefix + "/db", Property: "user"}},
					{SecretKey: "db-password", RemoteRef: v1alpha1.RemoteReference{Key: prefix + "/db", Property: "password"}}}}}
	}
	must(t, k8s.Create(ctx, es("payments-db", v1alpha1.CreationPolicyNone)))
	must(t, k8s.Create(ctx, es("owned", v1alpha1.CreationPolicyOwner)))

	kc, err := cluster.Kubeconfig()
	must(t, err)
	kcFile := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kcFile, kc, 0o600))
	dir := filepath.Join(t.TempDir(), "db")
	cfg := writeAgentConfig(t, fmt.Sprintf(`kind: AgentConfig
refreshInterval: 1s
serviceAccountTokenFile: %s
kubernetes:
  namespace: %s
  externalSecrets:
    - {name: payments-db, directory: %s, mode: "0400"}
`, tokenFile, ns, dir))
	startAgent(t, cfg, "--kubeconfig", kcFile)
	eventually(t, time.Minute, func() (bool, string) {
		return fileIs(filepath.Join(dir, "db-password"), "kube-pw-1") && fileIs(filepath.Join(dir, "db-user"), "payments"), "the first delivery"
	})
	must(t, vaultSrv.PutKV2("secret", prefix+"/db", map[string]any{"user": "payments", "password": "kube-pw-2"}))
	eventually(t, time.Minute, func() (bool, string) { return fileIs(filepath.Join(dir, "db-password"), "kube-pw-2"), "the rotation" })

	// An ExternalSecret whose Secret the controller writes is not
	// followed: --once fails naming the policy, and writes nothing.
	ownedDir := filepath.Join(t.TempDir(), "owned")
	out, err := exec.Command(watchwordBinary(t), "agent", "--once", "--kubeconfig", kcFile, "--config", writeAgentConfig(t, fmt.Sprintf(`kind: AgentConfig
serviceAccountTokenFile: %s
kubernetes:
  namespace: %s
  externalSecrets:
    - {name: owned, directory: %s}
`, tokenFile, ns, ownedDir))).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte(`creationPolicy "Owner"`)) {
		t.Errorf("following an ExternalSecret with creationPolicy Owner: %v\n%s", err, out)
	}
	if _, err := os.Stat(ownedDir); !os.IsNotExist(err) {
		t.Errorf("--once wrote into %s although it failed", ownedDir)
	}
}
